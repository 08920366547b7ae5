//! An in-process mock provider for tests of this and other crates (feature `test-support`).
//!
//! [`MockServer::start`] binds an axum server to `127.0.0.1:0` that speaks the three wire
//! formats: `POST /v1/chat/completions` (and `/chat/completions`) answers as an
//! OpenAI-compatible server, `POST /v1/messages` as Anthropic, `POST /v1/responses` (and
//! `/responses`) as OpenAI's Responses API. Each request takes the next [`Reply`] from a queue
//! and is recorded, body and headers, for assertions.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use codewhale_provider::test_support::{Fault, MockServer, Reply};
//! use codewhale_provider::{Client, ProviderKind, Request, Message, CancellationToken};
//!
//! let server = MockServer::start().await?;
//! server.push(Reply::text("hi").with_usage(100, 5));
//! server.push(Reply::fault(Fault::overflow(200_000, 210_000)));
//! let client = Client::new(server.config(ProviderKind::Anthropic)).unwrap();
//! let mut request = Request::new("claude-sonnet-4-5", 1024);
//! request.messages.push(Message::user_text("hello"));
//! let reply = client.complete(&request, CancellationToken::new()).await.unwrap();
//! assert_eq!(reply.text(), "hi");
//! assert_eq!(server.requests()[0].body["messages"][0]["role"], "user");
//! # Ok(()) }
//! ```
//!
//! A local server's own API is served too: `GET` (and `POST`) routes answered with fixed JSON
//! ([`MockServer::serve_get`], [`MockServer::serve_post`]), every such request counted
//! ([`MockServer::probes`]), and, for the server that accepts a connection and never answers,
//! [`MockServer::stall_probes`].
//!
//! Invariants: an empty queue answers with the responder when one is set, else 418 with a
//! message saying so (never retried, never a hang); replies are consumed in push order whatever
//! the path; a reply body dropped by the client before it finished is counted in
//! [`MockServer::disconnects`].

pub mod peak;
mod render;
mod render_responses;
mod reply;

/// The SSE parser the clients use, for the benchmark that measures it against
/// `eventsource-stream` (`benches/sse.rs`).
pub mod sse {
    pub use crate::sse::{SseEvent, SseParser};
}

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::{ProviderConfig, ProviderKind, RetryPolicy};

pub use render::{Wire, FAULT_TEXT};
pub use reply::{
    Content, Cut, Fault, Flood, FloodShape, MockUsage, OverflowShape, Part, Reply, ToolCall,
};

