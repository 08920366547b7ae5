//! Reading a response body through a bound (DESIGN §4, *Every read is bounded*): the one place
//! the provider crate turns a non-streamed body into bytes, so a server that sends forever —
//! an endless error body, a JSON "success" that never closes, a probe answer of gigabytes —
//! costs at most the bound in memory.
//!
//! Invariant: at most `limit` bytes are kept; reading stops at the first chunk past the bound
//! and the rest of the body is never read (the connection is dropped with the response).

use reqwest::Response;

/// Error and non-streaming JSON bodies: 1 MiB kept.
pub const BODY_LIMIT: usize = 1 << 20;
/// A local server's probe answer or model list: 1 MiB.
pub const PROBE_LIMIT: usize = 1 << 20;

/// A body read through a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// The first bytes of the body, at most the bound.
    pub bytes: Vec<u8>,
    /// The server sent more than the bound; the rest was not read.
    pub cut: bool,
}

impl Capped {
    /// The bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Reads `response`'s body, keeping at most `limit` bytes.
pub async fn read_capped(mut response: Response, limit: usize) -> Result<Capped, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Capped { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Capped { bytes, cut: false })
}
