//! The Anthropic Messages API (`POST {base}/v1/messages`, `anthropic-version: 2023-06-01`).
//!
//! `request` builds the JSON body (system blocks, cache breakpoints, thinking, tools);
//! `decode` turns the named SSE events back into [`crate::StreamEvent`]s.

pub mod decode;
pub mod request;

/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";
