//! The client against real MCP servers: the reference server `server-everything` (npm, stdio)
//! and a Python `mcp` SDK server (stdio and streamable HTTP). `scripts/mcp-test-servers.sh`
//! installs them; a test whose server is missing reports the skip (`skip_test`: a failure
//! under `CI=true`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codewhale_mcp::{ServerConfig, ServerEvent, Servers, Status, Transport};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use codewhale_mcp::test_support::{everything, python, test_server, typescript_server};

fn stdio(name: &str, argv: &[String]) -> ServerConfig {
    ServerConfig::new(
        name,
        Transport::Stdio {
            command: argv[0].clone(),
            args: argv[1..].to_vec(),
            env: vec![("CODEWHALE_TEST_VAR".into(), "hello".into())],
            env_vars: Vec::new(),
            cwd: None,
        },
    )
}

fn python_stdio(name: &str, python: &str) -> ServerConfig {
    stdio(name, &[python.to_owned(), test_server(), "stdio".into()])
}

struct Started {
    servers: Servers,
    events: Arc<Mutex<Vec<ServerEvent>>>,
    _cache: tempfile::TempDir,
}

fn start(configs: Vec<ServerConfig>) -> Started {
    let cache = tempfile::tempdir().unwrap();
    start_with_cache(configs, cache)
}

