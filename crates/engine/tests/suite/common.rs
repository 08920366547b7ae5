//! The harness: a mock provider, a home and a workspace in temp dirs, and helpers to run
//! turns through the engine handle and to reload journals from disk.

use std::path::{Path, PathBuf};
use std::time::Duration;

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, EventMsg, Op, SubmissionId, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineHandle, EngineParams, EventReceiver};
use codewhale_journal::{check_view, load_read_only, render, Entry, Journal, Payload};
use codewhale_provider::test_support::{MockServer, TEST_API_KEY};
use codewhale_provider::RetryPolicy;
use tempfile::TempDir;

pub struct Harness {
    pub server: MockServer,
    pub home: TempDir,
    pub ws: TempDir,
}

impl Harness {
    pub async fn new() -> Harness {
        // `CODEWHALE_TEST_LOG=info` (any filter) shows the engine's log while debugging a test.
        if let Ok(filter) = std::env::var("CODEWHALE_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
        // Exact counts in every test: build the encoder before the first append.
        codewhale_engine::tokens::count("warm");
        Harness {
            server: MockServer::start().await.unwrap(),
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    pub fn workspace(&self) -> PathBuf {
        std::fs::canonicalize(self.ws.path()).unwrap()
    }

    pub fn params(&self, resume: Resume, mode: ApprovalMode, interactive: bool) -> EngineParams {
        EngineParams {
            home: self.home.path().to_path_buf(),
            workspace: self.ws.path().to_path_buf(),
            overrides: Overrides {
                provider: Some("openai".into()),
                model: Some("gpt-4.1".into()),
                base_url: Some(self.server.openai_base_url()),
                approval: Some(mode),
                ..Overrides::default()
            },
            env: Env { openai_api_key: Some(TEST_API_KEY.into()), ..Env::default() },
            resume,
            interactive,
            retry: Some(RetryPolicy::fast()),
            front_end: codewhale_engine::FrontEnd::Cli,
            home_hint: None,
            sandbox_helper: None,
        }
    }

    /// An engine speaking the Anthropic wire format to the mock server.
    pub fn spawn_anthropic(&self, mode: ApprovalMode) -> Running {
        let mut params = self.params(Resume::New, mode, false);
        params.overrides.provider = Some("anthropic".into());
        params.overrides.model = Some("claude-sonnet-4-5".into());
        params.overrides.base_url = Some(self.server.anthropic_base_url());
        params.env = Env { anthropic_api_key: Some(TEST_API_KEY.into()), ..Env::default() };
        Running::new(Engine::spawn(params).unwrap())
    }

    pub fn spawn(&self, mode: ApprovalMode) -> Running {
        Running::new(Engine::spawn(self.params(Resume::New, mode, false)).unwrap())
    }

    pub fn spawn_with(&self, resume: Resume, mode: ApprovalMode, interactive: bool) -> Running {
        Running::new(Engine::spawn(self.params(resume, mode, interactive)).unwrap())
    }

    /// Writes the home's `config.toml`.
    pub fn config(&self, text: &str) {
        std::fs::write(self.home.path().join("config.toml"), text).unwrap();
    }

    /// The mock stands for a hosted API (`[provider] hosted = true`, added to the home's
    /// `config.toml`): for tests whose replies report fixed prompt sizes, as no server that cuts
    /// prompts silently would (docs/compaction.md, *Small local models*).
    pub fn hosted_api(&self) {
        let path = self.home.path().join("config.toml");
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str("\n[provider]\nhosted = true\n");
        std::fs::write(path, text).unwrap();
    }

    /// Leaving a branch writes no summary of it: for tests of HEAD moves that count requests
    /// and entries exactly.
    pub fn no_branch_summaries(&self) {
        self.config("[compaction]\nbranch_summaries = false\n");
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.ws.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws.path().join(rel)).unwrap()
    }

    /// The tool results the `n`-th request carried, as (tool_call_id, content) pairs.
    pub fn tool_results_in_request(&self, n: usize) -> Vec<(String, String)> {
        let body = &self.server.requests()[n].body;
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                (
                    m["tool_call_id"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

pub struct Running {
    pub handle: EngineHandle,
    pub events: EventReceiver,
}

/// What one turn produced.
#[derive(Debug)]
pub struct TurnRun {
    pub events: Vec<Event>,
    pub status: TurnStatus,
    pub text: String,
}

impl From<(EngineHandle, EventReceiver)> for Running {
    fn from(pair: (EngineHandle, EventReceiver)) -> Running {
        Running::new(pair)
    }
}

impl Running {
    fn new((handle, events): (EngineHandle, EventReceiver)) -> Running {
        Running { handle, events }
    }

    pub fn submit(&self, op: Op) -> SubmissionId {
        self.handle.submit(op)
    }

    /// The next event, failing the test after 20 s.
    pub async fn next(&mut self) -> EventMsg {
        tokio::time::timeout(Duration::from_secs(20), self.events.recv())
            .await
            .expect("no event within 20 s")
            .expect("the engine stopped")
    }

    /// Events until one matches `pred` (returned last).
    pub async fn until(&mut self, pred: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let msg = self.next().await;
            let done = pred(&msg.event);
            seen.push(msg.event);
            if done {
                return seen;
            }
        }
    }

    /// Waits for the end of the turn started by `id`.
    pub async fn finish(&mut self, id: SubmissionId) -> TurnRun {
        let mut events = Vec::new();
        loop {
            let msg = self.next().await;
            if msg.id == id {
                if let Event::TurnFinished { status, text, .. } = &msg.event {
                    let (status, text) = (*status, text.clone());
                    events.push(msg.event);
                    return TurnRun { events, status, text };
                }
            }
            events.push(msg.event);
        }
    }

    /// Submits a user message and waits for its turn to end.
    pub async fn turn(&mut self, text: &str) -> TurnRun {
        let id = self.submit(Op::UserInput {
            text: text.into(),
            attachments: Vec::new(),
            images: Vec::new(),
        });
        self.finish(id).await
    }

    /// Shuts the engine down and waits for it.
    pub async fn shutdown(mut self) {
        self.submit(Op::Shutdown);
        self.until(|e| matches!(e, Event::ShutdownComplete)).await;
    }
}

/// Reloads a journal from disk (read-only) and checks that its HEAD view can be sent.
pub fn reload_checked(path: &Path) -> Journal {
    let loaded = load_read_only(path).unwrap();
    let journal = loaded.journal;
    let view = render(&journal, journal.head_id().as_str());
    check_view(&view).unwrap_or_else(|e| panic!("view check failed after reload: {e}"));
    journal
}

/// The model-visible entries on HEAD's spine, root first.
pub fn spine(journal: &Journal) -> Vec<&Entry> {
    journal
        .spine(journal.head_id().as_str())
        .into_iter()
        .filter(|e| e.payload.is_model_visible())
        .collect()
}

/// The kinds of the spine, for compact assertions.
pub fn kinds(journal: &Journal) -> Vec<String> {
    spine(journal).iter().map(|e| e.kind().to_owned()).collect()
}

/// The tool results on the spine as (id, content, is_error).
pub fn results(journal: &Journal) -> Vec<(String, String, bool)> {
    spine(journal)
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolResult(r) => {
                Some((r.tool_use_id.clone(), r.content.to_string(), r.is_error))
            }
            _ => None,
        })
        .collect()
}

/// The single session file in `home/sessions`.
pub fn session_file(home: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}
