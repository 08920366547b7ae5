//! Running a slash command: each [`SlashCommand`] becomes an engine op, an effect for the
//! event loop, or a view; and the results of those effects become views or notices.
//!
//! Invariant: a command that is not allowed while a turn runs is refused with a notice and
//! never reaches the engine (which would refuse it too, less clearly).

use codewhale_engine::offline::import::{Candidate, Tool};
use codewhale_engine::Resume;
use codewhale_protocol::{
    AnchorInfo, BranchInfo, ContextReport, McpStatus, ModelChoice, Op, RestoreFile, RestoreState,
    SpendReport, StatusReport, TakeBack, UserMessageInfo, WorkspaceTrust,
};

use super::app::{App, Lifecycle, Pending};
use super::cells::{short_tokens, NoticeKind};
use super::event::{AppEvent, Effect};
use super::restore_view::{RestoreTarget, RestoreView};
use super::slash::{self, Invocation, SlashCommand};
use super::views::{Choice, ChoiceView, SessionPicker, TextView, ViewAction, ViewKind};

impl App {
    pub(crate) fn run_command(&mut self, inv: Invocation) {
        let cmd = inv.command;
        if self.lifecycle.busy() && !cmd.allowed_during_turn() {
            let what = if self.lifecycle.turn_running() { "a turn" } else { "a compaction" };
            self.notice(
                NoticeKind::Warning,
                format!(
                    "/{} is not available while {what} runs; wait for it to finish or press Ctrl+C",
                    cmd.name()
                ),
            );
            return;
        }
        let args = inv.args;
        match cmd {
            SlashCommand::Compact => {
                let focus = (!args.is_empty()).then_some(args);
                if let Some(id) = self.submit(Op::Compact { focus }) {
                    // Busy from now on: a message typed before the pass starts is queued too.
                    self.lifecycle = Lifecycle::Compacting { in_turn: false };
                    self.outbox.expect(id, Pending::Compact);
                }
            }
            SlashCommand::Context => {
                if self.submit(Op::GetContext).is_some() && self.lifecycle.busy() {
                    self.notice(NoticeKind::Info, "the context report follows when this ends");
                }
            }
            SlashCommand::Anchor => self.anchor(&args),
            SlashCommand::New => self.effects.push(Effect::OpenSession(Resume::New)),
            SlashCommand::Clear => {
                // Said once the new conversation is on screen, by a prefix that names it alone.
                let old = self.session.session_id.clone();
                self.session.kept = (!old.is_empty()).then_some(old);
                self.effects.push(Effect::OpenSession(Resume::New));
            }
            SlashCommand::Diff => {
                if self.submit(Op::GetDiff).is_some() && self.lifecycle.busy() {
                    self.notice(NoticeKind::Info, "the diff follows when this ends");
                }
            }
            SlashCommand::Init => {
                let mut prompt = INIT_PROMPT.to_owned();
                if !args.is_empty() {
                    prompt.push_str(&format!("\n\nAlso: {args}"));
                }
                let message = super::app::Outgoing { text: prompt, attachments: Vec::new() };
                if !self.send_message(message) {
                    self.notice(NoticeKind::Warning, "no session is open to take /init");
                }
            }
            SlashCommand::Resume if args.is_empty() => {
                self.effects.push(Effect::LoadSessions { all: false })
            }
            SlashCommand::Resume => self.effects.push(Effect::OpenSession(Resume::Id(args))),
            SlashCommand::Sessions => self.effects.push(Effect::LoadSessions { all: true }),
            SlashCommand::Import => match args.trim() {
                "claude" => self.effects.push(Effect::LoadImports(Tool::Claude)),
                "codex" => self.effects.push(Effect::LoadImports(Tool::Codex)),
                _ => self.notice(NoticeKind::Warning, "usage: /import claude | codex"),
            },
            SlashCommand::Checkout if args.is_empty() => {
                if let Some(id) = self.submit(Op::ListBranches) {
                    self.outbox.expect(id, Pending::TipPick);
                }
            }
            SlashCommand::Fork | SlashCommand::Rewind if args.is_empty() => {
                let fork = cmd == SlashCommand::Fork;
                if let Some(id) = self.submit(Op::ListUserMessages) {
                    self.outbox.expect(id, Pending::BranchPick { fork });
                }
            }
            SlashCommand::Approval if args.is_empty() => {
                self.submit(Op::ListGrants);
            }
            SlashCommand::Approval => match args.parse::<codewhale_protocol::ApprovalMode>() {
                Ok(mode) => {
                    self.submit(Op::SetApproval { mode });
                }
                Err(why) => self.notice(NoticeKind::Warning, why),
            },
            SlashCommand::Mcp => {
                self.submit(Op::ListMcpServers);
            }
            SlashCommand::Fork => self.ask_what_to_take_back(args, true),
            SlashCommand::Checkout => self.move_head(Op::Checkout { to: args }),
            SlashCommand::Rewind => self.ask_what_to_take_back(args, false),
            SlashCommand::Undo => {
                if let Some(id) = self.submit(Op::PreviewRestore { to: None }) {
                    self.outbox.expect(id, Pending::Restore(RestoreTarget::Undo));
                }
            }
            SlashCommand::Model if args.is_empty() => {
                self.submit(Op::ListModels);
            }
            SlashCommand::Status => {
                self.submit(Op::GetStatus);
            }
            SlashCommand::Cost => {
                if let Some(id) = self.submit(Op::GetStatus) {
                    self.outbox.expect(id, Pending::Cost);
                }
            }
            SlashCommand::Export => self.export(args),
            SlashCommand::Trust => self.effects.push(Effect::AskTrust),
            SlashCommand::Model => {
                // The status line follows the engine's next usage figures, not the request.
                self.submit(Op::SwitchModel { model: args });
            }
            SlashCommand::Help => {
                let text = slash::help_text(self.screen.keyboard_enhanced);
                self.views.push(TextView::new("help", &text))
            }
            SlashCommand::Quit | SlashCommand::Exit => self.quit(),
        }
    }

