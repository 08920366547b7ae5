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

/// Declares modules that are public only with the `internals` feature.
macro_rules! internal_modules {
    ($($(#[$meta:meta])* $name:ident;)*) => {$(
        $(#[$meta])*
        #[cfg(feature = "internals")]
        pub mod $name;
        $(#[$meta])*
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $name;
    )*};
}

internal_modules! {
    anchors;
    attachments;
    approval;
    bounded;
    branch_summary;
    branches;
    budget;
    checkpoint;
    compaction;
    config;
    convert;
    engine;
    error;
    events;
    hints;
    history_pages;
    importing;
    plan;
    prompt;
    recall;
    redact;
    session;
    tokens;
    tools;
    turn;
}

pub mod eval;
pub mod offline;
pub mod protocol;
pub mod sandbox;
pub mod trust;

/// Replacing a whole file atomically, the one way a front end rewrites a file it owns (the
/// journal crate's helper, which every file rewrite of the engine goes through too).
pub use codewhale_journal::replace;

pub use approval::ApprovalMode;
pub use config::{ConfigError, Env, Overrides};
pub use engine::{Engine, EngineHandle, EngineParams, EventReceiver};
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
