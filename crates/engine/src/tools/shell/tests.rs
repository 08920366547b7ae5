use super::*;
use crate::tools::output::MAX_OUTPUT_BYTES;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub(crate) fn in_dir<'a>(dir: &'a Path, groups: &'static ProcessGroups) -> RunEnv<'a> {
    RunEnv {
        workspace: dir,
        vars: &[],
        hidden: &[],
        groups,
        progress: &|_| {},
        sandbox: None,
        read_only: None,
    }
}

fn groups() -> &'static ProcessGroups {
    Box::leak(Box::default())
}

/// Whether a process whose command line contains `marker` is still running.
pub(crate) fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(marker))
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn combined_output_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let out =
        run(in_dir(dir.path(), groups()), "echo out; echo err >&2; exit 3", None, &cancel).await;
    assert!(out.text.contains("out\n") && out.text.contains("err\n"), "{}", out.text);
    assert!(out.text.ends_with("[exit code: 3]"));
    assert!(out.is_error);
    assert_eq!((out.exit_code, out.timed_out), (Some(3), false), "the code as data too");
    let ok = run(in_dir(dir.path(), groups()), "pwd", None, &cancel).await;
    assert!(!ok.is_error);
    assert_eq!(ok.exit_code, Some(0));
    assert!(ok.text.contains(dir.path().file_name().unwrap().to_str().unwrap()));
}

#[test]
fn provider_keys_are_hidden_from_commands() {
    let hidden = ["OPENROUTER_API_KEY".to_owned()];
    let env = RunEnv { hidden: &hidden, ..in_dir(Path::new("."), groups()) };
    let cmd = bash(&env, "env", false);
    let mut removed: Vec<_> = cmd
        .as_std()
        .get_envs()
        .filter(|(_, value)| value.is_none())
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    removed.sort();
    assert_eq!(
        removed,
        ["ANTHROPIC_API_KEY", "CODEWHALE_KEYS_FD", "OPENAI_API_KEY", "OPENROUTER_API_KEY"]
    );
}

/// A key named by `api_key_env` never reaches a command's environment.
#[tokio::test]
async fn a_configured_key_variable_is_not_in_a_commands_environment() {
    let dir = tempfile::tempdir().unwrap();
    let hidden = ["CODEWHALE_TEST_ROUTER_KEY".to_owned()];
    let mut env = RunEnv { hidden: &hidden, ..in_dir(dir.path(), groups()) };
    let vars = [("CODEWHALE_TEST_ROUTER_KEY".to_owned(), "sk-or-v1-secret".to_owned())];
    // Even when the configuration's own [shell] env would pass it on.
    env.vars = &vars;
    let out = run(env, "env", None, &CancellationToken::new()).await;
    assert!(!out.text.contains("CODEWHALE_TEST_ROUTER_KEY"), "{}", out.text);
}

#[tokio::test]
async fn timeouts_kill_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    // A deadline, not a measurement: a call that waited for the sleepers would take 30 s.
    let call =
        run(in_dir(dir.path(), groups()), "sleep 30 & sleep 30; echo never", Some(200), &cancel);
    let out = tokio::time::timeout(Duration::from_secs(20), call).await.expect("the call hung");
    assert!(out.text.contains("timed out after 200 ms"), "{}", out.text);
    assert!(!out.text.contains("never"));
    assert_eq!((out.exit_code, out.timed_out), (None, true));
}

#[tokio::test]
async fn huge_output_is_capped_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        in_dir(dir.path(), groups()),
        "yes line | head -c 1000000",
        None,
        &CancellationToken::new(),
    )
    .await;
    assert!(out.text.len() < MAX_OUTPUT_BYTES + 200);
    assert!(out.text.contains("bytes cut"));
    // Everything printed plus the "[exit code: 0]" line.
    assert_eq!(out.bytes, 1_000_000 + "[exit code: 0]".len() as u64);
    let small = run(in_dir(dir.path(), groups()), "echo hi", None, &CancellationToken::new()).await;
    assert_eq!(small.bytes, small.text.len() as u64, "{small:?}");
}