    /// `/rewind` or `/fork` to `to`: first the files a restore would touch; the question
    /// follows ([`App::on_restore_preview`]).
    pub(crate) fn ask_what_to_take_back(&mut self, to: String, fork: bool) {
        let op = Op::PreviewRestore { to: Some(to.clone()) };
        if let Some(id) = self.submit(op) {
            self.outbox.expect(id, Pending::Restore(RestoreTarget::Branch { to, fork }));
        }
    }

    /// The engine's preview: no file to take back goes straight to the conversation move
    /// (or says there is nothing to undo); otherwise the question.
    pub(crate) fn on_restore_preview(&mut self, files: Vec<RestoreFile>, pending: Option<Pending>) {
        let Some(Pending::Restore(target)) = pending else { return };
        let changed = files.iter().any(|f| f.state != RestoreState::Unchanged);
        match target {
            RestoreTarget::Branch { to, fork } if !changed => {
                let op = Op::TakeBack {
                    to,
                    take: TakeBack::Conversation,
                    fork,
                    before: false,
                    force: false,
                };
                self.move_head(op);
            }
            RestoreTarget::Undo if !changed => {
                let message = if files.is_empty() {
                    "nothing to undo: the last turn changed no files"
                } else {
                    "nothing to undo: the files are already as they were before the last turn"
                };
                self.notice(NoticeKind::Info, message);
            }
            target => self.views.push(RestoreView::new(target, files)),
        }
    }

    fn move_head(&mut self, op: Op) {
        if let Some(id) = self.submit(op) {
            self.outbox.expect(id, Pending::HeadBack);
        }
    }

