//! `codewhale eval` end to end against the mock provider: every built-in scenario is played,
//! compacted three times by a worst-case summarizer (one bland sentence, `None` everywhere else),
//! scored on the floor, and its probes asked on forks. The floors of docs/compaction.md, *Measuring
//! what survives: `codewhale eval`* hold through what Codewhale computes itself (retained user
//! texts, the plan) and `recall`.

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::eval::{self, EvalParams};
use codewhale_provider::test_support::{Reply, TEST_API_KEY};
use codewhale_provider::RetryPolicy;
use serde_json::json;

use super::common::Harness;
use super::compaction::is_summary_request;
use super::plan::{ends_with_result, BLAND};

/// Summaries are bland; a probe is answered by calling `recall` with the question and then
/// repeating what it returned, so an answer holds the key exactly when recall found it.
fn mock_model(h: &Harness) {
    h.server.respond_with(|r| {
        if is_summary_request(&r.body) {
            return Reply::text(BLAND);
        }
        let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        if ends_with_result(r) {
            return Reply::text(last["content"].as_str().unwrap_or_default().to_owned());
        }
        let question = last["content"].as_str().unwrap_or_default().to_owned();
        Reply::tool_call("probe-recall", "recall", json!({"query": question}))
    });
}

fn params(h: &Harness, floor_only: bool) -> EvalParams {
    EvalParams {
        home: h.home.path().to_path_buf(),
        overrides: Overrides {
            provider: Some("openai".into()),
            model: Some("gpt-4.1".into()),
            base_url: Some(h.server.openai_base_url()),
            ..Overrides::default()
        },
        env: Env { openai_api_key: Some(TEST_API_KEY.into()), ..Env::default() },
        scenarios: Vec::new(),
        passes: 3,
        floor_only,
        retry: Some(RetryPolicy::fast()),
    }
}

/// The floors of docs/compaction.md, *Measuring what survives: `codewhale eval`*: every
/// `constraint` and `plan` key in the request, and at least 90 % of the `artifact` and `recall`
/// keys in what `recall` returns.
fn assert_floors_hold(report: &eval::EvalReport) {
    for name in ["constraint", "plan"] {
        let t = report.categories[name].in_view;
        assert_eq!(t.hits, t.of, "{name} in_view: {t:?}\n{}", report.table());
    }
    for name in ["artifact", "recall"] {
        let t = report.categories[name].via_recall;
        assert!(
            t.of > 0 && t.hits * 10 >= t.of * 9,
            "{name} via_recall: {t:?}\n{}",
            report.table()
        );
    }
}

