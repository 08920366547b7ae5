//! What users bring (docs/extending.md), through the engine and the mock server: custom slash
//! commands from the home and from a trusted workspace (an untrusted workspace's is refused
//! with why), on the model a command names; project instruction files down from the git top.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_provider::test_support::Reply;

use super::common::Harness;

fn home_command(h: &Harness, rel: &str, text: &str) {
    let path = h.home.path().join("commands").join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The user message the `n`-th request ends with.
fn last_user_text(h: &Harness, n: usize) -> String {
    let body = &h.server.requests()[n].body;
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn a_home_and_a_trusted_workspace_command_run_with_their_arguments() {
    let h = Harness::new().await;
    home_command(
        &h,
        "greet.md",
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1, from $ARGUMENTS.",
    );
    home_command(&h, "git/pr.md", "Open a pull request.");
    h.write(".codewhale/commands/fix-issue.md", "Fix issue #$1: $2");
    codewhale_engine::trust::decide(h.home.path(), &h.workspace(), true).unwrap();
    h.server.push(Reply::text("Hello Bob."));
    h.server.push(Reply::text("Fixing."));
    h.server.push(Reply::text("Opening."));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let opened = engine.until(|e| matches!(e, Event::SessionConfigured { .. })).await;
    let Some(Event::SessionConfigured { commands, .. }) = opened.last() else { unreachable!() };
    let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["fix-issue", "git:pr", "greet"]);
    assert_eq!(commands[2].description, "Greet someone");
    assert_eq!(commands[2].argument_hint, "<name>");
    assert!(commands.iter().all(|c| c.unavailable.is_none()));

    let id =
        engine.submit(Op::RunCommand { name: "greet".into(), args: "Bob \"the team\"".into() });
    assert_eq!(engine.finish(id).await.status, TurnStatus::Completed);
    assert_eq!(last_user_text(&h, 0), "Say hello to Bob, from Bob \"the team\".");
    let id = engine
        .submit(Op::RunCommand { name: "fix-issue".into(), args: "123 'login fails'".into() });
    assert_eq!(engine.finish(id).await.status, TurnStatus::Completed);
    assert_eq!(last_user_text(&h, 1), "Fix issue #123: login fails");
    let id = engine.submit(Op::RunCommand { name: "git:pr".into(), args: "draft".into() });
    assert_eq!(engine.finish(id).await.status, TurnStatus::Completed);
    assert_eq!(last_user_text(&h, 2), "Open a pull request.\n\ndraft");
    engine.shutdown().await;
}

#[tokio::test]
async fn an_untrusted_workspace_command_is_not_offered_and_says_why() {
    let h = Harness::new().await;
    h.write(".codewhale/commands/deploy.md", "Deploy to production.");
    let mut engine = h.spawn(ApprovalMode::Ask);
    let opened = engine.until(|e| matches!(e, Event::SessionConfigured { .. })).await;
    let Some(Event::SessionConfigured { commands, .. }) = opened.last() else { unreachable!() };
    assert!(commands[0].unavailable.as_deref().unwrap_or_default().contains("not trusted"));
    let id = engine.submit(Op::RunCommand { name: "deploy".into(), args: String::new() });
    let run = engine.finish(id).await;
    assert_eq!(run.status, TurnStatus::Failed);
    let said = run.events.iter().find_map(|e| match e {
        Event::Error { message, .. } => Some(message.clone()),
        _ => None,
    });
    assert!(said.unwrap_or_default().contains("not trusted"));
    assert!(h.server.requests().is_empty(), "nothing is sent");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_command_naming_a_model_runs_that_one_turn_on_it() {
    let h = Harness::new().await;
    home_command(&h, "deep.md", "---\nmodel: gpt-4.1-mini\n---\nThink hard about $ARGUMENTS.");
    h.server.push(Reply::text("Thought."));
    h.server.push(Reply::text("Back."));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let id = engine.submit(Op::RunCommand { name: "deep".into(), args: "caching".into() });
    assert_eq!(engine.finish(id).await.status, TurnStatus::Completed);
    assert_eq!(engine.turn("and now?").await.status, TurnStatus::Completed);
    let requests = h.server.requests();
    assert_eq!(requests[0].body["model"], "gpt-4.1-mini");
    assert_eq!(last_user_text(&h, 0), "Think hard about caching.");
    assert_eq!(
        requests[1].body["model"], "gpt-4.1",
        "the next turn is back on the session's model"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn instructions_are_read_down_from_the_git_top_claude_md_only_without_agents_md() {
    let h = Harness::new().await;
    // The harness's workspace is the top of a work tree holding `app/`, where the session runs.
    std::fs::create_dir(h.ws.path().join(".git")).unwrap();
    h.write("AGENTS.md", "Top rule: use tabs.");
    h.write("CLAUDE.md", "Shadowed rule: never read.");
    h.write("app/CLAUDE.md", "App rule: run make check.");
    h.server.push(Reply::text("ok"));
    let mut params = h.params(codewhale_engine::session::Resume::New, ApprovalMode::Ask, false);
    params.workspace = h.ws.path().join("app");
    let mut engine: super::common::Running =
        codewhale_engine::Engine::spawn(params).unwrap().into();
    let opened = engine
        .until(|e| matches!(e, Event::Notice { message, .. } if message.starts_with("project instructions read")))
        .await;
    let Some(Event::Notice { message, .. }) = opened.last() else { unreachable!() };
    assert_eq!(message, "project instructions read: ../AGENTS.md, CLAUDE.md");
    assert_eq!(engine.turn("hi").await.status, TurnStatus::Completed);
    let system = h.server.requests()[0].body["messages"][0].to_string();
    assert!(system.contains("Top rule: use tabs."), "{system}");
    assert!(system.contains("App rule: run make check."), "{system}");
    assert!(!system.contains("Shadowed rule"), "{system}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_skill_is_named_in_the_request_read_without_asking_and_named_in_the_note() {
    use super::compaction::{compact, compactions, params, prose, SUMMARY, WINDOW};
    use serde_json::json;
    let h = Harness::new().await;
    h.hosted_api();
    let skill_md = h.home.path().join("skills/pdf/SKILL.md");
    std::fs::create_dir_all(skill_md.parent().unwrap()).unwrap();
    std::fs::write(
        &skill_md,
        "---\nname: pdf-forms\ndescription: Fill in PDF forms with pdftk\n---\nRun `pdftk in.pdf fill_form data.fdf output out.pdf`.",
    )
    .unwrap();
    // Ask mode with nobody to ask: a read outside the workspace would be refused; a skill's is not.
    let mut p = params(&h, "openai", WINDOW);
    p.overrides.approval = Some(ApprovalMode::Ask);
    let mut engine: super::common::Running = codewhale_engine::Engine::spawn(p).unwrap().into();
    let path = skill_md.display().to_string();
    h.server.push(
        Reply::tool_call("call_1", "read_file", json!({ "path": path })).with_usage(2_000, 10),
    );
    h.server.push(Reply::text(prose("answer 0", 300)).with_usage(2_500, 1_500));
    assert_eq!(engine.turn("fill the tax form").await.status, TurnStatus::Completed);
    let system = h.server.requests()[0].body["messages"][0].to_string();
    assert!(system.contains("`pdf-forms`: Fill in PDF forms with pdftk"), "{system}");
    assert!(system.contains(&path), "the path to read is given: {system}");
    assert!(!system.contains("pdftk in.pdf"), "the body is not in the prompt");
    let results = h.tool_results_in_request(1);
    assert!(results[0].1.contains("pdftk in.pdf fill_form"), "{results:?}");

    h.server.push(Reply::text(prose("answer 1", 300)).with_usage(3_000, 1_500));
    engine.turn("question 1").await;
    h.server.push(Reply::text(prose("answer 2", 300)).with_usage(3_500, 1_500));
    engine.turn("question 2").await;
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    let note = &compactions(&h)[0].note;
    assert!(
        note.contains(&format!("## Skills in use\n- `pdf-forms`: read `{path}` again")),
        "{note}"
    );
    engine.shutdown().await;
}
