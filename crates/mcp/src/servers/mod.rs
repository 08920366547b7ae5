//! The session's MCP servers: started in the background, their status, the tools offered to
//! the model, and calls.
//!
//! Invariants:
//! - starting never blocks: [`Servers::start`] spawns one task per server and returns;
//!   [`Servers::start_lazily`] (one-turn `exec`) leaves a server with a cached tool list idle
//!   until the model calls one of its tools, so a turn that calls none never starts it;
//! - the tools offered for a server are fixed the first time a request needs them (the live
//!   list if the server is ready, else the cached list of its last listing, else — with no
//!   cache — whatever the server lists before its startup timeout) and change only when the
//!   server says its list changed, so the request prefix stays stable for prompt caching;
//! - a server that fails to start or stops is reported once through the reporter, and every
//!   later call of its tools gets an error result that says so — a call always gets a result;
//! - a call waits for its server only while the server is still starting (up to its startup
//!   timeout) and for at most the tool timeout once it runs; an interruption cancels it; a
//!   result over the message limit fails the call at once ([`crate::stdio`]). Calls are in
//!   `call`, starting a server in `task`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::service::Peer;
use rmcp::RoleClient;
use tokio_util::sync::CancellationToken;

mod call;
mod task;
mod types;

use crate::client::StderrTail;
use crate::config::ServerConfig;
use crate::names;
use crate::tools::{ToolCache, ToolInfo};
pub use types::{CallOutput, OfferedTool, ReportedTool, ServerEvent, ServerReport, Status};

/// Reads a variable of Codewhale's environment.
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;
/// Receives what the user should hear about servers.
pub type Reporter = Arc<dyn Fn(ServerEvent) + Send + Sync>;

#[derive(Debug)]
struct State {
    status: Status,
    peer: Option<Peer<RoleClient>>,
    /// The running server's list (filtered).
    live: Option<Vec<ToolInfo>>,
    /// The list of the last successful listing in an earlier session (filtered).
    cached: Option<Vec<ToolInfo>>,
    /// What this session offers, once fixed.
    offered: Option<Vec<ToolInfo>>,
    /// When the server was started: its startup deadline counts from here.
    started: Option<Instant>,
    reported: bool,
}

#[derive(Debug)]
struct Server {
    config: ServerConfig,
    state: Mutex<State>,
    /// Bumped on every status change; waiters watch it.
    changed: tokio::sync::watch::Sender<u64>,
    stderr: StderrTail,
}

impl Server {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the state itself stays consistent.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_status(&self, status: Status) {
        self.lock().status = status;
        self.changed.send_modify(|v| *v += 1);
    }
}

struct Inner {
    servers: Vec<Arc<Server>>,
    cache: Option<ToolCache>,
    workspace: PathBuf,
    var: EnvReader,
    reporter: Mutex<Option<Reporter>>,
    /// The offered names → (server index, tool name), as of the last [`Servers::offered`].
    names: Mutex<BTreeMap<String, (usize, String)>>,
    /// Bumped whenever a server's offered list is fixed or replaced.
    generation: std::sync::atomic::AtomicU64,
    shutdown: CancellationToken,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Inner {
    fn bump(&self) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servers").field("servers", &self.servers.len()).finish()
    }
}

/// The session's MCP servers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Servers {
    inner: Arc<Inner>,
}

impl Default for Servers {
    fn default() -> Servers {
        Servers::new(Vec::new(), PathBuf::new(), None, Arc::new(|_: &str| None))
    }
}

