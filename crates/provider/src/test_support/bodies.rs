//! How a reply goes on the wire: a JSON body, a flood that never ends, or a paced SSE stream
//! with its scripted cut.
//!
//! Invariants: a streamed body dropped before it finished on its own counts one disconnect
//! (and wakes its waiters); a hanging body sends keep-alives, each counted, so a vanished
//! client is seen at the next write.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::Response;

use super::reply::{Cut, Flood, FloodShape};
use super::{lock, Shared};

pub(super) fn json_response(status: u16, body: &str, headers: &[(String, String)]) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder.body(Body::from(body.to_owned())).unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A body of `flood.bytes` that never makes a complete event or value: the same 64 KiB chunk
/// sent again and again (shared bytes, so the server itself stays small).
pub(super) fn flood_response(flood: Flood) -> Response {
    const CHUNK: usize = 64 * 1024;
    let (content_type, head, piece): (&str, &[u8], Bytes) = match flood.shape {
        FloodShape::SseData => {
            let mut line = b"data: ".to_vec();
            line.resize(CHUNK - 1, b'x');
            line.push(b'\n');
            ("text/event-stream", b"", Bytes::from(line))
        }
        FloodShape::Json => ("application/json", b"{\"error\": \"", Bytes::from(vec![b'x'; CHUNK])),
    };
    let count = flood.bytes / CHUNK as u64;
    let first = futures::stream::once(async move { Ok(Bytes::from_static(head)) });
    let rest =
        futures::stream::iter((0..count).map(move |_| Ok::<_, std::io::Error>(piece.clone())));
    Response::builder()
        .status(StatusCode::from_u16(flood.status).unwrap_or(StatusCode::OK))
        .header("content-type", content_type)
        .body(Body::from_stream(futures::StreamExt::chain(first, rest)))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Counts the body as abandoned if it is dropped before it finished on its own.
struct DisconnectGuard {
    shared: Arc<Shared>,
    finished: bool,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if !self.finished {
            *lock(&self.shared.disconnects) += 1;
            self.shared.disconnected.notify_waiters();
        }
    }
}

/// How a streamed body is paced.
pub(super) struct Pace {
    pub(super) first: Option<Duration>,
    pub(super) each: Option<Duration>,
}

struct BodyState {
    frames: VecDeque<Bytes>,
    sent: usize,
    delay: Option<Duration>,
    first_delay: Option<Duration>,
    cut: Option<(usize, Cut)>,
    guard: DisconnectGuard,
    hanging: bool,
}

pub(super) fn stream_response(
    shared: Arc<Shared>,
    frames: Vec<Bytes>,
    content_type: &str,
    pace: Pace,
    cut: Option<(usize, Cut)>,
) -> Response {
    let state = BodyState {
        frames: frames.into(),
        sent: 0,
        delay: pace.each,
        first_delay: pace.first,
        cut,
        guard: DisconnectGuard { shared, finished: false },
        hanging: false,
    };
    let body = futures::stream::unfold(state, |mut state| async move {
        let item = next_frame(&mut state).await?;
        Some((item, state))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", content_type)
        .header("cache-control", "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

async fn next_frame(state: &mut BodyState) -> Option<Result<Bytes, std::io::Error>> {
    if let Some(delay) = state.first_delay.take() {
        tokio::time::sleep(delay).await;
    }
    if state.hanging {
        // Keep-alives make a vanished client visible: a write to a closed socket fails.
        tokio::time::sleep(Duration::from_millis(10)).await;
        *lock(&state.guard.shared.keepalives) += 1;
        state.guard.shared.kept_alive.notify_waiters();
        return Some(Ok(Bytes::from_static(b": keep-alive\n\n")));
    }
    if let Some((at, cut)) = state.cut {
        if state.sent == at {
            match cut {
                Cut::Drop => {
                    // Yield once first so hyper flushes the frames already written; an error
                    // in the same poll would discard them with the connection.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    state.guard.finished = true;
                    state.cut = None;
                    state.frames.clear();
                    return Some(Err(std::io::Error::other(
                        "mock server: connection dropped mid-stream",
                    )));
                }
                Cut::Hangup => {
                    // Failing in the first poll makes hyper drop the unflushed status line.
                    state.guard.finished = true;
                    state.cut = None;
                    return Some(Err(std::io::Error::other("mock server: hung up")));
                }
                Cut::End => {
                    state.guard.finished = true;
                    return None;
                }
                Cut::Malformed => {
                    state.cut = Some((usize::MAX, Cut::End));
                    state.frames.clear();
                    state.guard.finished = true;
                    return Some(Ok(Bytes::from_static(
                        b"data: {\"choices\": [{\"delta\": {\"content\": \"unterminated\n\n",
                    )));
                }
                Cut::Hang => {
                    state.hanging = true;
                    return Some(Ok(Bytes::from_static(b": keep-alive\n\n")));
                }
            }
        }
    }
    let Some(frame) = state.frames.pop_front() else {
        state.guard.finished = true;
        return None;
    };
    if let Some(delay) = state.delay {
        tokio::time::sleep(delay).await;
    }
    state.sent += 1;
    Some(Ok(frame))
}