fn start_with_cache(configs: Vec<ServerConfig>, cache: tempfile::TempDir) -> Started {
    let servers = Servers::new(
        configs,
        std::env::temp_dir(),
        Some(cache.path().to_path_buf()),
        Arc::new(|name: &str| std::env::var(name).ok()),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    servers.start(Arc::new(move |e| sink.lock().unwrap().push(e)));
    Started { servers, events, _cache: cache }
}

fn status(servers: &Servers, name: &str) -> Status {
    servers.reports().into_iter().find(|r| r.name == name).unwrap().status
}

#[tokio::test]
async fn the_reference_server_lists_its_tools_and_answers_calls() {
    let Some(argv) = everything() else { return };
    let s = start(vec![stdio("everything", &argv)]);
    let offered = s.servers.offered().await;
    let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    assert!(offered.iter().all(|t| t.input_schema["type"] == "object"));
    assert_eq!(status(&s.servers, "everything"), Status::Ready);
    let cancel = CancellationToken::new();
    let sum = s.servers.call("mcp__everything__get-sum", &json!({"a": 2, "b": 3}), &cancel).await;
    assert_eq!((sum.text.as_str(), sum.is_error), ("The sum of 2 and 3 is 5.", false));
    let image = s.servers.call("mcp__everything__get-tiny-image", &json!({}), &cancel).await;
    assert!(image.text.contains("[image: image/png"), "{}", image.text);
    // The server's environment is the passed-through basics plus its own table's variables.
    let env = s.servers.call("mcp__everything__get-env", &json!({}), &cancel).await;
    assert!(env.text.contains("CODEWHALE_TEST_VAR"), "{}", env.text);
    assert!(!env.text.contains("OPENAI_API_KEY"), "keys stay with Codewhale");
    let unknown = s.servers.call("mcp__everything__nope", &json!({}), &cancel).await;
    assert!(unknown.is_error && unknown.text.contains("not available"), "{}", unknown.text);
    s.servers.shutdown().await;
}

#[tokio::test]
async fn tool_errors_are_error_results_and_a_crash_mid_call_is_reported_once() {
    let Some(python) = python() else { return };
    let s = start(vec![python_stdio("py", &python)]);
    s.servers.offered().await;
    let cancel = CancellationToken::new();
    let failed = s.servers.call("mcp__py__fail", &json!({"reason": "because"}), &cancel).await;
    assert!(failed.is_error && failed.text.contains("failed on purpose: because"), "{failed:?}");
    let echo = s.servers.call("mcp__py__echo", &json!({"message": "hi"}), &cancel).await;
    assert_eq!((echo.text.as_str(), echo.is_error), ("echo: hi", false));
    let crashed = s.servers.call("mcp__py__crash", &json!({}), &cancel).await;
    assert!(crashed.is_error, "{crashed:?}");
    // The server is gone: later calls say so, and the user heard about it once.
    for _ in 0..50 {
        if matches!(status(&s.servers, "py"), Status::Failed(_)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = s.servers.call("mcp__py__echo", &json!({"message": "hi"}), &cancel).await;
    assert!(after.is_error && after.text.contains("not available"), "{after:?}");
    let events = s.events.lock().unwrap().clone();
    let stops: Vec<_> =
        events.iter().filter(|e| matches!(e, ServerEvent::Stopped { .. })).collect();
    assert_eq!(stops.len(), 1, "{events:?}");
    s.servers.shutdown().await;
}

/// Whether `pid` still runs (a zombie waiting for its reaper does not count).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// A server that exits on its own left the rest of its process group running (a `sleep 300`
/// still alive after the session): the group was signalled only while its leader lived. Now
/// it is ended when the server stops.
#[tokio::test]
async fn a_server_that_exits_takes_its_children_with_it() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let script = format!(
        "sleep 300 & echo $! > '{}'; exec '{python}' '{}' stdio",
        pid_file.display(),
        test_server()
    );
    let s = start(vec![stdio("py", &["sh".into(), "-c".into(), script])]);
    s.servers.offered().await;
    let child: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(alive(child), "the child runs while its server does");
    let cancel = CancellationToken::new();
    let crashed = s.servers.call("mcp__py__crash", &json!({}), &cancel).await;
    assert!(crashed.is_error, "{crashed:?}");
    for _ in 0..100 {
        if !alive(child) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(child), "sleep {child} outlived the server that started it");
    s.servers.shutdown().await;
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_stays_usable() {
    let Some(python) = python() else { return };
    let mut config = python_stdio("py", &python);
    config.tool_timeout = Duration::from_millis(500);
    let s = start(vec![config]);
    let offered = s.servers.offered().await;
    // A request rebuilds its tool list only when a server's offered list changed.
    let (generation, again) = s.servers.offered_since(u64::MAX).await.unwrap();
    assert_eq!(again, offered);
    assert!(s.servers.offered_since(generation).await.is_none());
    let cancel = CancellationToken::new();
    let slow = s.servers.call("mcp__py__slow", &json!({"seconds": 5}), &cancel).await;
    assert!(slow.is_error && slow.text.contains("did not answer within 0.5 s"), "{slow:?}");
    let add = s.servers.call("mcp__py__add", &json!({"a": 1, "b": 2}), &cancel).await;
    assert_eq!(add.text, "3");
    // An interruption ends a call at once.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let interrupted = s.servers.call("mcp__py__add", &json!({"a": 1, "b": 2}), &cancel).await;
    assert!(interrupted.is_error);
    s.servers.shutdown().await;
}

#[tokio::test]
async fn a_slow_start_is_waited_for_once_and_then_served_from_the_cache() {
    let Some(python) = python() else { return };
    // The delay is an environment variable, which is not part of what identifies the server
    // for its cache.
    let slow = |delay: &str| {
        let command = format!("sleep $DELAY; exec '{python}' '{}' stdio", test_server());
        let mut config = stdio("slow", &["sh".into(), "-c".into(), command]);
        if let Transport::Stdio { env, .. } = &mut config.transport {
            env.push(("DELAY".into(), delay.into()));
        }
        config
    };
    let cache = tempfile::tempdir().unwrap();
    let cache_path = cache.path().to_path_buf();
    // No cached list: the first request waits for the server's listing.
    let s = start_with_cache(vec![slow("0.5")], cache);
    let offered = s.servers.offered().await;
    assert!(offered.iter().any(|t| t.name == "mcp__slow__add"), "{offered:?}");
    s.servers.shutdown().await;
    // The next session offers the cached list at once while the server is still starting.
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&cache_path).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
    }
    let s = start_with_cache(vec![slow("3")], copy);
    let offered = s.servers.offered().await;
    assert!(offered.iter().any(|t| t.name == "mcp__slow__add"));
    assert_eq!(status(&s.servers, "slow"), Status::Starting);
    assert!(s.servers.reports()[0].cached);
    // A call waits for the server to finish starting.
    let add =
        s.servers.call("mcp__slow__add", &json!({"a": 2, "b": 2}), &CancellationToken::new()).await;
    assert_eq!(add.text, "4");
    s.servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_or_cannot_start_fails_alone() {
    let mut silent = stdio("silent", &["sh".into(), "-c".into(), "cat > /dev/null".into()]);
    silent.startup_timeout = Duration::from_millis(700);
    let missing = stdio("missing", &["/nonexistent/mcp-server".into()]);
    let mut off = stdio("off", &["true".into()]);
    off.enabled = false;
    let s = start(vec![silent, missing, off]);
    let offered = s.servers.offered().await;
    assert!(offered.is_empty());
    let reports = s.servers.reports();
    let reason = |name: &str| match &reports.iter().find(|r| r.name == name).unwrap().status {
        Status::Failed(reason) => reason.clone(),
        other => format!("{other:?}"),
    };
    assert!(
        reason("silent").contains("did not finish starting within 0.7 s"),
        "{}",
        reason("silent")
    );
    assert!(
        reason("missing").contains("cannot start `/nonexistent/mcp-server`"),
        "{}",
        reason("missing")
    );
    assert_eq!(status(&s.servers, "off"), Status::Disabled);
    let events = s.events.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:?}");
    s.servers.shutdown().await;
}

#[tokio::test]
async fn a_streamable_http_server_is_reached_with_its_token() {
    let Some(python) = python() else { return };
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let child = std::process::Command::new(&python)
        .args([test_server(), "http".into(), port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Ends the server however the test ends.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = Reaped(child);
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let http = |token_var: &str| {
        ServerConfig::new(
            "web",
            Transport::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                bearer_token_env_var: Some(token_var.into()),
                headers: vec![("x-tenant".into(), "acme".into())],
                env_headers: Vec::new(),
            },
        )
    };
    let s = start(vec![http("HOME")]);
    let offered = s.servers.offered().await;
    assert!(offered.iter().any(|t| t.name == "mcp__web__add"), "{offered:?}");
    let add =
        s.servers.call("mcp__web__add", &json!({"a": 1, "b": 2}), &CancellationToken::new()).await;
    assert_eq!((add.text.as_str(), add.is_error), ("3", false));
    s.servers.shutdown().await;
    let s = start(vec![http("CODEWHALE_SURELY_UNSET_VARIABLE")]);
    s.servers.settle().await;
    match status(&s.servers, "web") {
        Status::Failed(reason) => {
            assert!(reason.contains("CODEWHALE_SURELY_UNSET_VARIABLE"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

/// A result over the 16 MiB message limit used to be dropped by the transport while the call
/// waited out its whole timeout. Now the call fails at once with a result that says why, and
/// the server answers the next call.
#[tokio::test]
async fn a_result_over_the_limit_fails_at_once_and_the_server_stays_usable() {
    let Some(python) = python() else { return };
    let mut config = python_stdio("py", &python);
    // Long enough that waiting it out could not look like the error below.
    config.tool_timeout = Duration::from_secs(300);
    let s = start(vec![config]);
    s.servers.offered().await;
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let big = s.servers.call("mcp__py__big", &json!({"mebibytes": 17}), &cancel).await;
    eprintln!("the 17 MiB result failed after {:?}", started.elapsed());
    assert!(big.is_error, "{}", &big.text[..big.text.len().min(200)]);
    assert!(
        big.text.contains("returned a result larger than 16 MiB")
            && big.text.contains("ask the tool for less"),
        "{}",
        &big.text[..big.text.len().min(200)]
    );
    // Under the limit still arrives whole (the SDK sends the text twice: as content and as
    // structured content, so this message is about 14 MiB).
    let under = s.servers.call("mcp__py__big", &json!({"mebibytes": 7}), &cancel).await;
    assert!(!under.is_error, "{}", &under.text[..under.text.len().min(200)]);
    assert_eq!(under.text.len(), 7 * 1024 * 1024);
    let echo = s.servers.call("mcp__py__echo", &json!({"message": "still here"}), &cancel).await;
    assert_eq!((echo.text.as_str(), echo.is_error), ("echo: still here", false));
    assert_eq!(status(&s.servers, "py"), Status::Ready);
    s.servers.shutdown().await;
}

/// The same with a server whose SDK writes the id after the result: the call is answered when
/// the oversized line ends, still long before its timeout.
#[tokio::test]
async fn an_oversized_result_whose_id_comes_last_fails_too() {
    let Some((argv, node_path)) = typescript_server() else { return };
    let mut config = stdio("ts", &argv);
    if let Transport::Stdio { env, .. } = &mut config.transport {
        env.push(("NODE_PATH".into(), node_path));
    }
    config.tool_timeout = Duration::from_secs(300);
    let s = start(vec![config]);
    s.servers.offered().await;
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let big = s.servers.call("mcp__ts__big", &json!({"mebibytes": 17}), &cancel).await;
    eprintln!("the 17 MiB result failed after {:?}", started.elapsed());
    assert!(
        big.is_error && big.text.contains("larger than 16 MiB"),
        "{}",
        &big.text[..big.text.len().min(200)]
    );
    let under = s.servers.call("mcp__ts__big", &json!({"mebibytes": 15}), &cancel).await;
    assert_eq!((under.text.len(), under.is_error), (15 * 1024 * 1024, false));
    let echo = s.servers.call("mcp__ts__echo", &json!({"message": "still here"}), &cancel).await;
    assert_eq!(echo.text, "echo: still here");
    s.servers.shutdown().await;
}