    fn anchor(&mut self, args: &str) {
        let (word, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        match word {
            "" => {
                self.notice(NoticeKind::Warning, format!("usage: {}", SlashCommand::Anchor.usage()))
            }
            "list" if rest.trim().is_empty() => {
                if let Some(id) = self.submit(Op::ListAnchors) {
                    self.outbox.expect(id, Pending::ListAnchors);
                }
            }
            "rm" => match rest.trim().parse::<usize>() {
                Ok(index) if index > 0 => {
                    self.submit(Op::RemoveAnchor { index });
                }
                _ => self.notice(
                    NoticeKind::Warning,
                    "usage: /anchor rm <n>, with n as numbered by /anchor list",
                ),
            },
            // `/anchor add X`, as the command line spells it, pins X; `/anchor X` too.
            "add" if rest.trim().is_empty() => self.notice(
                NoticeKind::Warning,
                "usage: /anchor add <text> (or /anchor <text>): the note to pin",
            ),
            _ => {
                let text = if word == "add" { rest.trim().to_owned() } else { args.to_owned() };
                self.submit(Op::AddAnchor { text });
            }
        }
    }

    /// The results of effects the event loop ran.
    pub(crate) fn on_loaded(&mut self, event: AppEvent) {
        match event {
            AppEvent::SessionsLoaded { all, result: Ok(rows) } => {
                let title = if all { "sessions" } else { "resume a session of this workspace" };
                let mut picker = SessionPicker::new(title, rows);
                // At start-up with nothing open, leaving the picker starts a new session.
                picker.startup = self.session.session_id.is_empty();
                self.views.push(picker);
            }
            AppEvent::SessionOpening(bytes) => self.session.opening = bytes,
            AppEvent::ImportsLoaded { tool, result } if result.is_empty() => self.notice(
                NoticeKind::Warning,
                format!("{} stored no sessions for this workspace", tool.display_name()),
            ),
            AppEvent::ImportsLoaded { tool, result } => {
                let choices = result
                    .into_iter()
                    .map(|c| Choice { label: import_label(&c), action: ViewAction::Import(c.path) })
                    .collect();
                let title = format!("import a {} session of this workspace", tool.display_name());
                let view = ChoiceView::new(title, choices, "", "Enter import · Esc close");
                self.views.push(view);
            }
            AppEvent::Imported(Ok((id, report))) => {
                // Said here, and again under the imported conversation once it is open.
                self.notice(NoticeKind::Info, report.clone());
                self.paging.carried_notice = Some(report);
                self.effects.push(Effect::OpenSession(codewhale_engine::Resume::Id(id)));
            }
            AppEvent::Imported(Err(e)) => self.notice(NoticeKind::Error, e),
            AppEvent::KeptNamed(Some(prefix)) => self.notice(
                NoticeKind::Info,
                format!("the conversation {prefix} is kept: /resume {prefix} brings it back"),
            ),
            AppEvent::KeptNamed(None) => {}
            AppEvent::Exported(result) => self.on_exported(result),
            AppEvent::SessionsLoaded { result: Err(e), .. } | AppEvent::SessionOpenFailed(e) => {
                self.session.opening = None;
                self.notice(NoticeKind::Error, e)
            }
            AppEvent::Engine(_)
            | AppEvent::Input(_)
            | AppEvent::EngineGone
            | AppEvent::DraftEdited(_)
            | AppEvent::SuspendUnavailable
            | AppEvent::Tick(_)
            | AppEvent::FilesIndexed(_)
            | AppEvent::ClipboardImage(_) => {}
        }
    }
}

impl App {
    /// `/approval`: the mode and the grants; `d` revokes the chosen one.
    pub(crate) fn show_grants(
        &mut self,
        mode: codewhale_engine::ApprovalMode,
        grants: Vec<codewhale_protocol::Grant>,
        sandbox: codewhale_protocol::SandboxReport,
    ) {
        self.views.close(ViewKind::Grants);
        let choices = grants
            .into_iter()
            .enumerate()
            .map(|(i, grant)| Choice {
                label: format!("{}. always for {grant}", i + 1),
                action: ViewAction::Stay,
            })
            .collect();
        let view = ChoiceView::new(
            format!("approval mode {mode} · sandbox {} · grants for this session", sandbox.mode),
            choices,
            "no grants: every call asks as the mode says (\"a\" or \"p\" in an approval adds one)",
            &format!("d revoke · Esc close · sandbox: {}", sandbox.detail),
        )
        .grants();
        self.views.push(view);
    }

    /// `/mcp`: each server with its status, then its tools.
    pub(crate) fn show_mcp_servers(&mut self, servers: Vec<codewhale_protocol::McpServerInfo>) {
        self.views.close(ViewKind::McpServers);
        let mut choices = Vec::new();
        for server in servers {
            let state = match (&server.reason, server.status) {
                (Some(reason), _) => format!("failed: {reason}"),
                (None, McpStatus::Ready) => format!("ready with {} tools", server.tools.len()),
                (None, McpStatus::Starting) if server.cached => {
                    format!("starting ({} tools from its last listing)", server.tools.len())
                }
                (None, status) => status.word().to_owned(),
            };
            choices.push(Choice {
                label: format!("{} · {state} · {}", server.name, server.target),
                action: ViewAction::Stay,
            });
            for tool in server.tools {
                let read_only = if tool.read_only { " (runs without asking)" } else { "" };
                let description = tool.description.lines().next().unwrap_or_default().to_owned();
                choices.push(Choice {
                    label: format!("    {}{read_only} — {description}", tool.name),
                    action: ViewAction::Stay,
                });
            }
        }
        let view = ChoiceView::new(
            "MCP servers".to_owned(),
            choices,
            "no MCP servers: add [mcp_servers.NAME] tables to config.toml (see docs/mcp.md)",
            "Esc close",
        )
        .mcp_servers();
        self.views.push(view);
    }

