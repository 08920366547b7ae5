//! The engine's answers to the user's questions, shown as views or notices: the grants, the
//! MCP servers, the branch points and tips, the models, the workspace's diff, `/status`,
//! `/context` and the anchors. A picker opens only for the question it answers (the outbox
//! says which submission asked).

use codewhale_protocol::{
    AnchorInfo, BranchInfo, ContextReport, McpStatus, ModelChoice, SpendReport, StatusReport,
    UserMessageInfo, WorkspaceTrust,
};

use super::app::{App, Pending};
use super::cells::{short_tokens, NoticeKind};
use super::views::{Choice, ChoiceView, TextView, ViewAction, ViewKind};

impl App {
    pub(super) fn on_workspace_diff(&mut self, diff: &str, files: u64, since: &str) {
        if files == 0 {
            self.notice(NoticeKind::Info, format!("no changes since {since}"));
            return;
        }
        let lines = diff
            .lines()
            .map(|l| {
                let style = super::diff_cell::diff_style(l);
                ratatui::text::Line::styled(l.to_owned(), style)
            })
            .collect();
        let s = if files == 1 { "" } else { "s" };
        let title = format!("{files} file{s} changed since {since}");
        self.views.push(TextView::from_lines(title, lines));
    }

    /// `/status`, or `/cost` when that is what asked: its cost section alone.
    pub(super) fn on_status(&mut self, status: &StatusReport, pending: Option<Pending>) {
        if pending == Some(Pending::Cost) {
            self.views.push(TextView::new("cost", &cost_text(&status.spend)))
        } else {
            self.views.push(TextView::new("status", &status_text(status)))
        }
    }

    pub(super) fn on_context_report(&mut self, report: &ContextReport) {
        self.views.push(TextView::new("context", &context_text(report)))
    }

    /// The answer to `/anchor list`; the list the engine sends after a change says nothing
    /// (the change itself was shown).
    pub(super) fn on_anchors(&mut self, anchors: &[AnchorInfo], pending: Option<Pending>) {
        if pending != Some(Pending::ListAnchors) {
            return;
        }
        if anchors.is_empty() {
            self.notice(NoticeKind::Info, "no anchors; /anchor <text> pins one");
        } else {
            self.notice(NoticeKind::Info, anchors_text(anchors));
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
