//! Running a slash command: each [`SlashCommand`] becomes an engine op, an effect for the
//! event loop, or a view; and the results of those effects become views or notices.
//!
//! Invariant: a command that is not allowed while a turn runs is refused with a notice and
//! never reaches the engine (which would refuse it too, less clearly).

use codewhale_engine::offline::import::{Candidate, Tool};
use codewhale_engine::Resume;
use codewhale_protocol::{Op, RestoreFile, RestoreState, TakeBack};

use super::app::{App, Lifecycle, Pending};
use super::cells::NoticeKind;
use super::event::{AppEvent, Effect};
use super::restore_view::{RestoreTarget, RestoreView};
use super::slash::{self, Invocation, SlashCommand};
use super::views::{Choice, ChoiceView, SessionPicker, TextView, ViewAction};

impl App {
    /// Runs a typed command: refused while the engine works unless it may run then,
    /// otherwise one step per command.
    pub(crate) fn run_command(&mut self, inv: Invocation) {
        let cmd = inv.command;
        if self.refused_during_turn(cmd) {
            return;
        }
        let args = inv.args;
        match cmd {
            SlashCommand::Compact => self.compact(args),
            SlashCommand::Context => self.report(Op::GetContext, "the context report"),
            SlashCommand::Anchor => self.anchor(&args),
            SlashCommand::New => self.effects.push(Effect::OpenSession(Resume::New)),
            SlashCommand::Clear => self.clear(),
            SlashCommand::Diff => self.report(Op::GetDiff, "the diff"),
            SlashCommand::Init => self.init(&args),
            SlashCommand::Resume if args.is_empty() => {
                self.effects.push(Effect::LoadSessions { all: false })
            }
            SlashCommand::Resume => self.effects.push(Effect::OpenSession(Resume::Id(args))),
            SlashCommand::Sessions => self.effects.push(Effect::LoadSessions { all: true }),
            SlashCommand::Import => self.import(&args),
            SlashCommand::Checkout if args.is_empty() => {
                self.expect_answer(Op::ListBranches, Pending::TipPick)
            }
            SlashCommand::Fork | SlashCommand::Rewind if args.is_empty() => {
                let fork = cmd == SlashCommand::Fork;
                self.expect_answer(Op::ListUserMessages, Pending::BranchPick { fork })
            }
            SlashCommand::Approval if args.is_empty() => {
                self.submit(Op::ListGrants);
            }
            SlashCommand::Approval => self.set_approval(&args),
            SlashCommand::Mcp => {
                self.submit(Op::ListMcpServers);
            }
            SlashCommand::Btw => self.btw(args),
            SlashCommand::Fork => self.ask_what_to_take_back(args, true),
            SlashCommand::Checkout => self.move_head(Op::Checkout { to: args }),
            SlashCommand::Rewind => self.ask_what_to_take_back(args, false),
            SlashCommand::Undo => self.undo(),
            SlashCommand::Model if args.is_empty() => {
                self.submit(Op::ListModels);
            }
            SlashCommand::Status => {
                self.submit(Op::GetStatus);
            }
            SlashCommand::Cost => self.expect_answer(Op::GetStatus, Pending::Cost),
            SlashCommand::Export => self.export(args),
            SlashCommand::Trust => self.effects.push(Effect::AskTrust),
            SlashCommand::Model => {
                // The status line follows the engine's next usage figures, not the request.
                self.submit(Op::SwitchModel { model: args });
            }
            SlashCommand::Help => self.help(),
            SlashCommand::Quit | SlashCommand::Exit => self.quit(),
        }
    }

    /// A command that may not run while the engine works is refused with why, and what to do.
    fn refused_during_turn(&mut self, cmd: SlashCommand) -> bool {
        if !self.lifecycle.busy() || cmd.allowed_during_turn() {
            return false;
        }
        let what = if self.lifecycle.turn_running() { "a turn" } else { "a compaction" };
        self.notice(
            NoticeKind::Warning,
            format!(
                "/{} is not available while {what} runs; wait for it to finish or press Ctrl+C",
                cmd.name()
            ),
        );
        true
    }

    /// Asks the engine for a report (`/context`, `/diff`); asked while it works, the report
    /// follows when the work ends, which is said.
    fn report(&mut self, op: Op, what: &str) {
        if self.submit(op).is_some() && self.lifecycle.busy() {
            self.notice(NoticeKind::Info, format!("{what} follows when this ends"));
        }
    }

