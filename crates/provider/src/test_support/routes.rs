//! The mock server's routes: which reply a request gets, and what is recorded of it.
//!
//! The three model APIs share one handler (`serve`): the request is recorded (body, headers,
//! the key it carried), the next queued reply (else the responder's) is rendered for the wire
//! of its path. Everything else is a local server's own API: counted as a probe, answered from
//! the routes the test set, or stalled, or 404.
//!
//! Invariants: a request is recorded and its waiters woken before it is answered, so a test
//! waiting for it sees it; an empty queue without a responder answers 418, never a hang.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::Value;

use super::bodies::{flood_response, json_response, stream_response, Pace};
use super::render::{self, Wire};
use super::reply::{Content, Flood};
use super::{fixtures_dir, lock, RecordedRequest, Shared};

pub(super) async fn openai(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::OpenAi, state, uri, headers, body)
}

pub(super) async fn anthropic(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Anthropic, state, uri, headers, body)
}

pub(super) async fn responses(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Responses, state, uri, headers, body)
}

pub(super) async fn models(State(shared): State<Arc<Shared>>, uri: Uri) -> Response {
    if let Some(flood) = flood_for(&shared, uri.path()) {
        return flood_response(flood);
    }
    let listed = lock(&shared.models).clone();
    match listed {
        Some(ids) => {
            let data: Vec<Value> =
                ids.iter().map(|id| serde_json::json!({"id": id, "object": "model"})).collect();
            let body = serde_json::json!({"object": "list", "data": data});
            json_response(200, &body.to_string(), &[])
        }
        None => not_found(uri).await,
    }
}

fn flood_for(shared: &Shared, path: &str) -> Option<Flood> {
    lock(&shared.floods).iter().find(|(p, _)| p == path).map(|(_, f)| *f)
}

pub(super) async fn get_or_not_found(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
) -> Response {
    lock(&shared.probes).push(format!("{method} {}", uri.path()));
    if shared.stall.load(std::sync::atomic::Ordering::SeqCst) {
        return std::future::pending().await;
    }
    if method == Method::GET {
        if let Some(flood) = flood_for(&shared, uri.path()) {
            return flood_response(flood);
        }
    }
    let routes = if method == Method::POST { &shared.posts } else { &shared.gets };
    let served = lock(routes).iter().find(|(p, _)| p == uri.path()).map(|(_, j)| j.clone());
    match served {
        Some(json) => json_response(200, &json.to_string(), &[]),
        None => not_found(uri).await,
    }
}

async fn not_found(uri: Uri) -> Response {
    json_response(
        404,
        &format!(
            r#"{{"error":{{"message":"mock server: no route for {}","type":"not_found_error"}}}}"#,
            uri.path()
        ),
        &[],
    )
}

fn serve(
    wire: Wire,
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw = String::from_utf8_lossy(&body).into_owned();
    let json: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let header_list: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| {
            (n.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())
        })
        .collect();
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim_start_matches("Bearer "))
        })
        .map(str::to_owned);
    let recorded = RecordedRequest {
        path: uri.path().to_owned(),
        wire,
        headers: header_list,
        body: json.clone(),
        raw,
    };
    let queued = lock(&shared.queue).pop_front();
    let reply =
        queued.or_else(|| lock(&shared.responder).as_ref().map(|respond| respond(&recorded)));
    lock(&shared.requests).push(recorded);
    shared.received.notify_waiters();
    let Some(reply) = reply else {
        return json_response(
            418,
            r#"{"error":{"message":"mock server: no scripted reply left for this request","type":"mock_exhausted"}}"#,
            &[],
        );
    };
    match render::render(wire, &reply, &json, key.as_deref()) {
        render::Plan::Json { status, body, headers } => json_response(status, &body, &headers),
        render::Plan::Flood(flood) => flood_response(flood),
        render::Plan::Stream { frames, cut } => {
            let frames = match &reply.content {
                Content::SseFile(name) => match read_fixture(name) {
                    Ok(text) => split_bytes(&text, reply.chunk_size.unwrap_or(29)),
                    Err(message) => {
                        return json_response(
                            418,
                            &serde_json::json!({"error": {"message": message}}).to_string(),
                            &[],
                        )
                    }
                },
                _ => match reply.chunk_size {
                    Some(size) => split_bytes(&frames.concat(), size),
                    None => frames.into_iter().map(Bytes::from).collect(),
                },
            };
            let content_type = reply.content_type.as_deref().unwrap_or("text/event-stream");
            let pace = Pace { first: reply.first_delay, each: reply.delay };
            stream_response(shared, frames, content_type, pace, cut)
        }
    }
}

fn read_fixture(name: &str) -> Result<String, String> {
    let path = fixtures_dir().join(name);
    std::fs::read_to_string(&path)
        .map_err(|err| format!("mock server: cannot read fixture {name}: {err}"))
}

/// Fixed-size byte chunks: splits may fall inside a UTF-8 sequence or a CRLF on purpose, as
/// real networks split them.
fn split_bytes(text: &str, size: usize) -> Vec<Bytes> {
    text.as_bytes().chunks(size.max(1)).map(Bytes::copy_from_slice).collect()
}
