//! What the session tells its front end about itself, and the changes that make it say so
//! again: the budget's figures ([`Session::usage_event`]), `/status`, the model choices, and the
//! journaled changes a reopened session must replay — model switches, learned windows, HEAD
//! moves. The answers built from the layers above the session (the context report, anchors,
//! history pages) are `crate::answers`.
//!
//! Invariant: every figure comes from [`Session::budget`]; the report's total and the usage
//! event's pressure are the same number with the same label, and a reopened session (or
//! `codewhale context`) replays the same budget from the journal ([`super::replay`]).

use codewhale_journal::{flags, Entry, Level, Payload, SystemPayload};

use super::{counts, replay, Session};
use crate::budget::WindowSource;
use crate::error::EngineError;
use codewhale_protocol::{Event, ModelChoice, StatusReport, UserMessageInfo, WorkspaceTrust};

/// Characters of a message shown in a branch picker.
const PREVIEW_CHARS: usize = 100;

impl Session {
    /// The session's blob store, where the images of its messages are
    /// (`<session-id>.blobs/`).
    pub fn blob_dir(&self) -> std::path::PathBuf {
        codewhale_journal::blob::blob_dir(self.state.journal.path())
    }

    /// Whether the current model refused images in this run.
    pub fn images_refused(&self) -> bool {
        self.state.images_refused.as_deref() == Some(self.model())
    }

    /// In a small window, what to say when the project instructions and MCP tool schemas push
    /// the fixed prefix past a fifth of the window (they are never cut: the user decides).
    pub fn crowded_prefix(&self) -> Option<String> {
        let window = self.state.budget.limits().window;
        let prefix = self.state.budget.calibrated(self.state.budget.system_tokens());
        (self.compact_prefix() && prefix * 5 > window).then(|| {
            format!(
                "the system prompt, the project instructions and the tool schemas take about \
                 {prefix} of this model's {window}-token window ({} %), leaving the conversation \
                 less room; shorten AGENTS.md or .codewhale/instructions.md, turn off MCP \
                 servers this work does not need, or use a larger window",
                prefix * 100 / window.max(1)
            )
        })
    }

    /// The live plan at HEAD: the newest valid `update_plan` call on its spine. Following a
    /// growing conversation reads only the entries since the last answer.
    pub fn live_plan(&self) -> Option<crate::plan::Plan> {
        let journal = self.state.journal.journal();
        let head = journal.head_position();
        let mut cache = match self.state.plan.lock() {
            Ok(cache) => cache,
            Err(poisoned) => poisoned.into_inner(),
        };
        let found = crate::plan::live_plan(journal, head, cache.as_ref());
        let plan = found.plan.clone();
        *cache = Some(found);
        plan
    }

    /// How many characters a `recall` result may hold: what the budget leaves under the
    /// auto-compaction threshold, at a conservative three characters a token (calibrated), so
    /// reading back never pushes the next request over the threshold by itself.
    pub fn recall_room_chars(&self) -> usize {
        let budget = self.budget();
        let room = budget.limits().threshold.saturating_sub(budget.pressure().tokens);
        let tokens = crate::budget::from_provider(room as f64, budget.calibration());
        usize::try_from(tokens.saturating_mul(3)).unwrap_or(usize::MAX)
    }

    /// The [`Event::Plan`] of HEAD's live plan; `updated` when a call just set it.
    pub fn plan_event(&self, updated: bool) -> Event {
        Event::Plan { plan: self.live_plan(), updated }
    }

    /// Sets the budget to what the journal implies for HEAD's view: its total, the provider's
    /// last report for this branch, the calibration. At open and after every HEAD move.
    pub fn replay_budget(&mut self) {
        // A long session never compacted is summed from its index, not rendered whole.
        let journal = self.state.journal.journal();
        let total =
            match codewhale_journal::view_total_from_index(journal, journal.head_id().as_str()) {
                Some(total) => total,
                None => {
                    let view = self.render();
                    self.view_tokens(&view)
                }
            };
        let limits = *self.state.budget.limits();
        let system = self.state.budget.system();
        let journal = self.state.journal.journal();
        let counts = &self.state.counts;
        let exact = crate::tokens::is_ready();
        let mut count = |e: &Entry| -> u64 {
            e.tokens.or_else(|| counts.get(&e.id)).map(u64::from).unwrap_or_else(|| {
                counts::Counted::of_payload(&e.payload).map_or(0, |c| {
                    if exact {
                        u64::from(c.exact())
                    } else {
                        c.upper()
                    }
                })
            })
        };
        self.state.budget = replay::replay(journal, limits, system, total, &mut count);
    }

