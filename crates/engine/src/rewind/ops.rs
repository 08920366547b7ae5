//! The engine side of `/rewind`, `/fork`, `/undo` and `codewhale rewind`: where HEAD goes, which
//! files come back, and what is journaled (docs/journal-format.md, *The file store*).
//!
//! Rules: going back to a user message puts HEAD before it and hands its text back to the
//! composer, so it is never merged into the next prompt; any other entry (without `before`)
//! keeps HEAD at it. Code is taken back from the entries after where HEAD goes, which must be
//! on the current branch. A restore that changed something is journaled as a `system` entry
//! (for the user) and a synthetic user text (for the model) on the new HEAD; one that changed
//! nothing writes nothing, so restoring twice is harmless.

use codewhale_journal::{BranchError, EntryId, Journal, Payload};

use super::account::{outcome_line, record};
use super::intent::{self, Intent};
use crate::checkpoint::restore::{self, Planned};
use crate::error::EngineError;
use crate::session::Session;
use codewhale_protocol::{RestoreOutcome, TakeBack};

/// Where a rewind or fork to an entry lands.
#[derive(Debug, Clone)]
pub(crate) struct Landing {
    /// HEAD's new position.
    pub head: EntryId,
    /// The text of the user message HEAD went back before, for the composer.
    pub text: Option<String>,
}

/// Where going back to `to` puts HEAD: before a plain user message (or before anything, with
/// `before`), else at the entry.
pub(crate) fn landing(journal: &Journal, to: &str, before: bool) -> Result<Landing, BranchError> {
    let id = journal.resolve_entry(to)?;
    let entry = journal.get(id.as_str()).ok_or_else(|| BranchError::NotFound(id.clone()))?;
    let text = match &entry.payload {
        Payload::User(u) if u.is_plain() => {
            Some(u.content.iter().filter_map(|b| b.as_text()).collect::<Vec<_>>().join("\n"))
        }
        _ => None,
    };
    if text.is_none() && !before {
        return Ok(Landing { head: id, text: None });
    }
    let parent = entry
        .parent
        .clone()
        .filter(|p| journal.get(p.as_str()).is_some())
        .ok_or_else(|| BranchError::NotFound(id.clone()))?;
    Ok(Landing { head: parent, text })
}

/// Where the stretch after `from` on HEAD's spine starts (`None` for `from`: the last turn);
/// `Ok(None)` when there is no such stretch.
fn stretch_start(session: &Session, from: Option<&EntryId>) -> Result<Option<u32>, String> {
    let journal = session.journal();
    Ok(match from {
        Some(id) => {
            if !journal.is_ancestor(id.as_str(), journal.head_id().as_str()) {
                return Err(format!(
                    "entry {id} is not on the current branch; the code can be taken back only \
                     to an entry of this branch (check it out first)"
                ));
            }
            let spine = journal.spine_positions(journal.head_position());
            let at = journal.position(id.as_str()).unwrap_or(0);
            Some(match spine.iter().position(|&p| p == at) {
                Some(i) => spine.get(i + 1).copied().unwrap_or(u32::MAX),
                None => u32::MAX,
            })
        }
        None => restore::last_turn_start(journal),
    })
}

/// The restore plan for the code changed after `from` on HEAD's spine (`None`: the last turn).
pub(crate) fn plan_after(
    session: &Session,
    from: Option<&EntryId>,
) -> Result<Vec<Planned>, String> {
    let Some(start) = stretch_start(session, from)? else { return Ok(Vec::new()) };
    let changes = restore::changes_from(session.journal(), start);
    Ok(restore::plan(&changes, session.workspace(), &session.file_store()))
}

/// Outside a git work tree, commands are not checkpointed: the line that says what a restore
/// after `from` cannot take back, when commands ran in that stretch.
pub(crate) fn unkept_commands(session: &Session, from: Option<&EntryId>) -> Option<String> {
    let start = stretch_start(session, from).ok().flatten()?;
    let n = restore::commands_from(session.journal(), start);
    if n == 0
        || crate::checkpoint::snapshot::Snapshots::find(&session.file_store(), session.workspace())
            .is_some()
    {
        return None;
    }
    let commands = if n == 1 { "1 command" } else { &format!("{n} commands") };
    Some(format!(
        "{commands} ran since then; what they changed cannot be taken back, as commands are \
         checkpointed only in a git work tree (`git init` makes this one)"
    ))
}