    /// `/rewind` or `/fork` without an id: the earlier messages to choose from, newest last.
    pub(crate) fn show_branch_points(
        &mut self,
        messages: Vec<UserMessageInfo>,
        pending: Option<Pending>,
    ) {
        let Some(Pending::BranchPick { fork }) = pending else { return };
        if messages.is_empty() {
            // Nothing to go back to: a notice, and the composer keeps the keys (an empty
            // picker would swallow what is typed next).
            let what = if fork { "fork at" } else { "go back to" };
            self.notice(NoticeKind::Info, format!("no message to {what} yet"));
            return;
        }
        let choices = messages
            .into_iter()
            .map(|m| {
                let short: String =
                    m.id.chars().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
                let when = m.when.get(11..16).unwrap_or_default().to_owned();
                Choice {
                    label: format!("…{short}  {when}  {}", m.preview),
                    action: ViewAction::Branch { id: m.id, fork },
                }
            })
            .collect();
        let (title, footer) = if fork {
            ("fork: start a new branch at a message", "Enter fork here · Esc close")
        } else {
            ("rewind: go back to a message (it stays in the file)", "Enter rewind here · Esc close")
        };
        let view = ChoiceView::new(title, choices, "no messages yet", footer).at_end();
        self.views.push(view);
    }
}

impl App {
    /// `/checkout`'s picker: every branch tip with its newest message and age, newest first.
    pub(crate) fn show_branch_tips(&mut self, branches: Vec<BranchInfo>, pending: Option<Pending>) {
        let Some(Pending::TipPick) = pending else { return };
        let choices = branches
            .into_iter()
            .map(|b| {
                let here = if b.current { "  (HEAD is here)" } else { "" };
                Choice {
                    label: format!("{}{here}", crate::report_text::branch_label(&b)),
                    action: ViewAction::Checkout { id: b.tip },
                }
            })
            .collect();
        let view = ChoiceView::new(
            "checkout: switch to a branch (each tip, newest first)",
            choices,
            "no branches",
            "Enter check out · Esc close",
        );
        self.views.push(view);
    }
}

impl App {
    /// `/model`'s picker: a local server's own models (marked), then the catalog's, with their
    /// windows, the current one selected and marked.
    pub(crate) fn show_models(&mut self, models: Vec<ModelChoice>) {
        let current = models.iter().position(|m| m.current);
        let any_server = models.iter().any(|m| m.from_server);
        let keys = models.iter().map(|m| m.id.clone()).collect();
        let choices = models
            .into_iter()
            .map(|m| {
                let here = if m.current { "  (now)" } else { "" };
                let server = if m.from_server { "  server" } else { "" };
                let window = match m.context_window {
                    0 => "?".to_owned(),
                    w => short_tokens(w),
                };
                Choice {
                    label: format!("{:<28} {window:>5} window{server}{here}", m.id),
                    action: ViewAction::SwitchModel(m.id),
                }
            })
            .collect();
        let title = if any_server {
            "model: this server's models, then the catalog's (any other name: /model NAME)"
        } else {
            "model: the catalog's models (any other name: /model NAME)"
        };
        let mut view =
            ChoiceView::new(title, choices, "the catalog is empty", "Enter switch · Esc close")
                .filter_by(keys);
        if let Some(at) = current {
            view = view.selected(at);
        }
        self.views.push(view);
    }
}

/// `/status`: the session at a glance.
pub fn status_text(s: &StatusReport) -> String {
    let unverified = match &s.window_from {
        Some(from) => format!(" (from {from})"),
        None if s.window_unverified => " (unverified)".to_owned(),
        None => String::new(),
    };
    let trust = match &s.trust {
        WorkspaceTrust::NoSettings => "no workspace settings".to_owned(),
        WorkspaceTrust::Applied => "its settings apply".to_owned(),
        WorkspaceTrust::Untrusted { ignored } => {
            format!("not trusted: {} ignored", ignored.join(", "))
        }
    };
    let (spend, cost) = spend_lines(&s.spend);
    format!(
        "model        {}\nwindow       {}{unverified} · usable input {}\ncontext      {} tokens \
         ({}), {}% of usable input\napproval     {}\nworkspace    {}\ntrust        {trust}\n\
         sandbox      {} ({})\n{}session      {}\njournal      {}\ncompactions  {}\n\
         this run     {spend}\ncost         {cost}",
        s.model,
        s.context_window,
        s.usable_input,
        s.pressure.tokens,
        s.pressure.source.as_str(),
        s.pressure.percent_of(s.usable_input),
        s.approval.as_str(),
        s.workspace,
        s.sandbox.mode.as_str(),
        s.sandbox.detail,
        [&s.sandbox.structure, &s.sandbox.keys]
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| format!("             {l}\n"))
            .collect::<String>(),
        s.session,
        s.path,
        s.compactions,
    )
}