    /// The [`Event::Usage`] of the budget as it stands.
    pub fn usage_event(&mut self, reported_input: Option<u64>, output: Option<u64>) -> Event {
        self.settle_figures();
        let budget = self.budget();
        let limits = budget.limits();
        Event::Usage {
            reported_input,
            output,
            pressure: budget.shown(),
            usable_input: limits.usable_input,
            threshold: limits.threshold,
            window: limits.window,
            window_unverified: limits.is_unverified(),
            model: self.model().to_owned(),
        }
    }

    /// `/status`: the session at a glance.
    pub fn status_report(&mut self) -> StatusReport {
        self.settle_figures();
        let limits = *self.state.budget.limits();
        let trust = match &self.settings.config.untrusted {
            Some(u) => WorkspaceTrust::Untrusted { ignored: u.keys.clone() },
            None if crate::config::workspace_file(&self.settings.workspace).is_file() => {
                WorkspaceTrust::Applied
            }
            None => WorkspaceTrust::NoSettings,
        };
        StatusReport {
            session: self.id().to_owned(),
            path: self.path().display().to_string(),
            workspace: self.settings.workspace.display().to_string(),
            model: self.model().to_owned(),
            context_window: limits.window,
            window_unverified: limits.is_unverified(),
            window_from: limits.window_source.probe().map(|p| p.describe().to_owned()),
            usable_input: limits.usable_input,
            pressure: self.state.budget.shown(),
            approval: self.settings.policy.mode(),
            trust,
            sandbox: self.sandbox_report(),
            compactions: self.state.journal.journal().compactions().count(),
            spend: self.spend_report(),
        }
    }

    /// Tokens and money this run and the session spent.
    fn spend_report(&self) -> codewhale_protocol::SpendReport {
        let (replies, summaries) =
            (self.state.spend.replies.read(), self.state.spend.summaries.read());
        let recorded = codewhale_journal::session_cost_usd(self.path()).unwrap_or_else(|e| {
            tracing::warn!("cannot sum the session's recorded costs: {e}");
            0.0
        });
        // Summary requests are not in the file; this run's count with it.
        let session_cost_usd = recorded + summaries.priced_usd;
        let price = self.price();
        codewhale_protocol::SpendReport {
            requests: replies.requests,
            input_tokens: replies.input_tokens,
            output_tokens: replies.output_tokens,
            cost_usd: replies.cost_usd(),
            summary_requests: summaries.requests,
            summary_cost_usd: summaries.cost_usd(),
            session_cost_usd,
            price: price.map(|p| (p.input, p.cached_input.unwrap_or(p.input), p.output)),
            prices_read: price.map(|_| codewhale_provider::prices_read().to_owned()),
        }
    }

    /// The catalog's models for `/model`'s picker, the current one marked. A window nobody
    /// knows is 0 (the picker shows `?`): the current model's too when the session only
    /// guesses it (an unverified default).
    pub async fn model_choices(&self) -> Vec<ModelChoice> {
        let current = self.model().to_owned();
        let is_current = |id: &str| id.eq_ignore_ascii_case(&current);
        let limits = self.state.budget.limits();
        let current_window = if limits.is_unverified() { 0 } else { limits.window };
        let window = |id: &str| {
            if is_current(id) {
                current_window
            } else {
                let known = codewhale_provider::lookup_model(id);
                if known.verified {
                    known.context_window
                } else {
                    0
                }
            }
        };
        // A local server's own models first (what it can actually run), then the catalog's.
        let mut choices: Vec<ModelChoice> = self
            .client()
            .list_models()
            .await
            .into_iter()
            .map(|id| ModelChoice {
                current: is_current(&id),
                context_window: window(&id),
                id,
                from_server: true,
            })
            .collect();
        for (id, context_window) in codewhale_provider::catalog_models() {
            if !choices.iter().any(|c| c.id.eq_ignore_ascii_case(&id)) {
                choices.push(ModelChoice {
                    current: is_current(&id),
                    id,
                    context_window,
                    from_server: false,
                });
            }
        }
        if !choices.iter().any(|c| c.current) {
            // A model neither lists: still shown, and marked.
            choices.insert(
                0,
                ModelChoice {
                    id: current,
                    context_window: current_window,
                    current: true,
                    from_server: false,
                },
            );
        }
        choices
    }

    /// The plain user messages of HEAD's branch, oldest first (what `/rewind` and `/fork`
    /// pick from).
    pub fn user_messages(&self) -> Vec<UserMessageInfo> {
        let journal = self.state.journal.journal();
        journal
            .spine_positions(journal.head_position())
            .into_iter()
            .filter(|&p| journal.has_flags(p, flags::PLAIN))
            .map(|p| journal.read_entry(p))
            .filter_map(|e| match &e.payload {
                Payload::User(u) if u.is_plain() => {
                    let text: String =
                        u.content.iter().filter_map(|b| b.as_text()).collect::<Vec<_>>().join(" ");
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
                    let preview: String = first.chars().take(PREVIEW_CHARS).collect();
                    Some(UserMessageInfo { id: e.id.to_string(), preview, when: e.ts.to_string() })
                }
                _ => None,
            })
            .collect()
    }