/// Applies `plan` and journals what changed: a `system` entry and a synthetic user text on
/// HEAD. Returns the outcome (empty when nothing needed restoring). `intent` is the id of the
/// intent written before (the entry carries it).
pub(crate) fn restore_and_record(
    session: &mut Session,
    plan: &[Planned],
    force: bool,
    when: &str,
    intent: Option<&str>,
) -> Result<RestoreOutcome, EngineError> {
    let outcome = restore::apply(
        plan,
        session.workspace(),
        &session.file_store(),
        restore::Consent::of_user(force),
    );
    crate::pause_point::reached("restore:files");
    record(session, plan, &outcome, when, intent.unwrap_or_default())?;
    Ok(outcome)
}

/// Writes down what a restore is about to do before it does it ([`super::intent`]); `None`
/// when the plan changes nothing on disk (a HEAD move alone is one append, atomic already).
fn write_intent(
    session: &Session,
    plan: &[Planned],
    when: &str,
    head: Option<super::intent::HeadMove>,
    force: bool,
) -> Result<Option<Intent>, EngineError> {
    if !super::intent::has_work(plan) {
        return Ok(None);
    }
    let mut intent = Intent::new(session, when, head, plan);
    intent.force = force;
    intent.write(&session.file_store()).map_err(|source| EngineError::Intent { source })?;
    crate::pause_point::reached("restore:intent");
    Ok(Some(intent))
}

/// What the engine task hands over: a branch op or a restore op, with its submission.
pub(crate) struct Request<'a> {
    pub session: &'a mut Session,
    pub sink: &'a crate::events::EventSink,
    pub id: codewhale_protocol::SubmissionId,
}

/// One rewind, fork, take-back or undo: everything it changes is on disk before the front end
/// is told.
#[derive(Debug, Clone)]
pub(crate) struct Move {
    pub to: String,
    pub take: TakeBack,
    pub fork: bool,
    pub before: bool,
    pub force: bool,
}