/// `/cost`: `/status`'s cost section alone.
pub fn cost_text(sp: &SpendReport) -> String {
    let (spend, cost) = spend_lines(sp);
    format!("this run     {spend}\ncost         {cost}")
}

/// What this run spent (requests, tokens and, when the model has a known price, dollars) and
/// what the whole session cost. A model without a known price shows tokens only: no dollar
/// figure, not even `$0.0000`, stands next to "no known price".
fn spend_lines(sp: &SpendReport) -> (String, String) {
    let priced = sp.price.is_some();
    let money = |cost: Option<f64>| match cost {
        Some(usd) if priced => format!(" · {}", crate::figures::dollars(usd)),
        _ => String::new(),
    };
    let mut spend = format!(
        "{} requests · {} tokens in · {} out{}",
        sp.requests,
        short_tokens(sp.input_tokens),
        short_tokens(sp.output_tokens),
        money(sp.cost_usd)
    );
    if sp.summary_requests > 0 {
        let s = if sp.summary_requests == 1 { "" } else { "s" };
        spend.push_str(&format!(
            "; {} summary request{s}{}",
            sp.summary_requests,
            money(sp.summary_cost_usd)
        ));
    }
    let cost = match (sp.price, &sp.prices_read) {
        (Some((input, cached, output)), Some(read)) => format!(
            "{} in all · price ${input}/${cached}/${output} per M tokens in/cached/out (read {read})",
            crate::figures::dollars(sp.session_cost_usd)
        ),
        _ if sp.session_cost_usd > 0.0 => format!(
            "{} in all · no known price for this model (tokens only)",
            crate::figures::dollars(sp.session_cost_usd)
        ),
        _ => "no known price for this model: tokens only ([pricing] in config.toml adds one)"
            .to_owned(),
    };
    (spend, cost)
}

/// `/anchor list`: each pinned note, numbered as `/anchor rm` takes it, and whether the model
/// reads it now.
pub fn anchors_text(anchors: &[AnchorInfo]) -> String {
    let mut out = String::from("anchors:");
    for a in anchors {
        let state =
            if a.in_view { "" } else { " (not in the view yet; the next checkpoint restates it)" };
        out.push_str(&format!(
            "\n{}. {}{state}",
            a.index,
            a.text.lines().next().unwrap_or_default()
        ));
    }
    out
}

/// The `/context` view: the engine's report in words, plus the view's entry ids (what
/// `/fork`, `/checkout` and `/rewind` take).
pub fn context_text(r: &ContextReport) -> String {
    let mut out = crate::report_text::human(r);
    out.push_str("\nview, in request order (entry id · kind · tokens):\n");
    for v in &r.view {
        out.push_str(&format!("  {} · {} · {}\n", v.id, v.kind, v.tokens));
    }
    out
}

/// A row of the `/import` picker: when, how big, and the first prompt.
fn import_label(c: &Candidate) -> String {
    let when = chrono::DateTime::<chrono::Utc>::from(c.modified).format("%Y-%m-%d %H:%M");
    let kib = c.size.div_ceil(1024);
    let prompt = c.first_prompt.as_deref().unwrap_or("(no prompt found)");
    format!("{when}  {kib:>7} KiB  {prompt}")
}

/// What `/init` asks the model (our own words, in `assets/prompts/init.md`).
const INIT_PROMPT: &str = include_str!("../../../../assets/prompts/init.md");