impl Servers {
    /// The configured servers (in name order), not yet started. `cache_dir` holds the tool
    /// lists of earlier sessions; `workspace` is a stdio server's default directory.
    pub fn new(
        mut configs: Vec<ServerConfig>,
        workspace: PathBuf,
        cache_dir: Option<PathBuf>,
        var: EnvReader,
    ) -> Servers {
        configs.sort_by(|a, b| a.name.cmp(&b.name));
        let cache = cache_dir.map(ToolCache::new);
        let servers = configs
            .into_iter()
            .map(|config| {
                let cached = cache
                    .as_ref()
                    .and_then(|c| c.load(&config.name, &config.fingerprint()))
                    .map(|tools| filtered(&config, tools));
                let status = if config.enabled { Status::Idle } else { Status::Disabled };
                Arc::new(Server {
                    state: Mutex::new(State {
                        status,
                        peer: None,
                        live: None,
                        cached,
                        offered: None,
                        started: None,
                        reported: false,
                    }),
                    config,
                    changed: tokio::sync::watch::channel(0).0,
                    stderr: StderrTail::default(),
                })
            })
            .collect();
        Servers {
            inner: Arc::new(Inner {
                servers,
                cache,
                workspace,
                var,
                reporter: Mutex::new(None),
                names: Mutex::new(BTreeMap::new()),
                generation: std::sync::atomic::AtomicU64::new(0),
                shutdown: CancellationToken::new(),
                tasks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.servers.is_empty()
    }

    /// Starts every enabled server in the background (must run inside a tokio runtime);
    /// `reporter` hears failures, stops and tool-list changes. Calling it again does nothing.
    pub fn start(&self, reporter: Reporter) {
        if !self.set_reporter(reporter) {
            return;
        }
        for index in 0..self.inner.servers.len() {
            self.start_one(index);
        }
    }

    /// Like [`Servers::start`], for a process that lives for one turn: a server whose tool list
    /// is cached from an earlier session is offered from that cache and started only when the
    /// model calls one of its tools; only servers without a cached list start now (in the
    /// background, so no request waits for them beyond what [`Servers::offered`] says).
    pub fn start_lazily(&self, reporter: Reporter) {
        if !self.set_reporter(reporter) {
            return;
        }
        for (index, server) in self.inner.servers.iter().enumerate() {
            if server.lock().cached.is_none() {
                self.start_one(index);
            }
        }
    }

    /// Installs the reporter; false when the servers were started already.
    fn set_reporter(&self, reporter: Reporter) -> bool {
        let Ok(mut slot) = self.inner.reporter.lock() else { return false };
        if slot.is_some() {
            return false;
        }
        *slot = Some(reporter);
        true
    }

    /// Starts server `index` in the background unless it is disabled or already started.
    fn start_one(&self, index: usize) {
        let Some(server) = self.inner.servers.get(index) else { return };
        {
            let mut state = server.lock();
            if !server.config.enabled || state.status != Status::Idle {
                return;
            }
            state.started = Some(Instant::now());
        }
        server.set_status(Status::Starting);
        let inner = self.inner.clone();
        let task = tokio::spawn(async move { task::run_server(inner, index).await });
        if let Ok(mut tasks) = self.inner.tasks.lock() {
            tasks.push(task);
        }
    }

    /// Every configured server with its status and tools.
    pub fn reports(&self) -> Vec<ServerReport> {
        let names = self.inner.names.lock().map(|n| n.clone()).unwrap_or_default();
        self.inner
            .servers
            .iter()
            .enumerate()
            .map(|(index, server)| {
                let state = server.lock();
                let (tools, cached) = match (&state.live, &state.cached) {
                    (Some(live), _) => (live.clone(), false),
                    (None, Some(cached)) => (cached.clone(), true),
                    (None, None) => (Vec::new(), false),
                };
                let offered_name = |tool: &str| {
                    names
                        .iter()
                        .find(|(_, (i, t))| *i == index && t == tool)
                        .map(|(name, _)| name.clone())
                };
                let fallback = names::qualify(
                    &tools
                        .iter()
                        .map(|t| (server.config.name.as_str(), t.name.as_str()))
                        .collect::<Vec<_>>(),
                );
                let tools = tools
                    .iter()
                    .zip(fallback)
                    .map(|(t, fallback)| ReportedTool {
                        name: offered_name(&t.name).unwrap_or(fallback),
                        description: t.description.clone(),
                        read_only: server.config.is_read_only(&t.name),
                    })
                    .collect();
                ServerReport {
                    name: server.config.name.clone(),
                    target: server.config.describe(),
                    status: state.status.clone(),
                    tools,
                    cached,
                }
            })
            .collect()
    }

    /// Waits until no started server is still starting (each up to its startup timeout).
    pub async fn settle(&self) {
        let waits = self.inner.servers.iter().map(|s| wait_started(s));
        futures::future::join_all(waits).await;
    }

    /// The tools to offer in a request (see the module invariants). Fixes each server's list
    /// the first time; may wait for a server without a cached list, up to its startup timeout.
    pub async fn offered(&self) -> Vec<OfferedTool> {
        self.fix_offered().await;
        self.listing(|state| state.offered.clone(), true)
    }

    /// Like [`Servers::offered`], but only when the offered tools changed since generation
    /// `seen` (a request's tool list is rebuilt only then): the new generation and the tools.
    pub async fn offered_since(&self, seen: u64) -> Option<(u64, Vec<OfferedTool>)> {
        self.fix_offered().await;
        let generation = self.inner.generation.load(std::sync::atomic::Ordering::Acquire);
        (generation != seen)
            .then(|| (generation, self.listing(|state| state.offered.clone(), true)))
    }

    /// Fixes the list of every server that has none yet (see the module invariants).
    async fn fix_offered(&self) {
        let inner = &self.inner;
        let waits = inner.servers.iter().map(|server| async move {
            if server.lock().offered.is_some() {
                return;
            }
            let needs_wait = {
                let state = server.lock();
                state.live.is_none() && state.cached.is_none()
            };
            if needs_wait {
                wait_started(server).await;
            }
            let mut state = server.lock();
            // A server that already failed offers nothing: its tools could only fail. One
            // not started yet (see `start_lazily`) offers its cached list and starts when called.
            let usable = match state.status {
                Status::Starting | Status::Ready => true,
                Status::Idle => state.cached.is_some(),
                _ => false,
            };
            if state.offered.is_none() && usable {
                state.offered = state.live.clone().or_else(|| state.cached.clone());
                if state.offered.is_some() {
                    inner.bump();
                }
            }
        });
        futures::future::join_all(waits).await;
    }

    /// What would be offered now, without waiting or fixing anything: each server's fixed
    /// list, else its live one, else its cached one (`codewhale context` counts these).
    pub fn offered_now(&self) -> Vec<OfferedTool> {
        self.listing(
            |state| {
                state
                    .offered
                    .clone()
                    .or_else(|| state.live.clone())
                    .or_else(|| state.cached.clone())
            },
            false,
        )
    }

    fn listing(
        &self,
        pick: impl Fn(&State) -> Option<Vec<ToolInfo>>,
        remember: bool,
    ) -> Vec<OfferedTool> {
        let mut entries = Vec::new();
        for (index, server) in self.inner.servers.iter().enumerate() {
            if !server.config.enabled {
                continue;
            }
            for tool in pick(&server.lock()).into_iter().flatten() {
                entries.push((index, tool));
            }
        }
        let pairs: Vec<(&str, &str)> = entries
            .iter()
            .map(|(i, t)| (self.inner.servers[*i].config.name.as_str(), t.name.as_str()))
            .collect();
        let qualified = names::qualify(&pairs);
        let mut map = BTreeMap::new();
        let offered = entries
            .iter()
            .zip(qualified)
            .map(|((index, tool), name)| {
                map.insert(name.clone(), (*index, tool.name.clone()));
                OfferedTool {
                    name,
                    server: self.inner.servers[*index].config.name.clone(),
                    tool: tool.name.clone(),
                    description: tool.description.clone(),
                    input_schema: names::sanitize_schema(&tool.input_schema),
                }
            })
            .collect();
        if remember {
            if let Ok(mut names) = self.inner.names.lock() {
                *names = map;
            }
        }
        offered
    }

    /// The server and tool an offered name stands for, and whether the tool is one of the
    /// server's `read_only_tools`. `None` for a name that was not offered.
    pub fn resolve(&self, name: &str) -> Option<(String, String, bool)> {
        let names = self.inner.names.lock().ok()?;
        let (index, tool) = names.get(name)?;
        let config = &self.inner.servers.get(*index)?.config;
        Some((config.name.clone(), tool.clone(), config.is_read_only(tool)))
    }

    fn stopped(&self, server: &Server, reason: String) {
        stopped(&self.inner, server, reason);
    }

    /// Stops every server (their process trees end with them) and waits briefly for them.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let tasks: Vec<_> =
            self.inner.tasks.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        let all = futures::future::join_all(tasks);
        let _ = tokio::time::timeout(Duration::from_secs(3), all).await;
    }
}

fn stopped(inner: &Inner, server: &Server, reason: String) {
    let report = {
        let mut state = server.lock();
        state.peer = None;
        let first = !state.reported;
        state.reported = true;
        first
    };
    server.set_status(Status::Failed(reason.clone()));
    if report {
        emit(inner, ServerEvent::Stopped { server: server.config.name.clone(), reason });
    }
}

fn emit(inner: &Inner, event: ServerEvent) {
    let reporter = inner.reporter.lock().ok().and_then(|r| r.clone());
    if let Some(reporter) = reporter {
        reporter(event);
    }
}

/// How long after its startup deadline a starting server's own task is given to record that
/// it failed, so a waiter sees the failure rather than "still starting".
const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// Waits while `server` is starting, up to its startup deadline.
async fn wait_started(server: &Server) {
    let mut rx = server.changed.subscribe();
    let deadline = {
        let state = server.lock();
        if state.status != Status::Starting {
            return;
        }
        state.started.unwrap_or_else(Instant::now) + server.config.startup_timeout + DEADLINE_GRACE
    };
    let deadline = tokio::time::Instant::from_std(deadline);
    loop {
        if server.lock().status != Status::Starting {
            return;
        }
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => continue,
            _ => return,
        }
    }
}

fn filtered(config: &ServerConfig, tools: Vec<ToolInfo>) -> Vec<ToolInfo> {
    tools.into_iter().filter(|t| config.offers(&t.name)).collect()
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}
