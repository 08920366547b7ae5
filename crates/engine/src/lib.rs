//! Codewhale sessions, the turn loop, tools, the token budget and compaction.
//!
//! The only crate that turns journal entries into provider requests. The UI talks to it through
//! the `Op`/`Event` protocol and never touches the journal or a provider directly.
//!
//! The main pieces:
//! - [`Engine::spawn`] opens a session and returns an [`EngineHandle`] (`submit(Op)`) and a
//!   receiver of [`protocol::EventMsg`]s; see [`protocol`] for both enums.
//! - [`session::Session`]: the journal file, budget, system prompt, provider client, approval
//!   policy and background commands of one conversation.
//! - [`turn`]: the turn loop, with the compaction seams in [`turn::hooks`].
//! - [`convert`]: the only view → provider request conversion.
//! - [`tools`], [`approval`], [`budget`], [`tokens`], [`config`], [`prompt`].

pub mod anchors;
pub mod approval;
pub mod budget;
pub mod compaction;
pub mod config;
pub mod convert;
pub mod engine;
pub mod error;
pub mod events;
pub mod hints;
pub mod prompt;
pub mod protocol;
pub mod redact;
pub mod session;
pub mod tokens;
pub mod tools;
pub mod trust;
pub mod turn;

pub use codewhale_journal as journal;
pub use engine::{Engine, EngineHandle, EngineParams, EventReceiver};
pub use error::EngineError;
pub use hints::FrontEnd;
