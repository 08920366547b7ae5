//! Codewhale sessions, the turn loop, tools, the token budget and compaction.
//!
//! The only crate that turns journal entries into provider requests. A front end talks to it
//! through the `Op`/`Event` protocol and never touches the journal or a provider directly.
//!
//! The public surface is small on purpose:
//! - [`Engine::spawn`] / [`Engine::spawn_opening`] open a session and return an
//!   [`EngineHandle`] (`submit(Op)`) and a receiver of [`protocol::EventMsg`]s; [`protocol`]
//!   holds both enums and every type an event carries (history pages, the context report,
//!   the budget's figures);
//! - [`eval`]: `codewhale eval`, compaction quality measured on built-in scenarios;
//! - [`offline`]: one entry point per subcommand that works on files without a provider
//!   (`context`, `journal check`, `survival-check`, `sessions`, `anchor`);
//! - [`trust`]: whether a workspace's own configuration may be used (asked before opening);
//! - [`sandbox`]: how shell commands are confined, including the helper's side that the
//!   front end's hidden `sandbox-exec` subcommand runs ([`sandbox::confine`]);
//! - what opening needs: [`Env`], [`Overrides`], [`Resume`], [`ApprovalMode`], [`FrontEnd`].
//!
//! Everything else is `pub(crate)`. Benches and this crate's integration tests reach the
//! internals through the `internals` feature, which no front end enables.

// Modules public only with the `internals` feature (this crate's integration tests and
// benches), crate-private otherwise. Declared plainly, two lines each, so rustfmt and every
// other tool sees them.
#[cfg(feature = "internals")]
pub mod anchors;
#[cfg(not(feature = "internals"))]
pub(crate) mod anchors;
#[cfg(feature = "internals")]
pub mod answers;
#[cfg(not(feature = "internals"))]
pub(crate) mod answers;
#[cfg(feature = "internals")]
pub mod approval;
#[cfg(not(feature = "internals"))]
pub(crate) mod approval;
#[cfg(feature = "internals")]
pub mod attachments;
#[cfg(not(feature = "internals"))]
pub(crate) mod attachments;
#[cfg(feature = "internals")]
pub mod bounded;
#[cfg(not(feature = "internals"))]
pub(crate) mod bounded;
#[cfg(feature = "internals")]
pub mod branch_summary;
#[cfg(not(feature = "internals"))]
pub(crate) mod branch_summary;
#[cfg(feature = "internals")]
pub mod branches;
#[cfg(not(feature = "internals"))]
pub(crate) mod branches;
#[cfg(feature = "internals")]
pub mod budget;
#[cfg(not(feature = "internals"))]
pub(crate) mod budget;
#[cfg(feature = "internals")]
pub mod call_end;
#[cfg(not(feature = "internals"))]
pub(crate) mod call_end;
#[cfg(feature = "internals")]
pub mod checkpoint;
#[cfg(not(feature = "internals"))]
pub(crate) mod checkpoint;
#[cfg(feature = "internals")]
pub mod children;
#[cfg(not(feature = "internals"))]
pub(crate) mod children;
#[cfg(feature = "internals")]
pub mod compaction;
#[cfg(not(feature = "internals"))]
pub(crate) mod compaction;
#[cfg(feature = "internals")]
pub mod config;
#[cfg(not(feature = "internals"))]
pub(crate) mod config;
#[cfg(feature = "internals")]
pub mod context_report;
#[cfg(not(feature = "internals"))]
pub(crate) mod context_report;
#[cfg(feature = "internals")]
pub mod convert;
#[cfg(not(feature = "internals"))]
pub(crate) mod convert;
#[cfg(feature = "internals")]
pub mod engine;
#[cfg(not(feature = "internals"))]
pub(crate) mod engine;
#[cfg(feature = "internals")]
pub mod error;
#[cfg(not(feature = "internals"))]
pub(crate) mod error;
#[cfg(feature = "internals")]
pub mod events;
#[cfg(not(feature = "internals"))]
pub(crate) mod events;
#[cfg(feature = "internals")]
pub mod extensions;
#[cfg(not(feature = "internals"))]
pub(crate) mod extensions;
#[cfg(feature = "internals")]
pub mod hints;
#[cfg(not(feature = "internals"))]
pub(crate) mod hints;
#[cfg(feature = "internals")]
pub mod history_pages;
#[cfg(not(feature = "internals"))]
pub(crate) mod history_pages;
#[cfg(feature = "internals")]
pub mod hooks;
#[cfg(not(feature = "internals"))]
pub(crate) mod hooks;
#[cfg(feature = "internals")]
pub mod importing;
#[cfg(not(feature = "internals"))]
pub(crate) mod importing;
#[cfg(feature = "internals")]
pub mod paths;
#[cfg(not(feature = "internals"))]
pub(crate) mod paths;
#[cfg(feature = "internals")]
pub mod plan;
#[cfg(not(feature = "internals"))]
pub(crate) mod plan;
#[cfg(feature = "internals")]
pub mod plan_mode;
#[cfg(not(feature = "internals"))]
pub(crate) mod plan_mode;
#[cfg(feature = "internals")]
pub mod probe;
#[cfg(not(feature = "internals"))]
pub(crate) mod probe;
#[cfg(feature = "internals")]
pub mod prompt;
#[cfg(not(feature = "internals"))]
pub(crate) mod prompt;
#[cfg(feature = "internals")]
pub mod protected;
#[cfg(not(feature = "internals"))]
pub(crate) mod protected;
#[cfg(feature = "internals")]
pub mod recall;
#[cfg(not(feature = "internals"))]
pub(crate) mod recall;
#[cfg(feature = "internals")]
pub mod redact;
#[cfg(not(feature = "internals"))]
pub(crate) mod redact;
#[cfg(feature = "internals")]
pub mod rewind;
#[cfg(not(feature = "internals"))]
pub(crate) mod rewind;
#[cfg(feature = "internals")]
pub mod session;
#[cfg(not(feature = "internals"))]
pub(crate) mod session;
#[cfg(feature = "internals")]
pub mod side_question;
#[cfg(not(feature = "internals"))]
pub(crate) mod side_question;
#[cfg(feature = "internals")]
pub mod spend;
#[cfg(not(feature = "internals"))]
pub(crate) mod spend;
#[cfg(feature = "internals")]
pub mod subagent;
#[cfg(not(feature = "internals"))]
pub(crate) mod subagent;
#[cfg(feature = "internals")]
pub mod text_diff;
#[cfg(not(feature = "internals"))]
pub(crate) mod text_diff;
#[cfg(feature = "internals")]
pub mod tokens;
#[cfg(not(feature = "internals"))]
pub(crate) mod tokens;
#[cfg(feature = "internals")]
pub mod tools;
#[cfg(not(feature = "internals"))]
pub(crate) mod tools;
#[cfg(feature = "internals")]
pub mod truncation;
#[cfg(not(feature = "internals"))]
pub(crate) mod truncation;
#[cfg(feature = "internals")]
pub mod turn;
#[cfg(not(feature = "internals"))]
pub(crate) mod turn;
#[cfg(feature = "internals")]
pub mod user_shell;
#[cfg(not(feature = "internals"))]
pub(crate) mod user_shell;

