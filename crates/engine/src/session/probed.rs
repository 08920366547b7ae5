//! The window a local server states, taken into the session (docs/compaction.md, *Small local models*): started when the session runs ([`Session::start_probe`]),
//! taken when it is in — idle, before a request, or when the session closes — and journaled as a
//! `system` entry with `context_window` and `window_source` (`probe:…`), so `context`, `resume`,
//! `exec` and `compact` replay the same figure.
//!
//! Rules (DESIGN §5.8b): a configured window is never probed; a stated window replaces the
//! catalog's or the default whatever its size, and a window stated earlier when it changed; a
//! window learned from an overflow or a cut stands unless the server now states a smaller one,
//! or another one than it stated when the learned one replaced it (the user raised the
//! server's window, as the truncation notice told them). Only the first request of a run ever
//! waits, and only when its estimate is above [`crate::probe::WAIT_ABOVE_TOKENS`] with no window
//! known: at most [`crate::probe::FIRST_REQUEST_WAIT`].
//!
//! A session with nothing in it yet (a new one before its first message) is not written to
//! for this: the window is used at once and journaled with the session's first entries, so an
//! empty session is still removed on close.

use codewhale_journal::Level;
use codewhale_provider::ProbedWindow;

use super::{replay, Session};
use crate::budget::WindowSource;
use crate::error::EngineError;

/// The session's side of the probe.
#[derive(Debug, Default)]
pub struct Probing {
    /// The round whose answer is still to come.
    pending: Option<crate::probe::Pending>,
    /// The first request of this run was sent (later ones never wait).
    first_sent: bool,
    /// A stated window in use but not journaled yet (the session was empty): the window, its
    /// source and the window it replaced.
    unjournaled: Option<(u64, WindowSource, u64)>,
}

impl Session {
    /// Reads the cache for this server and model and, unless a round is fresh, starts one in
    /// the background; a window the cache holds is used at once. Nothing when the window is
    /// configured or the server is a hosted API.
    pub(crate) fn start_probe(&mut self) {
        self.state.probe.pending = None;
        self.state.probe.first_sent = false;
        if self.state.budget.limits().window_source == WindowSource::Config
            || self.settings.no_model.is_some()
        {
            return;
        }
        let model = self.settings.provider.model.clone();
        let begun = crate::probe::begin(&self.services.client, &self.settings.home, &model);
        if let Some(window) = begun.cached {
            if let Err(err) = self.use_probed(window) {
                tracing::warn!("cannot journal the server's window: {err}");
            }
        }
        self.state.probe.pending = begun.pending;
    }

    /// Resolves when a round's answer is in; never while none is on its way.
    pub(crate) async fn probe_arrived(&self) {
        match &self.state.probe.pending {
            Some(pending) => pending.arrived().await,
            None => std::future::pending().await,
        }
    }

    /// Takes the answer if it is in and journals what waits to be; whether the window changed.
    pub(crate) fn settle_probe(&mut self) -> Result<bool, EngineError> {
        let mut changed = false;
        if let Some(answer) = self.state.probe.pending.as_ref().and_then(|p| p.answer()) {
            let pending = self.state.probe.pending.take();
            let same_model =
                pending.as_ref().is_some_and(|p| p.model() == self.settings.provider.model);
            if let Some(window) = answer.filter(|_| same_model) {
                changed = self.use_probed(window)?;
            }
        }
        self.journal_probed()?;
        Ok(changed)
    }

    /// Before a request: the first one of the run waits for the round (at most
    /// [`crate::probe::FIRST_REQUEST_WAIT`]) when its estimate is above
    /// [`crate::probe::WAIT_ABOVE_TOKENS`] and no window is known; then the answer, if in, is
    /// taken. Whether the window changed.
    pub(crate) async fn probe_before_request(&mut self) -> Result<bool, EngineError> {
        let first = !std::mem::replace(&mut self.state.probe.first_sent, true);
        let unknown = matches!(
            self.state.budget.limits().window_source,
            WindowSource::Default | WindowSource::Catalog
        );
        let large = self.state.budget.pressure().tokens > crate::probe::WAIT_ABOVE_TOKENS;
        if first && unknown && large {
            if let Some(pending) = &self.state.probe.pending {
                let waited = std::time::Instant::now();
                let answer = pending.wait(crate::probe::FIRST_REQUEST_WAIT).await;
                tracing::debug!(
                    in_time = answer.is_some(),
                    ms = waited.elapsed().as_millis(),
                    "waited for the server's window"
                );
            }
        }
        self.settle_probe()
    }

    /// Uses a window the server stated, as the rules say (module docs); whether it changed
    /// the window.
    fn use_probed(&mut self, probed: ProbedWindow) -> Result<bool, EngineError> {
        let limits = *self.state.budget.limits();
        let source = WindowSource::Probe(probed.source);
        let replace = match limits.window_source {
            WindowSource::Config => false,
            WindowSource::Default | WindowSource::Catalog => true,
            WindowSource::Probe(_) => {
                limits.window != probed.tokens || limits.window_source != source
            }
            WindowSource::Overflow
            | WindowSource::OverflowUnnumbered
            | WindowSource::Truncation => {
                let learned = replay::journal_limits(self.journal()).learned_window;
                let before = learned.and_then(|l| l.before);
                probed.tokens < limits.window || before.is_some_and(|b| b != probed.tokens)
            }
        };
        if !replace {
            return Ok(false);
        }
        tracing::info!(
            tokens = probed.tokens,
            source = probed.source.as_str(),
            "window from the server"
        );
        let before = self.set_window(probed.tokens, source);
        self.state.probe.unjournaled = Some((probed.tokens, source, before));
        self.journal_probed()?;
        Ok(true)
    }

    /// Journals the stated window in use once the session has entries of its own.
    fn journal_probed(&mut self) -> Result<(), EngineError> {
        if self.journal().len() <= 1 {
            return Ok(());
        }
        let Some((window, source, before)) = self.state.probe.unjournaled.take() else {
            return Ok(());
        };
        if self.state.budget.limits().window != window
            || self.state.budget.limits().window_source != source
        {
            // Replaced since (an overflow, a configured window): nothing stated is in use.
            return Ok(());
        }
        let from = source.probe().map_or("the server", |p| p.describe());
        let text = format!("the server's window is {window} tokens (from {from})");
        self.append_window(window, source, before, Level::Info, text)
    }
}