    /// Sends `op` and remembers what its answer is for.
    fn expect_answer(&mut self, op: Op, pending: Pending) {
        if let Some(id) = self.submit(op) {
            self.outbox.expect(id, pending);
        }
    }

    /// `/approval MODE`: switches to the mode, or says why the word is none.
    fn set_approval(&mut self, args: &str) {
        match args.parse::<codewhale_protocol::ApprovalMode>() {
            Ok(mode) => {
                self.submit(Op::SetApproval { mode });
            }
            Err(why) => self.notice(NoticeKind::Warning, why),
        }
    }

    /// `/btw QUESTION`: a side question, answered in an overlay while the status line says
    /// it runs.
    fn btw(&mut self, args: String) {
        if args.trim().is_empty() {
            self.notice(
                NoticeKind::Warning,
                "no question: type it after /btw, e.g. `/btw what does the parser return on EOF?`",
            );
            return;
        }
        if let Some(id) = self.submit(Op::SideQuestion { question: args.clone() }) {
            self.outbox.expect(id, Pending::SideQuestion);
            self.lifecycle = super::app::Lifecycle::RunningTool { name: "/btw".into() };
        }
    }

    /// `/compact [focus]`: busy from now on, so a message typed before the pass starts is
    /// queued too.
    fn compact(&mut self, args: String) {
        let focus = (!args.is_empty()).then_some(args);
        if let Some(id) = self.submit(Op::Compact { focus }) {
            self.lifecycle = Lifecycle::Compacting { in_turn: false };
            self.outbox.expect(id, Pending::Compact);
        }
    }

    /// `/clear`: a new conversation; that the old one is kept is said once the new one is on
    /// screen.
    fn clear(&mut self) {
        // Named once the new conversation is open, by a prefix that names it alone.
        let old = self.session.session_id.clone();
        self.session.kept = (!old.is_empty()).then_some(old);
        self.effects.push(Effect::OpenSession(Resume::New));
    }

    /// `/init [more]`: asks the model to write or update the instruction file.
    fn init(&mut self, args: &str) {
        // The workspace's own instruction file is the one written: CLAUDE.md when that is
        // the one read (no AGENTS.md beside it).
        let claude = self.session.instructions.iter().any(|n| n == "CLAUDE.md");
        let mut prompt = if claude {
            INIT_PROMPT.replace("AGENTS.md", "CLAUDE.md")
        } else {
            INIT_PROMPT.to_owned()
        };
        if !args.is_empty() {
            prompt.push_str(&format!("\n\nAlso: {args}"));
        }
        let message = super::app::Outgoing { text: prompt, attachments: Vec::new() };
        if !self.send_message(message) {
            self.notice(NoticeKind::Warning, "no session is open to take /init");
        }
    }

    fn import(&mut self, args: &str) {
        match args.trim() {
            "claude" => self.effects.push(Effect::LoadImports(Tool::Claude)),
            "codex" => self.effects.push(Effect::LoadImports(Tool::Codex)),
            _ => self.notice(NoticeKind::Warning, "usage: /import claude | codex"),
        }
    }

    /// `/undo`: first what a restore would touch; the question follows.
    fn undo(&mut self) {
        if let Some(id) = self.submit(Op::PreviewRestore { to: None }) {
            self.outbox.expect(id, Pending::Restore(RestoreTarget::Undo));
        }
    }

    fn help(&mut self) {
        let text = slash::help_text(self.screen.keyboard_enhanced, &self.session.commands);
        self.views.push(TextView::new("help", &text))
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

/// A row of the `/import` picker: when, how big, and the first prompt.
fn import_label(c: &Candidate) -> String {
    let when = chrono::DateTime::<chrono::Utc>::from(c.modified).format("%Y-%m-%d %H:%M");
    let kib = c.size.div_ceil(1024);
    let prompt = c.first_prompt.as_deref().unwrap_or("(no prompt found)");
    format!("{when}  {kib:>7} KiB  {prompt}")
}

/// What `/init` asks the model (our own words, in `assets/prompts/init.md`).
const INIT_PROMPT: &str = include_str!("../../../../assets/prompts/init.md");
