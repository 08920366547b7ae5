//! The session as compaction's conversation port ([`crate::compaction::port::Conversation`]):
//! each method hands compaction's shell one part of the session — its journal, budget, counts,
//! hooks, subagents — and nothing more, through the session's own methods. The session stays the
//! owner of all of it; this file only decides what the shell may reach, so the shell never names
//! `Session`. It lives here, in the layer that owns the port, not in `session/`: the port, the
//! hooks and the subagents' list all sit above the session (docs/architecture.md, *Layers*), so
//! the adapter looks down at the session and the session imports none of them.

use std::path::Path;

use codewhale_journal::{Entry, Journal, Trigger, View, ViewItem};
use codewhale_protocol::Event;
use codewhale_provider::{Client, ToolSpec};

use crate::budget::{Budget, WindowSource};
use crate::compaction::note::Running;
use crate::compaction::port::{Conversation, PortFuture};
use crate::config::Config;
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::redact::Redactor;
use crate::session::Session;

impl Conversation for Session {
    fn journal(&self) -> &Journal {
        Session::journal(self)
    }

    fn render(&self) -> View {
        Session::render(self)
    }

    fn append_entry(&mut self, entry: Entry) -> Result<(), EngineError> {
        Session::append_entry(self, entry)
    }

    fn sync(&self) -> PortFuture<'_, Result<(), EngineError>> {
        Box::pin(Session::sync(self))
    }

    fn sync_detached(&self) -> Result<(), EngineError> {
        Session::sync_detached(self)
    }

    fn budget(&self) -> &Budget {
        Session::budget(self)
    }

    fn budget_mut(&mut self) -> &mut Budget {
        Session::budget_mut(self)
    }

    fn known_tokens(&self, item: &ViewItem) -> Option<u32> {
        Session::known_tokens(self, item)
    }

    fn settle_counts(&mut self) {
        Session::settle_counts(self);
    }

    fn learn_window(&mut self, window: u64, source: WindowSource) -> Result<(), EngineError> {
        Session::learn_window(self, window, source)
    }

    fn usage_event(&mut self, reported_input: Option<u64>, output: Option<u64>) -> Event {
        Session::usage_event(self, reported_input, output)
    }

    fn probe_before_request(&mut self) -> PortFuture<'_, Result<bool, EngineError>> {
        Box::pin(Session::probe_before_request(self))
    }

    fn workspace(&self) -> &Path {
        Session::workspace(self)
    }

    fn config(&self) -> &Config {
        Session::config(self)
    }

    fn model(&self) -> &str {
        Session::model(self)
    }

    fn summarizer_model(&self) -> String {
        Session::summarizer_model(self)
    }

    fn live_plan(&self) -> Option<crate::plan::Plan> {
        Session::live_plan(self)
    }

    fn running(&self) -> Vec<Running> {
        self.background()
            .running()
            .into_iter()
            .map(|r| Running { command: r.command, pid: r.pid, ports: r.ports })
            .collect()
    }

    fn skill_of_file(&self, path: &Path) -> Option<(String, String)> {
        let skill = self.commands().skill_of_file(path)?;
        Some((skill.name.clone(), skill.file.display().to_string()))
    }

    fn subagents_listed(&self, calls: &[&str]) -> Vec<(String, String)> {
        crate::children::listed(self, calls)
    }

    fn redactor(&self) -> &Redactor {
        Session::redactor(self)
    }

    fn client(&self) -> &Client {
        Session::client(self)
    }

    fn system_prompt(&self) -> &SystemPrompt {
        Session::system_prompt(self)
    }

    fn tool_specs(&self) -> Vec<ToolSpec> {
        Session::tool_specs(self)
    }

    fn summary_spend(&self) -> &crate::spend::Meter {
        &self.spend().summaries
    }

    fn refresh_system_prompt(&mut self) {
        Session::refresh_system_prompt(self);
    }

    fn one_turn(&self) -> bool {
        Session::one_turn(self)
    }

    fn compact_hint(&self) -> String {
        self.hints().compact()
    }

    fn compact_with_focus_hint(&self) -> String {
        self.hints().compact_with_focus()
    }

    fn pre_compact<'a>(&'a mut self, trigger: &'a Trigger) -> PortFuture<'a, Option<String>> {
        Box::pin(crate::hooks::pre_compact(self, trigger))
    }

    fn post_compact<'a>(&'a mut self, note: &'a str, trigger: &'a Trigger) -> PortFuture<'a, ()> {
        Box::pin(crate::hooks::post_compact(self, note, trigger))
    }

    fn latest_post_compact(&self) -> Option<String> {
        crate::hooks::latest_post_compact(self)
    }
}