#[tokio::test]
async fn every_scenario_runs_and_the_floors_hold_with_a_worst_case_summarizer() {
    let h = Harness::new().await;
    mock_model(&h);
    let lines = std::sync::Mutex::new(Vec::<String>::new());
    let progress = |line: &str| lines.lock().unwrap().push(line.to_owned());
    let report = eval::run(&params(&h, false), &progress).await.unwrap();
    println!("{}", report.table());
    for s in &report.scenarios {
        for p in &s.probes {
            let recalled = p.via_recall.as_ref().is_none_or(|v| v.last() == Some(&true));
            if p.in_view.last() != Some(&true) || !recalled {
                println!(
                    "{}: {:?} {:?} in_view {:?} via_recall {:?}",
                    s.name, p.category, p.key, p.in_view, p.via_recall
                );
            }
        }
        println!("{}: {:?}", s.name, s.passes.iter().map(|p| &p.outcome).collect::<Vec<_>>());
    }
    assert_eq!(report.scenarios.len(), 8);
    for s in &report.scenarios {
        let outcomes: Vec<&str> = s.passes.iter().map(|p| p.outcome.as_str()).collect();
        assert_eq!(outcomes, ["compacted"; 3], "{}: {outcomes:?}", s.name);
        assert!(s.passes[1].tokens_after < s.passes[2].tokens_before, "{}", s.name);
        assert!(s.passes.iter().all(|p| p.note.starts_with("Codewhale handoff note")));
    }
    assert_floors_hold(&report);
    let cat = |name: &str| report.categories[name];
    // The fact past the retained-user budget fell out of the view, and recall still finds it.
    let over = report.scenarios.iter().find(|s| s.name == "over-retained-budget").unwrap();
    let utc = over.probes.iter().find(|p| p.key.contains("UTC")).unwrap();
    assert_eq!(
        (utc.in_view.last(), utc.via_recall.as_ref().and_then(|v| v.last())),
        (Some(&false), Some(&true))
    );
    assert!(report.scenarios.iter().flat_map(|s| &s.probes).all(|p| p.answered.is_some()));
    // How much of each summary request is the live request's prefix (system prompt, tools and
    // the view in order), by tokens: what a provider can answer from its prompt cache.
    let count = |v: &serde_json::Value| u64::from(codewhale_engine::tokens::count(&v.to_string()));
    let (mut shared, mut total) = (0u64, 0u64);
    for r in h.server.requests().iter().filter(|r| is_summary_request(&r.body)) {
        let messages = r.body["messages"].as_array().unwrap();
        let (prefix, instruction) = messages.split_at(messages.len() - 1);
        let whole = count(&r.body);
        total += whole;
        shared += whole - count(&serde_json::Value::Array(instruction.to_vec()));
        assert!(!prefix.is_empty());
    }
    println!("summary requests: {shared} of {total} tokens are the shared prefix");
    assert!(shared * 100 >= total * 90, "{shared} of {total}");
    assert!(cat("artifact").answered.hits > 0, "answers that recall found hold the key");
    assert_eq!(report.per_pass.len(), 3);
    let progress = lines.into_inner().unwrap();
    assert!(progress.iter().any(|l| l.starts_with("[8/8] ")), "{progress:?}");
    let json = serde_json::to_value(&report).unwrap();
    for key in ["scenarios", "categories", "per_pass", "floor_only", "tokens_in", "elapsed_ms"] {
        assert!(json.get(key).is_some(), "{key}");
    }
}

#[tokio::test]
async fn floor_only_asks_nothing_but_the_summaries() {
    let h = Harness::new().await;
    mock_model(&h);
    let mut p = params(&h, true);
    p.scenarios = vec!["two-step-task".into()];
    let report = eval::run(&p, &|_| {}).await.unwrap();
    assert_eq!(report.scenarios.len(), 1);
    assert!(report.scenarios[0].probes.iter().all(|p| p.answered.is_none()));
    let requests = h.server.requests();
    assert!(requests.iter().all(|r| is_summary_request(&r.body)), "only summary requests");
    assert_eq!(requests.len(), 3);
    let err = eval::run(&EvalParams { scenarios: vec!["nope".into()], ..p }, &|_| {}).await;
    assert!(err.unwrap_err().to_string().contains("no built-in scenario named \"nope\""));
}

/// The llama.cpp run of `scripts/e2e-local-llm.sh eval` without the model: a 4096-token window
/// and a summarizer whose every answer is unusable, so no pass writes a note and every session
/// fails open. The floor is scored on the trimmed request each session would send, and it holds
/// through what Codewhale computes itself: the user's retained texts, the restated plan, and
/// `recall` over what the trim left out.
#[tokio::test]
async fn a_session_that_fails_open_still_holds_the_floor() {
    let h = Harness::new().await;
    h.server.respond_with(|_| Reply::text("No summary available."));
    let mut p = params(&h, true);
    p.overrides.context_window = Some(4096);
    let report = eval::run(&p, &|_| {}).await.unwrap();
    println!("{}", report.table());
    for s in &report.scenarios {
        for p in &s.probes {
            println!(
                "{}: {:?} {:?} in_view {:?} via_recall {:?}",
                s.name, p.category, p.key, p.in_view, p.via_recall
            );
        }
        println!("{}: {:?}", s.name, s.passes.iter().map(|p| &p.outcome).collect::<Vec<_>>());
        assert!(
            s.passes.iter().all(|p| p.outcome != "compacted"),
            "{}: no note is written",
            s.name
        );
    }
    assert_floors_hold(&report);
}