/// The Op/Event protocol, a types-only crate of its own; re-exported so engine code and its
/// tests name it as before.
pub use codewhale_protocol as protocol;

pub mod eval;
pub mod images;
pub mod offline;
pub mod pause_point;
pub mod sandbox;
pub mod trust;
#[cfg(feature = "internals")]
pub mod trusted;
#[cfg(not(feature = "internals"))]
pub(crate) mod trusted;

/// Creating Codewhale's own folders 0700 and files 0600, for the front ends' files (logs,
/// prompt history, clipboard images).
pub use codewhale_journal::private;
/// Replacing a whole file atomically, the one way a front end rewrites a file it owns (the
/// journal crate's helper, which every file rewrite of the engine goes through too).
pub use codewhale_journal::replace;

pub use approval::ApprovalMode;
pub use config::{key_variables, ConfigError, Env, Overrides};
pub use engine::{Engine, EngineHandle, EngineParams, EventReceiver, FrontEndSettings};
pub use error::EngineError;
pub use hints::FrontEnd;
pub use redact::{holds_secret, warm_up as warm_up_redaction};
pub use session::Resume;
pub use tokens::warm_up;

/// The tokens of `text`: its o200k count once the encoder is ready, about a quarter of its
/// bytes before. What a front end weighs a message with before sending it.
pub fn estimate_tokens(text: &str) -> u64 {
    u64::from(tokens::count_if_ready(text).unwrap_or_else(|| tokens::estimate(text)))
}