    /// Switches the model for the next request; the window follows the new model. Journaled
    /// (a `system` entry with `model`), so a reopened session and `codewhale context` replay it.
    pub fn switch_model(&mut self, model: &str) -> Result<(), EngineError> {
        self.settings.provider.model = model.to_owned();
        self.state.budget.set_limits(replay::limits_for(&self.settings.config, model, None));
        self.refresh_system_prompt();
        self.journal_model_switch(model, None)?;
        // The server may run the new model with a window of its own.
        self.start_probe();
        Ok(())
    }

    /// Journals that requests use `model` from here on (`how`: the flag that switched, when not
    /// `/model`), a `system` entry with `model`, which a reopened session and `codewhale
    /// context` replay.
    pub(crate) fn journal_model_switch(
        &mut self,
        model: &str,
        how: Option<&str>,
    ) -> Result<(), EngineError> {
        let text = match how {
            Some(how) => format!("model switched to {model} ({how})"),
            None => format!("model switched to {model}"),
        };
        let mut notice = SystemPayload::new(Level::Info, text);
        notice.model = Some(model.to_owned());
        let parent = self.state.journal.journal().head_id().clone();
        self.append_entry(Entry::new(Some(parent), notice))
    }

    /// A window learned for this session and model (a provider's overflow error, a silent
    /// cut, a local server's answer) replaces `W` for the rest of the session, journaled (a
    /// `system` entry with `context_window`, `window_source` and `window_before`) so a reopened
    /// session, `exec --last` and `codewhale context` use it too.
    pub fn learn_window(&mut self, window: u64, source: WindowSource) -> Result<(), EngineError> {
        let text = match source {
            WindowSource::Probe(probe) => {
                format!("the server's window is {window} tokens (from {})", probe.describe())
            }
            _ => format!("the provider's window is {window} tokens; using it from now on"),
        };
        self.journal_window(window, source, Level::Info, text)
    }

    /// Sets the window and journals it with `text`.
    fn journal_window(
        &mut self,
        window: u64,
        source: WindowSource,
        level: Level,
        text: String,
    ) -> Result<(), EngineError> {
        let before = self.set_window(window, source);
        self.append_window(window, source, before, level, text)
    }

    /// Uses `window` from now on, without journaling it; returns the window it replaced: the
    /// one in use, unless that was itself learned (then the configured or catalog window it
    /// replaced).
    pub(crate) fn set_window(&mut self, window: u64, source: WindowSource) -> u64 {
        let current = self.state.budget.limits();
        let before = if current.window_source.is_learned() {
            replay::limits_for(&self.settings.config, &self.settings.provider.model, None).window
        } else {
            current.window
        };
        let limits = self.state.budget.limits().with_window(window, source);
        self.state.budget.set_limits(limits);
        // The prefix follows the window (compact in a small one).
        self.refresh_system_prompt();
        before
    }

    /// Journals the window in use: a `system` entry with `context_window`, `window_source`
    /// and `window_before`.
    pub(crate) fn append_window(
        &mut self,
        window: u64,
        source: WindowSource,
        before: u64,
        level: Level,
        text: String,
    ) -> Result<(), EngineError> {
        let mut notice = SystemPayload::new(level, text);
        notice.context_window = Some(window);
        notice.window_source = Some(source.as_str().to_owned());
        notice.window_before = Some(before);
        let parent = self.state.journal.journal().head_id().clone();
        self.append_entry(Entry::new(Some(parent), notice))
    }

    /// The server silently cut a request estimated at `estimate` to `kept` tokens
    /// ([`crate::truncation`]): the window it runs the model with from now on is the one the
    /// server states (Ollama's `/api/ps`, llama.cpp's `/props`, asked now, at most 800 ms a
    /// question), else the count it reported; journaled with its source so a reopened session
    /// keeps it. Returns the window learned and whether the server stated it.
    pub async fn learn_cut_window(
        &mut self,
        kept: u64,
        estimate: u64,
    ) -> Result<(u64, Option<codewhale_provider::ProbeSource>), EngineError> {
        let stated = self.services.client.probe_window(&self.settings.provider.model).await;
        let (window, source, said) = match &stated {
            Some(probed) => (
                probed.tokens,
                WindowSource::Probe(probed.source),
                format!("as {} states", probed.source.describe()),
            ),
            None => (kept, WindowSource::Truncation, "the count it reported".to_owned()),
        };
        self.journal_window(
            window,
            source,
            Level::Warning,
            format!(
                "the server kept only {kept} tokens of a request estimated at {estimate} \
                 (silent truncation); its window is taken as {window} tokens from now on \
                 ({said})"
            ),
        )?;
        Ok((window, stated.map(|p| p.source)))
    }
}
