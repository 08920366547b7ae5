//! Asking a local server for its window without making anyone wait (docs/compaction.md, *Small local models*).
//!
//! [`begin`] is called when a session starts running (and after a model switch). It reads the
//! cache ([`cache`]) for the session's base URL and model: a window the server stated before,
//! however long ago, is known at once; a round started less than a minute ago by any process
//! means no request is sent; otherwise a round is claimed and sent in the background
//! ([`codewhale_provider::Client::probe`]). What comes back is held in a [`Pending`] the session
//! takes when it is in, or waits for — at most [`FIRST_REQUEST_WAIT`], and only before its
//! first request when that is large and no window is known (the session decides).
//!
//! Invariants: a hosted API and a session whose window is configured are never probed (the
//! session does not call [`begin`] for the latter); no request of the round is sent before its
//! start is in the cache, so processes starting together send one round between them; a
//! process that finds a round running polls the cache for its answer and sends nothing; a
//! [`Pending`] dropped aborts its task.

pub mod cache;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codewhale_provider::{Client, ProbedWindow};
use tokio::task::JoinHandle;

/// The longest a request waits for the probe (DESIGN §9: 800 ms).
pub const FIRST_REQUEST_WAIT: Duration = Duration::from_millis(800);
/// A request whose estimate is at or below this many tokens never waits for the probe: the
/// window cannot matter to it.
pub const WAIT_ABOVE_TOKENS: u64 = 2_048;
/// How long another process's round is waited for before it is taken as lost (the process
/// running it ended first): its slowest path, Ollama's three requests of 800 ms each, and a
/// margin.
const ROUND_LIMIT: Duration = Duration::from_millis(2_600);
/// How often the cache is read while another process's round runs.
const POLL: Duration = Duration::from_millis(10);

/// What [`begin`] found.
#[derive(Debug, Default)]
pub struct Begun {
    /// A window the cache holds for this server and model (from any earlier round).
    pub cached: Option<ProbedWindow>,
    /// The round (this process's, or another's being watched) whose answer is still to come.
    pub pending: Option<Pending>,
}

/// A round's answer on its way.
#[derive(Debug)]
pub struct Pending {
    model: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Shared {
    /// `Some` once the round ended: the window it states, if any.
    answer: Mutex<Option<Option<ProbedWindow>>>,
    /// Woken when the answer is in.
    wake: tokio::sync::Notify,
}

impl Shared {
    fn publish(&self, window: Option<ProbedWindow>) {
        *self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(window);
        self.wake.notify_one();
    }

    fn answer(&self) -> Option<Option<ProbedWindow>> {
        self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Pending {
    /// The model the round asks about.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The answer, once the round ended (`Some(None)`: the server states no window).
    pub fn answer(&self) -> Option<Option<ProbedWindow>> {
        self.shared.answer()
    }

    /// Waits for the answer at most `limit`; `None` when it is not in by then.
    pub async fn wait(&self, limit: Duration) -> Option<Option<ProbedWindow>> {
        let arrived = async {
            loop {
                let notified = self.shared.wake.notified();
                if let Some(answer) = self.shared.answer() {
                    return answer;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, arrived).await.ok()
    }

    /// Resolves when the answer is in (an idle engine takes it at once).
    pub async fn arrived(&self) {
        loop {
            let notified = self.shared.wake.notified();
            if self.shared.answer().is_some() {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Looks up the cache for `client`'s server and `model` and starts (or watches) a round when
/// none is fresh (module docs). Needs a tokio runtime; without one, or for a server that is
/// never probed, only the cache is read.
pub fn begin(client: &Client, home: &Path, model: &str) -> Begun {
    if !client.config().is_probed() {
        return Begun::default();
    }
    let base = client.config().base_url.clone();
    let entry = cache::lookup(home, &base, model);
    let cached = entry.as_ref().and_then(|e| e.answer.as_ref()?.window());
    let now = cache::now_ms();
    let fresh = entry.as_ref().filter(|e| e.is_fresh(now));
    if fresh.is_some_and(|e| e.answer.is_some()) {
        return Begun { cached, pending: None };
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Begun { cached, pending: None };
    };
    let shared = Arc::new(Shared::default());
    let ask = Round {
        client: client.clone(),
        home: home.to_path_buf(),
        base,
        model: model.to_owned(),
        shared: shared.clone(),
    };
    let task = match fresh {
        // Another process's round is running: wait for its answer, send nothing.
        Some(running) => runtime.spawn(ask.watch(running.started_ms)),
        None => runtime.spawn(ask.run()),
    };
    Begun { cached, pending: Some(Pending { model: model.to_owned(), shared, task }) }
}

/// The window the cache holds for `config`'s server and `model`, whatever its age: what a
/// command that sends nothing (`codewhale context`) knows of a window the server stated. `None`
/// for a server that is never probed.
pub fn cached_window(
    home: &Path,
    config: &codewhale_provider::ProviderConfig,
    model: &str,
) -> Option<ProbedWindow> {
    if !config.is_probed() {
        return None;
    }
    cache::lookup(home, &config.base_url, model)?.answer?.window()
}

/// One round's work, off the session's task.
struct Round {
    client: Client,
    home: PathBuf,
    base: String,
    model: String,
    shared: Arc<Shared>,
}

impl Round {
    /// Claims the round and sends it, or watches the one another process claimed first.
    async fn run(self) {
        let (home, base, model) = (self.home.clone(), self.base.clone(), self.model.clone());
        let claim = tokio::task::spawn_blocking(move || {
            cache::claim(&home, &base, &model, cache::now_ms())
        })
        .await
        .ok()
        .flatten();
        match claim {
            Some(cache::Claim::Fresh(entry)) => match entry.answer {
                Some(answer) => self.shared.publish(answer.window()),
                None => self.watch(entry.started_ms).await,
            },
            Some(cache::Claim::Mine { started_ms }) => {
                let answer = self.client.probe(&self.model).await;
                tracing::debug!(?answer, base = %self.base, model = %self.model, "probe round");
                let (home, base, model) = (self.home, self.base, self.model);
                let filed = cache::Answer::of(&answer);
                // Filed before it is used: a process that ends right after using it leaves
                // the answer for the next one.
                let _ = tokio::task::spawn_blocking(move || {
                    cache::store(&home, &base, &model, started_ms, filed)
                })
                .await;
                self.shared.publish(answer.window);
            }
            // No cache to share (the home is not writable): ask anyway, for this process.
            None => self.shared.publish(self.client.probe(&self.model).await.window),
        }
    }

    /// Reads the cache until the round started at `started_ms` files its answer, or until it
    /// is taken as lost.
    async fn watch(self, started_ms: u64) {
        let limit = u64::try_from(ROUND_LIMIT.as_millis()).unwrap_or(u64::MAX);
        loop {
            let entry = cache::lookup(&self.home, &self.base, &self.model);
            if let Some(answer) = entry.as_ref().and_then(|e| e.answer.as_ref()) {
                return self.shared.publish(answer.window());
            }
            let newer = entry.as_ref().is_some_and(|e| e.started_ms > started_ms);
            if newer || cache::now_ms() > started_ms.saturating_add(limit) {
                return self.shared.publish(None);
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
