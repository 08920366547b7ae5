//! The conversation port: everything compaction's shell reads of, and writes to, the
//! conversation it compacts — and nothing else. The shell ([`super::pass`], [`super::commit`],
//! [`super::conversation`], [`super::background`], [`super::triggers`]) takes a
//! `&dyn Conversation` / `&mut dyn Conversation`, never the session itself; the session
//! implements the port in `session_port.rs`, beside it. The summarizer's port is
//! [`super::summarize::Summarizer`] (client, model, spend), built once per pass from this one.
//!
//! The port is a trait object rather than a struct of borrowed parts because the shell both
//! reads and appends across `.await` points (a pass appends its record, runs hooks, syncs):
//! one exclusive borrow of one object keeps those borrows as simple as `&mut Session` was.
//!
//! What it offers, by group:
//! - the journal: [`Conversation::journal`], [`Conversation::render`] (the view at the head),
//!   [`Conversation::append_entry`] (redacted, the only write), [`Conversation::sync`],
//!   [`Conversation::sync_detached`];
//! - the budget and counts: [`Conversation::budget`], [`Conversation::budget_mut`],
//!   [`Conversation::known_tokens`], [`Conversation::settle_counts`],
//!   [`Conversation::learn_window`], [`Conversation::usage_event`],
//!   [`Conversation::probe_before_request`];
//! - what a note and a summary request restate: [`Conversation::workspace`],
//!   [`Conversation::config`], [`Conversation::model`], [`Conversation::summarizer_model`],
//!   [`Conversation::live_plan`], [`Conversation::running`], [`Conversation::skill_of_file`],
//!   [`Conversation::subagents_listed`], [`Conversation::redactor`], and for the summarizer
//!   [`Conversation::client`], [`Conversation::system_prompt`], [`Conversation::tool_specs`],
//!   [`Conversation::summary_spend`];
//! - the session around it: [`Conversation::refresh_system_prompt`], [`Conversation::one_turn`],
//!   [`Conversation::compact_hint`], [`Conversation::compact_with_focus_hint`], and the `PreCompact`/`PostCompact` hooks
//!   ([`Conversation::pre_compact`], [`Conversation::post_compact`],
//!   [`Conversation::latest_post_compact`]).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use codewhale_journal::{Entry, Journal, Trigger, View, ViewItem};
use codewhale_protocol::Event;
use codewhale_provider::{Client, ToolSpec};

use super::note::Running;
use crate::budget::{Budget, WindowSource};
use crate::config::Config;
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::redact::Redactor;

/// A future the port returns, borrowing the conversation for its length.
pub type PortFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What compaction's shell may read of and write to the conversation it compacts.
pub trait Conversation: Send + Sync {
    /// The journal, read-only.
    fn journal(&self) -> &Journal;
    /// The view the next request would be built from (the journal rendered at its head).
    fn render(&self) -> View;
    /// Appends `entry` to the journal, redacted first.
    fn append_entry(&mut self, entry: Entry) -> Result<(), EngineError>;
    /// Makes what was appended durable.
    fn sync(&self) -> PortFuture<'_, Result<(), EngineError>>;
    /// Starts making what was appended durable without waiting; the next sync reports a
    /// failure.
    fn sync_detached(&self) -> Result<(), EngineError>;

    /// The context budget: limits, calibration, pressure.
    fn budget(&self) -> &Budget;
    fn budget_mut(&mut self) -> &mut Budget;
    /// The exact token count of `item` when one is known.
    fn known_tokens(&self, item: &ViewItem) -> Option<u32>;
    /// Folds the exact counts finished since the last call into the budget.
    fn settle_counts(&mut self);
    /// Journals a window the provider taught (an overflow error, a probe).
    fn learn_window(&mut self, window: u64, source: WindowSource) -> Result<(), EngineError>;
    /// The usage event the front ends show after a change of context.
    fn usage_event(&mut self, reported_input: Option<u64>, output: Option<u64>) -> Event;
    /// Asks the server its window before a request when it is not yet known; whether the
    /// window changed.
    fn probe_before_request(&mut self) -> PortFuture<'_, Result<bool, EngineError>>;

    fn workspace(&self) -> &Path;
    fn config(&self) -> &Config;
    /// The conversation's model.
    fn model(&self) -> &str;
    /// The model that writes notes (`compaction_model`, else the conversation's).
    fn summarizer_model(&self) -> String;
    /// The plan as it stands at the head.
    fn live_plan(&self) -> Option<crate::plan::Plan>;
    /// The background commands still alive.
    fn running(&self) -> Vec<Running>;
    /// The active skill whose `SKILL.md` is `path`: its name and file.
    fn skill_of_file(&self, path: &Path) -> Option<(String, String)>;
    /// The subagents behind the `task` calls `calls`, as the note lists them.
    fn subagents_listed(&self, calls: &[&str]) -> Vec<(String, String)>;
    fn redactor(&self) -> &Redactor;
    fn client(&self) -> &Client;
    fn system_prompt(&self) -> &SystemPrompt;
    fn tool_specs(&self) -> Vec<ToolSpec>;
    /// Where what summary requests cost is counted.
    fn summary_spend(&self) -> &crate::spend::Meter;

    /// Loads the system prompt again (a pass may have changed what it holds).
    fn refresh_system_prompt(&mut self);
    /// The conversation runs a single turn (the command line), not a chat.
    fn one_turn(&self) -> bool;
    /// How the user asks for a pass in this front end.
    fn compact_hint(&self) -> String;
    /// The same, with a focus the user may add.
    fn compact_with_focus_hint(&self) -> String;
    /// Runs the `PreCompact` hooks; why they skipped the pass, if one did.
    fn pre_compact<'a>(&'a mut self, trigger: &'a Trigger) -> PortFuture<'a, Option<String>>;
    /// Runs the `PostCompact` hooks on the committed note.
    fn post_compact<'a>(&'a mut self, note: &'a str, trigger: &'a Trigger) -> PortFuture<'a, ()>;
    /// What the latest `PostCompact` hook said, for the next note.
    fn latest_post_compact(&self) -> Option<String>;
}
