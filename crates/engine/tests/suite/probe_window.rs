//! A local server's window, asked once a minute and never in a request's way (docs/compaction.md,
//! *Small local models*): the cache in the home, the round in the background, the
//! window journaled so every command reports the same figure.

use codewhale_engine::offline::{self, ReportParams};
use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_engine::{ApprovalMode, Resume};
use serde_json::json;

use super::common::{session_file, Harness, Running};

fn llamacpp(h: &Harness, n_ctx: u64) {
    h.server.serve_get("/props", json!({"default_generation_settings": {"n_ctx": n_ctx}}));
}

fn report(h: &Harness, model: Option<&str>) -> codewhale_engine::protocol::ContextReport {
    let mut overrides = h.params(Resume::Last, ApprovalMode::Ask, false).overrides;
    overrides.model = model.map(str::to_owned);
    offline::context(&ReportParams {
        home: h.home.path(),
        cwd: h.ws.path(),
        resume: Resume::Last,
        overrides,
    })
    .unwrap()
}

/// The system entries of the session that journal a window: (window, source).
fn journaled_windows(h: &Harness) -> Vec<(u64, String)> {
    std::fs::read_to_string(session_file(h.home.path()))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == "system" && e["payload"]["context_window"].is_u64())
        .map(|e| {
            let p = &e["payload"];
            (p["context_window"].as_u64().unwrap(), p["window_source"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// A request large enough to wait for the round: the window is known before it is sized.
fn long_prompt() -> String {
    "please read the following notes carefully and keep them in mind ".repeat(400)
}

#[tokio::test]
async fn a_stated_window_is_journaled_and_every_command_reports_it() {
    let h = Harness::new().await;
    llamacpp(&h, 8_192);
    h.server.push(codewhale_provider::test_support::Reply::text("noted").with_usage(3_000, 2));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let run = engine.turn(&long_prompt()).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let windows: Vec<u64> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { window, .. } => Some(*window),
            _ => None,
        })
        .collect();
    assert_eq!(windows.last(), Some(&8_192), "the large first request waited: {windows:?}");
    engine.shutdown().await;
    assert_eq!(journaled_windows(&h), [(8_192, "probe:llamacpp-props".to_owned())]);
    let probes = h.server.probes();
    assert_eq!(probes.iter().filter(|p| *p == "GET /props").count(), 1, "{probes:?}");
    assert!(!probes.iter().any(|p| p.starts_with("POST")), "nothing POSTed to a non-Ollama server");
    for model in [None, Some("gpt-4.1")] {
        let r = report(&h, model);
        assert_eq!((r.context_window, r.window_source.as_str()), (8_192, "probe:llamacpp-props"));
    }
    let other = report(&h, Some("gpt-4o"));
    assert_ne!(other.context_window, 8_192, "another model ends the stated window");
}

#[tokio::test]
async fn within_a_minute_no_process_asks_again_and_the_answer_is_reused() {
    let h = Harness::new().await;
    llamacpp(&h, 16_384);
    h.server
        .respond_with(|_| codewhale_provider::test_support::Reply::text("ok").with_usage(500, 1));
    let mut first = h.spawn(ApprovalMode::Ask);
    first.turn(&long_prompt()).await;
    first.shutdown().await;
    let asked = h.server.probes().len();
    assert!(asked >= 3, "one round: {:?}", h.server.probes());
    for _ in 0..3 {
        let mut next: Running = h.spawn_with(Resume::New, ApprovalMode::Ask, false);
        let run = next.turn("hello").await;
        assert_eq!(run.status, TurnStatus::Completed);
        let window = run.events.iter().find_map(|e| match e {
            Event::Usage { window, .. } => Some(*window),
            _ => None,
        });
        assert_eq!(window, Some(16_384), "the cached answer is used at once");
        next.shutdown().await;
    }
    assert_eq!(h.server.probes().len(), asked, "no request of a second round");
    let cache = std::fs::read_to_string(h.home.path().join("probe-cache.json")).unwrap();
    assert!(cache.contains("\"window\":16384"), "{cache}");
}

#[tokio::test]
async fn a_configured_window_or_a_hosted_api_is_never_probed() {
    let h = Harness::new().await;
    llamacpp(&h, 8_192);
    h.server.respond_with(|_| codewhale_provider::test_support::Reply::text("ok"));
    let mut p = h.params(Resume::New, ApprovalMode::Ask, false);
    p.overrides.context_window = Some(50_000);
    let mut engine: Running = codewhale_engine::Engine::spawn(p).unwrap().into();
    engine.turn(&long_prompt()).await;
    engine.shutdown().await;
    h.config("[provider]\nhosted = true\n");
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn(&long_prompt()).await;
    engine.shutdown().await;
    assert_eq!(h.server.probes(), Vec::<String>::new());
}

#[tokio::test]
async fn a_server_that_never_answers_the_probe_holds_no_request() {
    let h = Harness::new().await;
    h.server.stall_probes();
    h.server.respond_with(|_| codewhale_provider::test_support::Reply::text("ok"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    // The first request, large with no window known, is sent once its bounded wait is over;
    // the next is sent at once.
    for prompt in [long_prompt(), "hello".to_owned()] {
        let run = engine.turn(&prompt).await;
        assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    }
    engine.shutdown().await;
    assert_eq!(h.server.requests().len(), 2);
    assert!(!h.server.probes().is_empty(), "the round went out and hangs");
    assert!(journaled_windows(&h).is_empty());
}

/// Ollama is known by `/api/version`; a model it has not loaded yet states the `num_ctx` of its
/// Modelfile in `/api/show` (asked of Ollama only), and the server is found on any port.
#[tokio::test]
async fn ollama_on_any_port_states_the_window_of_a_model_not_loaded_yet() {
    let h = Harness::new().await;
    h.server.serve_get("/api/version", json!({"version": "0.12.0"}));
    h.server.serve_get("/api/ps", json!({"models": []}));
    h.server.serve_post("/api/show", json!({"parameters": "num_ctx                        6144"}));
    h.server.respond_with(|_| codewhale_provider::test_support::Reply::text("ok"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn(&long_prompt()).await;
    engine.shutdown().await;
    assert_eq!(journaled_windows(&h), [(6_144, "probe:ollama-show".to_owned())]);
    let probes = h.server.probes();
    assert!(probes.contains(&"POST /api/show".to_owned()), "{probes:?}");
}
