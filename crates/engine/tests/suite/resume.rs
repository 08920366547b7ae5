//! Resuming: the same session continues, a crash-left call is answered, counts survive.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::config::{Config, ResolvedProvider};
use codewhale_engine::protocol::TurnStatus;
use codewhale_engine::session::{Resume, Session, SessionParams, INTERRUPTED_RESULT};
use codewhale_journal::{
    AssistantPayload, Block, Entry, HeaderPayload, JournalFile, Payload, UserPayload,
};
use codewhale_provider::test_support::Reply;
use codewhale_provider::ProviderKind;
use serde_json::json;

use super::common::{kinds, reload_checked, session_file, spine, Harness};

#[tokio::test]
async fn resume_last_continues_the_same_session() {
    let h = Harness::new().await;
    h.server.push(Reply::text("first answer"));
    h.server.push(Reply::text("second answer"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("first question").await;
    let id = engine.handle.session_id().to_owned();
    engine.shutdown().await;

    let mut engine = h.spawn_with(Resume::Last, ApprovalMode::Ask, false);
    assert_eq!(engine.handle.session_id(), id);
    let run = engine.turn("second question").await;
    assert_eq!(run.text, "second answer");
    engine.shutdown().await;

    let second = &h.server.requests()[1].body["messages"];
    let contents: Vec<&str> =
        second.as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(contents.contains(&"first question") && contents.contains(&"first answer"));
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant", "user", "assistant"]);
}

#[tokio::test]
async fn resume_by_id_prefix_and_unknown_ids() {
    let h = Harness::new().await;
    h.server.push(Reply::text("a"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("q").await;
    let id = engine.handle.session_id().to_owned();
    engine.shutdown().await;
    let engine = h.spawn_with(Resume::Id(id[..20].to_owned()), ApprovalMode::Ask, false);
    assert_eq!(engine.handle.session_id(), id);
    engine.shutdown().await;
    let err = codewhale_engine::Engine::spawn(h.params(
        Resume::Id("nope".into()),
        ApprovalMode::Ask,
        false,
    ))
    .unwrap_err();
    assert!(err.to_string().starts_with("no session nope"), "{err}");
}

#[tokio::test]
async fn a_crash_left_tool_call_is_answered_before_the_next_message() {
    let h = Harness::new().await;
    let ws = h.workspace();
    let header = HeaderPayload::new("crashed-session", ws.display().to_string());
    let mut file = JournalFile::create_session(&h.home.path().join("sessions"), header).unwrap();
    let head = file.journal().head_id().clone();
    let user = Entry::new(Some(head), UserPayload::text("run it"));
    let call = Entry::new(
        Some(user.id.clone()),
        AssistantPayload::new(vec![Block::tool_use("lost", "shell", json!({"command": "ls"}))]),
    );
    file.append(user).unwrap();
    file.append(call).unwrap();
    file.close().unwrap();

    h.server.push(Reply::text("recovered"));
    let mut engine = h.spawn_with(Resume::Last, ApprovalMode::Ask, false);
    assert_eq!(engine.handle.session_id(), "crashed-session");
    let run = engine.turn("again").await;
    assert_eq!(run.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(h.tool_results_in_request(0), [("lost".to_owned(), INTERRUPTED_RESULT.to_owned())]);
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant", "tool_result", "user", "assistant"]);
}

#[tokio::test]
async fn token_counts_are_stored_and_used_after_reload_without_recounting() {
    let h = Harness::new().await;
    h.write("f.txt", "some content\n");
    h.server.push(Reply::tool_call("c", "read_file", json!({"path": "f.txt"})).with_usage(500, 9));
    h.server.push(Reply::text("ok").with_usage(600, 2));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("read f").await;
    engine.shutdown().await;
    let path = session_file(h.home.path());
    let journal = reload_checked(&path);
    assert!(spine(&journal).iter().all(|e| e.tokens.is_some()), "every entry carries its count");
    let Payload::Assistant(a) = &spine(&journal)[1].payload else { panic!() };
    assert_eq!(a.usage.as_ref().unwrap().input_tokens, 500);
    assert_eq!(a.reads.as_ref().unwrap().head, spine(&journal)[0].id);

    // Replace one stored count by a marker value: a reopened session must use it as is.
    let text = std::fs::read_to_string(&path).unwrap();
    let user_tokens = spine(&journal)[0].tokens.unwrap();
    let needle = format!("\"tokens\":{user_tokens}}}");
    let patched = text.replacen(&needle, "\"tokens\":77777}", 1);
    assert_ne!(patched, text);
    std::fs::write(&path, patched).unwrap();
    let stored: u64 = spine(&journal).iter().map(|e| u64::from(e.tokens.unwrap())).sum::<u64>()
        - u64::from(user_tokens)
        + 77_777;

    let session = Session::open(session_params(&h)).unwrap();
    let budget = session.budget();
    assert_eq!(budget.raw_estimate() - budget.system_tokens(), stored);
}

#[tokio::test]
async fn a_second_writer_is_refused_while_the_session_is_open() {
    let h = Harness::new().await;
    h.server.push(Reply::text("a"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("q").await;
    let err = Session::open(session_params(&h)).unwrap_err().to_string();
    assert!(err.contains("open in another codewhale"), "{err}");
    engine.shutdown().await;
}

fn session_params(h: &Harness) -> SessionParams {
    SessionParams {
        home: h.home.path().to_path_buf(),
        workspace: h.ws.path().to_path_buf(),
        config: Config::default(),
        provider: ResolvedProvider {
            kind: ProviderKind::OpenAi,
            model: "gpt-4.1".into(),
            base_url: h.server.openai_base_url(),
            api_key: None,
            server: None,
        },
        resume: Resume::Last,
        retry: None,
        front_end: codewhale_engine::FrontEnd::Cli,
        home_hint: None,
        sandbox_helper: None,
        model_explicit: false,
    }
}

#[tokio::test]
async fn entries_written_without_counts_are_counted_in_memory_on_open() {
    let h = Harness::new().await;
    let ws = h.workspace();
    let header = HeaderPayload::new("uncounted", ws.display().to_string());
    let mut file = JournalFile::create_session(&h.home.path().join("sessions"), header).unwrap();
    let head = file.journal().head_id().clone();
    let user = Entry::new(Some(head), UserPayload::text("hello there"));
    let answer = Entry::new(
        Some(user.id.clone()),
        AssistantPayload::new(vec![Block::text("general kenobi")]),
    );
    file.append(user).unwrap();
    file.append(answer).unwrap();
    file.close().unwrap();
    let session = Session::open(session_params(&h)).unwrap();
    let budget = session.budget();
    let expected = codewhale_engine::session::counts::exact("hello there\n")
        + codewhale_engine::session::counts::exact("general kenobi\n");
    assert_eq!(budget.raw_estimate() - budget.system_tokens(), u64::from(expected));
    let on_disk = std::fs::read_to_string(session.path()).unwrap();
    assert!(!on_disk.contains("\"tokens\""), "the journal is never rewritten");
}

#[tokio::test]
async fn counts_of_uncounted_entries_are_paid_once_and_kept_beside_the_journal() {
    use codewhale_engine::session::counts;
    let h = Harness::new().await;
    let ws = h.workspace();
    let header = HeaderPayload::new("uncounted-report", ws.display().to_string());
    let mut file = JournalFile::create_session(&h.home.path().join("sessions"), header).unwrap();
    let head = file.journal().head_id().clone();
    let user = Entry::new(Some(head), UserPayload::text("hello there"));
    let user_id = user.id.clone();
    file.append(user).unwrap();
    let path = file.path().to_path_buf();
    file.close().unwrap();
    let report = || {
        codewhale_engine::offline::context(&codewhale_engine::offline::ReportParams {
            home: h.home.path(),
            cwd: &ws,
            resume: Resume::Id("uncounted-report".into()),
            overrides: codewhale_engine::config::Overrides::default(),
        })
        .unwrap()
    };
    // The first report counts the entry and keeps the count beside the journal.
    let first = report();
    let exact = counts::exact("hello there\n");
    assert_eq!(first.view[0].tokens, u64::from(exact));
    assert_eq!(counts::load_sidecar(&path).get(&user_id), Some(&exact));
    // Later reports read it instead of counting again (a changed figure shows which is used).
    let mut kept = counts::load_sidecar(&path);
    kept.insert(user_id.clone(), 777);
    counts::store_sidecar(&path, &kept);
    assert_eq!(report().view[0].tokens, 777);
    // So does a live session opening the file.
    let session = Session::open(SessionParams {
        resume: Resume::Id("uncounted-report".into()),
        ..session_params(&h)
    })
    .unwrap();
    assert_eq!(session.budget().raw_estimate() - session.budget().system_tokens(), 777);
    let on_disk = std::fs::read_to_string(&path).unwrap();
    assert!(!on_disk.contains("\"tokens\""), "the journal is never rewritten");
}

#[tokio::test]
async fn resuming_from_another_directory_says_where_tools_now_work() {
    let h = Harness::new().await;
    h.server.push(Reply::text("a"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("q").await;
    let id = engine.handle.session_id().to_owned();
    engine.shutdown().await;
    let elsewhere = tempfile::tempdir().unwrap();
    let mut params = h.params(Resume::Id(id), ApprovalMode::Ask, false);
    params.workspace = elsewhere.path().to_path_buf();
    let (handle, mut events) = codewhale_engine::Engine::spawn(params).unwrap();
    let _configured = events.recv().await.unwrap();
    let history = events.recv().await.unwrap();
    assert!(matches!(history.event, codewhale_engine::protocol::Event::History { .. }));
    let notice = events.recv().await.unwrap();
    let codewhale_engine::protocol::Event::Notice { message, .. } = notice.event else {
        panic!("expected a notice, got {notice:?}");
    };
    assert!(
        message.contains("was started in")
            && message.contains(&h.workspace().display().to_string())
    );
    handle.submit(codewhale_engine::protocol::Op::Shutdown);
    while events.recv().await.is_some() {}
}

/// Resumes session `id` from `dir` with full approval; the model runs `pwd` and answers.
/// Returns the start-up notices, the `pwd` result the model read and the window of the usage
/// events.
async fn resume_and_pwd(
    h: &Harness,
    id: &str,
    dir: &std::path::Path,
) -> (Vec<String>, String, Vec<u64>) {
    use codewhale_engine::protocol::Event;
    h.server.push(Reply::tool_call("pwd", "shell", json!({"command": "pwd"})));
    h.server.push(Reply::text("there"));
    let mut params = h.params(Resume::Id(id.to_owned()), ApprovalMode::Full, false);
    params.workspace = dir.to_path_buf();
    let (handle, events) = codewhale_engine::Engine::spawn(params).unwrap();
    let mut engine = super::common::Running { handle, events };
    let run = engine.turn("where are you?").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let notices: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { level, message } => Some(format!("{level:?}: {message}")),
            _ => None,
        })
        .collect();
    let windows = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { window, .. } => Some(*window),
            _ => None,
        })
        .collect();
    let n = h.server.requests().len();
    let (_, pwd) = h.tool_results_in_request(n - 1).pop().unwrap();
    (notices, pwd, windows)
}

#[tokio::test]
async fn a_resumed_session_works_in_the_directory_it_was_started_in() {
    let h = Harness::new().await;
    h.write("AGENTS.md", "Rule from the session's own tree.\n");
    h.server.push(Reply::text("a"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("q").await;
    let id = engine.handle.session_id().to_owned();
    engine.shutdown().await;

    // The session's tree also holds the configuration it is resumed with.
    h.write(".codewhale/config.toml", "context_window = 123456\n");
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("AGENTS.md"), "Rule from another tree.\n").unwrap();
    let (notices, pwd, windows) = resume_and_pwd(&h, &id, elsewhere.path()).await;
    assert!(!windows.is_empty() && windows.iter().all(|w| *w == 123_456), "{windows:?}");
    let ws = h.workspace().display().to_string();
    assert!(pwd.starts_with(&format!("{ws}\n")), "tools run in the session's tree: {pwd}");
    // The instruction files read are named once, from the session's own tree.
    assert!(notices.contains(&"Info: project instructions read: AGENTS.md".to_owned()));
    let notices: Vec<&String> =
        notices.iter().filter(|n| !n.contains("project instructions read")).collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].starts_with("Info: ") && notices[0].contains(&ws), "{notices:?}");
    let system = h.server.requests()[1].body["messages"][0]["content"].to_string();
    assert!(system.contains("Rule from the session's own tree."), "{system}");
    assert!(!system.contains("Rule from another tree."));
}

#[tokio::test]
async fn a_resumed_session_whose_directory_is_gone_works_here_with_a_warning() {
    let h = Harness::new().await;
    let header = HeaderPayload::new("moved-away", "/no/such/codewhale/checkout");
    let file = JournalFile::create_session(&h.home.path().join("sessions"), header).unwrap();
    file.close().unwrap();
    let (notices, pwd, _) = resume_and_pwd(&h, "moved-away", h.ws.path()).await;
    let ws = h.workspace().display().to_string();
    assert!(pwd.starts_with(&format!("{ws}\n")), "{pwd}");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].starts_with("Warning: ") && notices[0].contains("no longer exists"));
}