#[tokio::test]
async fn background_commands_are_listed_until_they_exit() {
    let dir = tempfile::tempdir().unwrap();
    let registry = BackgroundRegistry::new(dir.path().join("bg"));
    let out =
        spawn_background(in_dir(dir.path(), groups()), "sleep 30", &registry, 4096, None).await;
    assert!(out.text.starts_with("started in the background as bg-1"), "{}", out.text);
    let running = registry.running();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].command, "sleep 30");
    registry.shutdown();
    assert!(registry.running().is_empty());
}

#[tokio::test]
async fn listening_ports_of_background_commands_are_found() {
    if std::process::Command::new("python3").arg("--version").output().is_err() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = BackgroundRegistry::new(dir.path().join("bg"));
    let server = "python3 -c 'import socket,time\ns=socket.socket()\ns.bind((\"127.0.0.1\",0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\ntime.sleep(30)'";
    let out = spawn_background(in_dir(dir.path(), groups()), server, &registry, 4096, None).await;
    assert!(!out.is_error, "{}", out.text);
    let log = registry.running()[0].log.clone();
    let mut port = None;
    for _ in 0..100 {
        port = std::fs::read_to_string(&log).ok().and_then(|t| t.trim().parse::<u16>().ok());
        if port.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let port = port.expect("the server printed its port");
    assert_eq!(registry.running()[0].ports, vec![port]);
    registry.shutdown();
}

/// `sleep 600 &` keeps the output pipe open: the call still ends when the command does,
/// with its own exit code, and the sleeper is ended with it.
#[tokio::test]
async fn a_background_child_holding_the_pipe_neither_hangs_the_call_nor_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("sleep 600.{}", std::process::id());
    let cmd = format!("bash -c 'exec -a \"{marker}\" sleep 600' & echo started; exit 4");
    // A deadline below the call's own timeout (20 s): a call that waited for the pipe to close
    // would end only there, timed out.
    let cancel = CancellationToken::new();
    let call = run(in_dir(dir.path(), groups()), &cmd, Some(20_000), &cancel);
    let out = tokio::time::timeout(Duration::from_secs(15), call).await.expect("the call hung");
    assert!(out.text.contains("started") && out.text.contains("[exit code: 4]"), "{}", out.text);
    assert!(out.text.contains("left running were stopped"), "{}", out.text);
    assert!(!running(&marker), "the background child was ended");
}

/// With its output redirected, a long command's call still ends at its timeout, and the
/// process with it.
#[tokio::test]
async fn the_timeout_covers_a_process_whose_output_is_redirected() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("sleep 601.{}", std::process::id());
    let cmd = format!("bash -c 'exec -a \"{marker}\" sleep 601' > log.txt 2>&1");
    let cancel = CancellationToken::new();
    let call = run(in_dir(dir.path(), groups()), &cmd, Some(500), &cancel);
    let out = tokio::time::timeout(Duration::from_secs(20), call).await.expect("the call hung");
    assert!(out.text.contains("timed out after 500 ms"), "{}", out.text);
    assert!(!running(&marker));
}

/// Closing the session ends the groups of calls still running.
#[tokio::test]
async fn the_session_ends_groups_still_running() {
    let dir = tempfile::tempdir().unwrap();
    let groups = groups();
    let marker = format!("sleep 602.{}", std::process::id());
    let cmd = format!("exec -a \"{marker}\" sleep 602");
    let cancel = CancellationToken::new();
    let call = run(in_dir(dir.path(), groups), &cmd, Some(60_000), &cancel);
    tokio::pin!(call);
    let waited = tokio::time::timeout(Duration::from_millis(500), &mut call).await;
    assert!(waited.is_err(), "still running");
    assert!(running(&marker));
    groups.end_all();
    let out = tokio::time::timeout(Duration::from_secs(5), call).await.unwrap();
    assert!(out.is_error, "{}", out.text);
    assert!(!running(&marker));
}
