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
//!
//! The server's state and its handle are here; the routes (which reply a request gets, what is
//! recorded) are in `routes`, the bodies they send (JSON, flood, paced stream) in `bodies`.

mod bodies;
pub mod peak;
mod render;
mod render_responses;
mod reply;
mod routes;

/// The SSE parser the clients use, for the benchmark that measures it against
/// `eventsource-stream` (`benches/sse.rs`).
pub mod sse {
    pub use crate::sse::{SseEvent, SseParser};
}

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::{ProviderConfig, ProviderKind, RetryPolicy};
use routes::{anthropic, get_or_not_found, models, openai, responses};

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

/// The directory of recorded streams: `fixtures/sse/` at the workspace root.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sse")
}