/// The API key every [`MockServer::config`] carries.
pub const TEST_API_KEY: &str = "sk-test-codewhale-0123456789";

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub path: String,
    pub wire: Wire,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` when it was not JSON; see `raw`).
    pub body: Value,
    pub raw: String,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// Answers a request when the queue is empty (see [`MockServer::respond_with`]).
type Responder = Box<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<RecordedRequest>>,
    disconnects: Mutex<usize>,
    disconnected: Notify,
    /// Woken at every request received.
    received: Notify,
    /// Keep-alives sent by bodies that hang (`Reply::hang_after`), and their wake-up.
    keepalives: Mutex<usize>,
    kept_alive: Notify,
    /// What `GET /v1/models` lists; `None` answers 404, as a server without the route.
    models: Mutex<Option<Vec<String>>>,
    /// Other `GET` routes and their JSON (a local server's own API: `/api/ps`, `/props`).
    gets: Mutex<Vec<(String, Value)>>,
    /// `POST` routes of a local server's own API and their JSON (Ollama's `/api/show`).
    posts: Mutex<Vec<(String, Value)>>,
    /// Every request outside the model API, as `METHOD /path`, in order.
    probes: Mutex<Vec<String>>,
    /// Requests outside the model API are never answered.
    stall: std::sync::atomic::AtomicBool,
    /// `GET` routes answered with a body past every bound.
    floods: Mutex<Vec<(String, reply::Flood)>>,
}

/// Poisoning only means another test thread panicked; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The running mock server. Stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer").field("addr", &self.addr).finish()
    }
}

impl MockServer {
    /// Bind to a random local port and serve until dropped.
    pub async fn start() -> std::io::Result<MockServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let shutdown = CancellationToken::new();
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/v1/responses", post(responses))
            .route("/responses", post(responses))
            .route("/v1/models", get(models))
            .fallback(get_or_not_found)
            .with_state(shared.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let served =
                axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await;
            if let Err(err) = served {
                tracing::warn!("mock provider server stopped: {err}");
            }
        });
        Ok(MockServer { addr, shared, shutdown })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for an OpenAI-compatible client (`.../v1`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The base URL for an Anthropic client.
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    /// A config pointing at this server with [`TEST_API_KEY`] and fast retries.
    pub fn config(&self, kind: ProviderKind) -> ProviderConfig {
        let base = match kind {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => self.openai_base_url(),
            ProviderKind::Anthropic => self.anthropic_base_url(),
        };
        ProviderConfig::new(kind, Some(TEST_API_KEY.to_owned()))
            .with_base_url(base)
            .with_retry(RetryPolicy::fast())
    }

    /// Lists `ids` at `GET /v1/models`, as a local server lists what it has.
    pub fn serve_models(&self, ids: &[&str]) {
        *lock(&self.shared.models) = Some(ids.iter().map(|s| (*s).to_owned()).collect());
    }

    /// Answers `GET path` with `json` (a local server's own API, such as Ollama's `/api/ps`),
    /// from now on: a path served before answers the new `json` (as `/api/ps` lists a model
    /// once it is loaded).
    pub fn serve_get(&self, path: &str, json: Value) {
        let mut gets = lock(&self.shared.gets);
        gets.retain(|(p, _)| p != path);
        gets.push((path.to_owned(), json));
    }

    /// Answers `GET path` with `flood` (a local server whose probe answer never ends).
    pub fn serve_get_flood(&self, path: &str, flood: Flood) {
        lock(&self.shared.floods).push((path.to_owned(), flood));
    }

    /// Answers `POST path` with `json` (Ollama's `/api/show`).
    pub fn serve_post(&self, path: &str, json: Value) {
        lock(&self.shared.posts).push((path.to_owned(), json));
    }

    /// Every request received outside the model API (probes of a local server's own API), as
    /// `METHOD /path`, in order.
    pub fn probes(&self) -> Vec<String> {
        lock(&self.shared.probes).clone()
    }

    /// From now on a request outside the model API is accepted and never answered (a server
    /// that takes the connection and hangs), while the model API answers as before.
    pub fn stall_probes(&self) {
        self.shared.stall.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Queue a reply for the next request.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.queue).push_back(reply);
    }

    /// Queue several replies in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.shared.queue).extend(replies);
    }

    /// Answer every request the queue has no reply for with `respond(request)`: a model that
    /// decides from what it is sent (a long tool loop that ends after N calls, a summarizer
    /// recognised by its instruction, a window that rejects an over-long request).
    pub fn respond_with(
        &self,
        respond: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) {
        *lock(&self.shared.responder) = Some(Box::new(respond));
    }

    /// Replies not yet consumed.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        lock(&self.shared.requests).last().cloned()
    }

    /// Wait until at least `count` requests have been received (a test's marker that the
    /// client has sent what it was going to send).
    pub async fn wait_for_requests(&self, count: usize) {
        loop {
            let notified = self.shared.received.notified();
            if lock(&self.shared.requests).len() >= count {
                return;
            }
            notified.await;
        }
    }

    /// Wait until hanging bodies have sent at least `count` keep-alives: a body that hangs sends
    /// its frames first, so after its second keep-alive everything before it is on the wire.
    pub async fn wait_for_keepalives(&self, count: usize) {
        loop {
            let notified = self.shared.kept_alive.notified();
            if *lock(&self.shared.keepalives) >= count {
                return;
            }
            notified.await;
        }
    }

    /// How many streamed bodies the client abandoned before they finished.
    pub fn disconnects(&self) -> usize {
        *lock(&self.shared.disconnects)
    }

    /// Wait until at least `count` bodies have been abandoned by the client.
    pub async fn wait_for_disconnects(&self, count: usize) {
        loop {
            let notified = self.shared.disconnected.notified();
            if self.disconnects() >= count {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn openai(state: State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    serve(Wire::OpenAi, state, uri, headers, body)
}

async fn anthropic(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Anthropic, state, uri, headers, body)
}

async fn responses(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Responses, state, uri, headers, body)
}

async fn models(State(shared): State<Arc<Shared>>, uri: Uri) -> Response {
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

async fn get_or_not_found(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
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

/// The directory of recorded streams: `fixtures/sse/` at the workspace root.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sse")
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

fn json_response(status: u16, body: &str, headers: &[(String, String)]) -> Response {
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
fn flood_response(flood: Flood) -> Response {
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
struct Pace {
    first: Option<Duration>,
    each: Option<Duration>,
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

fn stream_response(
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
