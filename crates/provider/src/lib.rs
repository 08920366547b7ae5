//! Model APIs over HTTP: OpenAI-compatible Chat Completions and the Anthropic Messages API.
//!
//! The only crate that speaks HTTP to a model; it depends on no other workspace crate.
//!
//! - [`Request`], [`Message`], [`Block`], [`ToolSpec`]: one normalized request for every
//!   provider. The engine converts journal entries into it; this crate converts it into each
//!   wire format.
//! - [`StreamEvent`]: one normalized event stream (text, thinking, tool calls, usage, stop).
//! - [`ResponseBuilder`] folds events into a [`Response`], or into the partial reply a
//!   mid-stream failure leaves behind ([`ProviderFailure::partial`]).
//! - [`ProviderError`] with an [`ErrorKind`] the engine acts on: `ContextOverflow` triggers
//!   reactive compaction, transient kinds are retried here first.
//! - [`Client`]: `Client::new(config)`, then `stream(&request, cancel)` for events or
//!   `complete`/`complete_with` for a folded reply; retries, cancellation and redaction happen
//!   here.
//! - [`catalog::lookup`]: context window and output limits per model.
//! - `test_support` (feature `test-support`): an in-process mock provider speaking both wire
//!   formats, for this crate's tests and the engine's.
//!
//! `docs/providers.md` describes the server quirks handled and how overflow is recognised.

mod accumulate;
mod anthropic;
mod body;
mod catalog;
mod classify;
mod client;
mod config;
mod error;
mod event;
mod openai;
mod overflow;
mod price;
mod probe;
pub mod responses;
mod retry;
mod sse;
mod stream;
#[cfg(feature = "test-support")]
pub mod test_support;
mod types;

pub use accumulate::ResponseBuilder;
pub use catalog::{
    lookup as lookup_model, models as catalog_models, price_of, prices_read, ModelInfo,
};
pub use client::{install_crypto, reply_bound, Client};
pub use config::{host_of, OpenAiServer, ProviderConfig, ProviderKind, RetryPolicy, HOSTED_APIS};
pub use error::{ErrorKind, ProviderError, ProviderFailure};
pub use event::{StopReason, StreamEvent, Usage};
pub use price::Price;
pub use probe::{
    find_local_servers, FoundServer, LocalServer, ProbeAnswer, ProbeSource, ProbedWindow,
};
pub use stream::EventStream;
pub use types::{
    image_tokens, Block, Message, Request, Response, Role, SystemBlock, ToolChoice, ToolSpec,
};

/// Re-exported so callers need no direct `tokio-util` dependency to cancel a request.
pub use tokio_util::sync::CancellationToken;