impl Request<'_> {
    fn error(&self, kind: codewhale_protocol::ErrorKind, message: String) {
        self.sink.emit(self.id, codewhale_protocol::Event::Error { kind, message });
    }

    fn notice(&self, level: codewhale_protocol::NoticeLevel, message: String) {
        self.sink.emit(self.id, codewhale_protocol::Event::Notice { level, message });
    }

    /// `Op::PreviewRestore`.
    pub(crate) fn preview(self, to: Option<String>) {
        let from = match to.as_deref().map(|t| landing(self.session.journal(), t, false)) {
            Some(Ok(l)) => Some(l.head),
            Some(Err(e)) => {
                return self.error(codewhale_protocol::ErrorKind::Branch, e.to_string())
            }
            None => None,
        };
        match plan_after(self.session, from.as_ref()) {
            Ok(plan) => self.sink.emit(
                self.id,
                codewhale_protocol::Event::RestorePreview { to, files: restore::shown(&plan) },
            ),
            Err(message) => self.error(codewhale_protocol::ErrorKind::Branch, message),
        }
    }

    /// `Op::Rewind`, `Op::Fork` and `Op::TakeBack`.
    pub(crate) async fn take_back(mut self, m: Move) {
        use codewhale_protocol::Event;
        let Prepared { landed, plan, unkept } = match self.prepare(&m) {
            Ok(prepared) => prepared,
            Err((kind, message)) => return self.error(kind, message),
        };
        let old = self.session.journal().head_id().clone();
        let when = format!("before {}", short(&m.to));
        let outcome = match self.make_move(&m, &landed, &plan, &when).await {
            Ok(o) => o,
            Err(err) => return self.error(err.kind(), err.to_string()),
        };
        self.session.replay_budget();
        // The new view first, then what happened (a front end shows it under the view), then
        // the text for the composer.
        let page = crate::answers::history_page(
            self.session,
            None,
            crate::history_pages::FIRST_PAGE,
            true,
        );
        self.sink.emit(self.id, Event::History { page });
        let (level, lines) = moved_lines(outcome.as_ref(), plan.is_empty(), &when, unkept);
        self.announce(&m, level, lines);
        if let Some(outcome) = outcome {
            self.sink.emit(self.id, Event::FilesRestored { outcome });
        }
        self.sink.emit(self.id, self.session.usage_event(None, None));
        if let Some(text) = landed.text.filter(|_| m.take.conversation()) {
            self.sink.emit(self.id, Event::ComposerText { text });
        }
        if m.take.conversation() {
            crate::branch_summary::after_move(self.session, self.sink, self.id, &old);
        }
    }

    /// Where the move lands and, when it takes code back, the files to restore and the line
    /// about commands it cannot take back; or why it cannot be made. Checked before anything
    /// changes.
    fn prepare(&self, m: &Move) -> Result<Prepared, (codewhale_protocol::ErrorKind, String)> {
        use codewhale_protocol::ErrorKind;
        let landed = match landing(self.session.journal(), &m.to, m.before) {
            Ok(l) => l,
            Err(e) => return Err((ErrorKind::Branch, e.to_string())),
        };
        let journal = self.session.journal();
        // A rewind stays on this branch; checked before anything changes.
        if !m.fork && !journal.is_ancestor(landed.head.as_str(), journal.head_id().as_str()) {
            return Err((ErrorKind::Branch, BranchError::NotOnSpine(landed.head).to_string()));
        }
        let plan = if m.take.code() {
            match plan_after(self.session, Some(&landed.head)) {
                Ok(plan) => plan,
                Err(message) => return Err((ErrorKind::Branch, message)),
            }
        } else {
            Vec::new()
        };
        let unkept =
            if m.take.code() { unkept_commands(self.session, Some(&landed.head)) } else { None };
        Ok(Prepared { landed, plan, unkept })
    }

    /// Moves HEAD (a rewind or a fork) and restores the files, the intent written first and
    /// everything durable before it returns; the restore's outcome when code was taken back.
    async fn make_move(
        &mut self,
        m: &Move,
        landed: &Landing,
        plan: &[Planned],
        when: &str,
    ) -> Result<Option<RestoreOutcome>, EngineError> {
        let head = m
            .take
            .conversation()
            .then(|| intent::HeadMove { to: landed.head.clone(), fork: m.fork });
        let mut outcome = None;
        let written = if m.take.code() {
            write_intent(self.session, plan, when, head, m.force)?
        } else {
            None
        };
        if m.take.conversation() {
            let j = self.session.journal();
            let record =
                if m.fork { j.fork(landed.head.as_str()) } else { j.rewind(landed.head.as_str()) }?;
            self.session.append_entry(record)?;
            crate::pause_point::reached("restore:head");
        }
        if m.take.code() {
            let id = written.as_ref().map(|i| i.id.as_str());
            outcome = Some(restore_and_record(self.session, plan, m.force, when, id)?);
        }
        durable(self.session, written.is_some()).await?;
        Ok(outcome)
    }

    /// Tells the front end what the move did: a HEAD move with its lines, or (code alone) a
    /// notice.
    fn announce(&self, m: &Move, level: codewhale_protocol::NoticeLevel, mut lines: Vec<String>) {
        use codewhale_protocol::{Event, HeadMove};
        if m.take.conversation() {
            let verb = if m.fork { "forked at" } else { "rewound to" };
            let head = self.session.journal().head_id().to_string();
            lines.push(format!("{verb} {head}"));
            let how = if m.fork { HeadMove::Fork } else { HeadMove::Rewind };
            let message = lines.join("\n");
            self.sink.emit(self.id, Event::HeadMoved { how, head, level, message });
        } else {
            self.notice(level, lines.join("\n"));
        }
    }

    /// `Op::RestoreBranchFiles`: the files HEAD's branch changed after `from`, brought to the
    /// content it last gave them ([`super::branch_files`]).
    pub(crate) async fn restore_branch(self, from: String, force: bool) {
        use codewhale_protocol::{ErrorKind, Event, NoticeLevel};
        let from = match self.session.journal().resolve_entry(&from) {
            Ok(id) => id,
            Err(e) => return self.error(ErrorKind::Branch, e.to_string()),
        };
        let plan = match super::branch_files::plan(self.session, &from) {
            Ok(plan) => plan,
            Err(message) => return self.error(ErrorKind::Branch, message),
        };
        let when = super::branch_files::WHEN;
        let done = async {
            let written = write_intent(self.session, &plan, when, None, force)?;
            let id = written.as_ref().map(|i| i.id.as_str());
            let outcome = restore_and_record(self.session, &plan, force, when, id)?;
            durable(self.session, written.is_some()).await?;
            Ok::<_, EngineError>(outcome)
        }
        .await;
        let outcome = match done {
            Ok(o) => o,
            Err(err) => return self.error(err.kind(), err.to_string()),
        };
        self.session.replay_budget();
        let nothing =
            outcome.restored.is_empty() && outcome.skipped.is_empty() && outcome.failed.is_empty();
        let (level, line) = if nothing {
            (
                NoticeLevel::Info,
                "nothing to restore: the files already hold what this branch gave them".to_owned(),
            )
        } else if outcome.skipped.is_empty() && outcome.failed.is_empty() {
            (NoticeLevel::Info, outcome_line(&outcome, when))
        } else {
            (NoticeLevel::Warning, outcome_line(&outcome, when))
        };
        if !nothing {
            // The view gained the note to the model: the new page first, the notice under it.
            let page = crate::answers::history_page(
                self.session,
                None,
                crate::history_pages::FIRST_PAGE,
                true,
            );
            self.sink.emit(self.id, Event::History { page });
            self.sink.emit(self.id, self.session.usage_event(None, None));
        }
        self.notice(level, line);
        self.sink.emit(self.id, Event::FilesRestored { outcome });
    }

    /// `Op::Undo`: the last turn's file changes.
    pub(crate) async fn undo(self, force: bool) {
        use codewhale_protocol::{ErrorKind, Event, NoticeLevel};
        let plan = match plan_after(self.session, None) {
            Ok(plan) => plan,
            Err(message) => return self.error(ErrorKind::Branch, message),
        };
        let unkept = unkept_commands(self.session, None);
        if plan.is_empty() {
            let mut line = "nothing to undo: the last turn changed no files".to_owned();
            let level = match &unkept {
                Some(unkept) => {
                    line = format!("nothing to undo that was checkpointed; {unkept}");
                    NoticeLevel::Warning
                }
                None => NoticeLevel::Info,
            };
            return self.notice(level, line);
        }
        let when = "before the last turn";
        let done = async {
            let written = write_intent(self.session, &plan, when, None, force)?;
            let id = written.as_ref().map(|i| i.id.as_str());
            let outcome = restore_and_record(self.session, &plan, force, when, id)?;
            durable(self.session, written.is_some()).await?;
            Ok::<_, EngineError>(outcome)
        }
        .await;
        let outcome = match done {
            Ok(o) => o,
            Err(err) => return self.error(err.kind(), err.to_string()),
        };
        self.session.replay_budget();
        let nothing =
            outcome.restored.is_empty() && outcome.skipped.is_empty() && outcome.failed.is_empty();
        let (mut level, mut line) = if nothing {
            (
                NoticeLevel::Info,
                "nothing to undo: the files are already as they were before the last turn"
                    .to_owned(),
            )
        } else if outcome.skipped.is_empty() && outcome.failed.is_empty() {
            (NoticeLevel::Info, outcome_line(&outcome, "before the last turn"))
        } else {
            (NoticeLevel::Warning, outcome_line(&outcome, "before the last turn"))
        };
        if let Some(unkept) = unkept {
            level = NoticeLevel::Warning;
            line = format!("{line}; {unkept}");
        }
        if !nothing {
            // The view gained the note to the model: the new page first, the notice under it.
            let page = crate::answers::history_page(
                self.session,
                None,
                crate::history_pages::FIRST_PAGE,
                true,
            );
            self.sink.emit(self.id, Event::History { page });
            self.sink.emit(self.id, self.session.usage_event(None, None));
        }
        self.notice(level, line);
        self.sink.emit(self.id, Event::FilesRestored { outcome });
    }
}

