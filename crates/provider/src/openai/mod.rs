//! OpenAI Chat Completions, as spoken by OpenAI and by every OpenAI-compatible server.
//!
//! `request` turns a [`crate::Request`] into the JSON body for `POST {base}/chat/completions`;
//! `decode` turns the SSE stream back into [`crate::StreamEvent`]s. Server differences are
//! selected by [`crate::OpenAiServer`] and documented in `docs/providers.md`.

pub mod decode;
pub mod request;
mod think_tags;
