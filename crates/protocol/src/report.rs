//! The context report (`/context`, `codewhale context --json`, [`super::Event::ContextReport`]):
//! what the next request contains, token by token. Types only; the engine builds it from the
//! live session's budget (or, offline, from the same budget replayed from the journal), so
//! its total is always the figure the [`super::Event::Usage`] gauge shows.

use serde::{Deserialize, Serialize};

use super::kinds::{CompactionKind, CompactionTrigger};
use crate::figure::{Figure, Source};
use crate::ApprovalMode;

/// Token breakdown of the next request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// The next request's size: the same figure as [`crate::Event::Usage`]'s pressure.
    pub total: u64,
    /// Whether `total` is the provider's (`reported`) or Codewhale's (`estimated`).
    pub source: Source,
    /// The system prompt (instructions, `AGENTS.md`).
    pub system: u64,
    /// The tool schemas offered with every request: the built-in tools and MCP servers'.
    #[serde(default)]
    pub tools: u64,
    pub anchors: u64,
    pub checkpoint: u64,
    pub retained: u64,
    pub history: u64,
    pub tool_results: u64,
    /// The images the view carries (by the providers' published rules); the messages holding
    /// them count their text only. Covered images read as one line and count as text.
    #[serde(default)]
    pub images: u64,
    /// What the last request left out of the view to fit the window (fail-open trimming):
    /// the parts above add up to `total + left_out`. Zero when nothing was left out.
    #[serde(default)]
    pub left_out: u64,
}

/// The active compaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActiveReport {
    pub id: String,
    pub path: CompactionKind,
    pub trigger: CompactionTrigger,
    pub covers: Option<CoversReport>,
    pub retained: usize,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub model: Option<String>,
    /// When the record was written (RFC 3339).
    pub when: String,
}

/// The covered segment of the active compaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoversReport {
    pub first: String,
    pub last: String,
    pub count: u64,
}

/// The last round of the view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRound {
    pub messages: u64,
    pub tool_results: u64,
    pub assistant_kept: u64,
}

/// The workspace's anchors and whether the view carries them verbatim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchorsReport {
    pub count: usize,
    pub chars: usize,
    pub present: bool,
}

/// One item of the view, in request order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewEntry {
    pub id: String,
    pub kind: String,
    pub role: String,
    pub tokens: u64,
}

/// A branch of the session, named by its tip (what `/checkout` and `codewhale checkout`
/// take).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchInfo {
    /// The tip's entry id.
    pub tip: String,
    /// The branch's newest message, first line: "you: …" or "model: …".
    pub preview: String,
    /// When the tip was written (RFC 3339).
    pub when: String,
    /// HEAD is on this branch.
    pub current: bool,
}

/// Whether the workspace's own settings (`.codewhale/config.toml`) apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum WorkspaceTrust {
    /// The workspace has no settings file.
    NoSettings,
    /// Its settings apply: trusted, or none of them needs trust.
    Applied,
    /// Not trusted: these settings were ignored.
    Untrusted { ignored: Vec<String> },
}

/// `/status`: the session at a glance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    pub session: String,
    pub path: String,
    pub workspace: String,
    pub model: String,
    pub context_window: u64,
    pub window_unverified: bool,
    /// Where the window came from when the local server stated it ("Ollama's /api/ps").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_from: Option<String>,
    pub usable_input: u64,
    /// The gauge's figure.
    pub pressure: Figure,
    pub approval: ApprovalMode,
    pub trust: WorkspaceTrust,
    pub sandbox: super::values::SandboxReport,
    /// Compaction records in the session.
    pub compactions: usize,
    /// Tokens and money spent.
    #[serde(default)]
    pub spend: SpendReport,
}

/// What a session's model requests took and cost (US dollars at the published prices; `None`
/// where a request's model has no known price).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpendReport {
    /// This run (since the session was opened): the replies.
    pub requests: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
    /// This run's summary requests, counted apart.
    pub summary_requests: u32,
    pub summary_cost_usd: Option<f64>,
    /// Every priced request the session's file records, earlier runs included.
    pub session_cost_usd: f64,
    /// The model's price per million tokens (input, cached input, output), when known, and
    /// the date it was read.
    pub price: Option<(f64, f64, f64)>,
    pub prices_read: Option<String>,
}

/// A model of the catalog, for `/model`'s picker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    pub id: String,
    pub context_window: u64,
    /// The model requests use now.
    pub current: bool,
    /// Listed by the provider's own server (a local server's models); `context_window` is 0
    /// when neither the catalog nor the session knows it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_server: bool,
}

/// The whole report (the JSON object of `codewhale context --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextReport {
    pub session: String,
    pub head: String,
    pub model: String,
    pub context_window: u64,
    /// Where the window came from: `config`, `catalog`, `default`, `overflow`,
    /// `overflow-unnumbered`, `truncation` or `probe:<source>` (`probe:ollama-ps`, ...).
    #[serde(default)]
    pub window_source: String,
    pub window_unverified: bool,
    pub reserved_output: u64,
    pub usable_input: u64,
    pub threshold: u64,
    pub tokens: Tokens,
    pub compaction: Option<ActiveReport>,
    pub compactions: usize,
    pub last_round: LastRound,
    pub anchors: AnchorsReport,
    /// HEAD's live plan (`update_plan`), `null` when the model set none.
    #[serde(default)]
    pub plan: Option<super::plan::Plan>,
    /// The background note of a live session (docs/compaction.md, *Background compaction*); `null`
    /// when none is being written or waiting, and always from a file alone (only the running
    /// session knows).
    #[serde(default)]
    pub background: Option<BackgroundReport>,
    pub view: Vec<ViewEntry>,
    /// Every branch tip, newest first.
    #[serde(default)]
    pub branches: Vec<BranchInfo>,
    /// Bytes the session's file store holds (the checkpoints of what tools changed).
    #[serde(default)]
    pub file_store_bytes: u64,
    /// The skills the system prompt names, and those left out of it (past 50, or past 2 % of
    /// the usable input), by name (docs/extending.md, *Skills*).
    #[serde(default)]
    pub skills: SkillsReport,
}

/// `skills` of the context report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsReport {
    pub listed: Vec<String>,
    pub left_out: Vec<String>,
}

/// `background` of the context report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundReport {
    pub state: super::values::BackgroundState,
}