/// What a move checked it can make, before it makes it ([`Request::take_back`]).
struct Prepared {
    landed: Landing,
    plan: Vec<Planned>,
    unkept: Option<String>,
}

/// The lines that say what a move did to the files (`outcome`, when code was taken back) and
/// what it could not take back, with their level: a warning when something was skipped,
/// failed or cannot be taken back.
fn moved_lines(
    outcome: Option<&RestoreOutcome>,
    nothing_planned: bool,
    when: &str,
    unkept: Option<String>,
) -> (codewhale_protocol::NoticeLevel, Vec<String>) {
    use codewhale_protocol::NoticeLevel;
    let mut lines = Vec::new();
    let mut level = NoticeLevel::Info;
    if let Some(outcome) = outcome {
        if !outcome.skipped.is_empty() || !outcome.failed.is_empty() {
            level = NoticeLevel::Warning;
        }
        lines.push(if nothing_planned {
            "no tool changed a file after that point; the code stays as it is".to_owned()
        } else {
            outcome_line(outcome, when)
        });
    }
    if let Some(line) = unkept {
        level = NoticeLevel::Warning;
        lines.push(line);
    }
    (level, lines)
}

/// An entry id as messages show it (ids are long UUIDs; the first 13 characters are what the
/// pickers show).
fn short(id: &str) -> String {
    format!("entry {}", id.chars().take(13).collect::<String>())
}

/// A restore is done: the journal is synced, then the intent (when one was written) removed, so
/// a kill before the sync still finds it.
async fn durable(session: &mut Session, intent_written: bool) -> Result<(), EngineError> {
    session.sync().await?;
    if intent_written {
        intent::clear(&session.file_store());
    }
    Ok(())
}
