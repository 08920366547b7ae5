//! What a pass reads of the conversation it is lent (the [`super::port::Conversation`] port):
//! the note's own part and the room an auto pass aims at, the target a background note must
//! reach, the background commands and skills a note restates, the live state (asking `git`), the
//! summary request limit, the note composed around a summary, the warning a pass leaves, and the
//! window a summary request rejected as too long teaches (journaled, by a pass or a background
//! note alike). The arithmetic these feed is the pure core's (`codewhale_compaction::budget`,
//! `pass_plan`); the standing they never touch is the [`super::standing::Standing`]. Below
//! [`super::pass`], [`super::background`] and the standing, which call it; it calls none of them.

use super::note::{self, LiveState, NoteInput};
use crate::compaction::port::Conversation;
use codewhale_protocol::{Event, NoticeLevel};

/// The note's own part, in tokens — what Codewhale adds around the model's summary (header,
/// files touched, plan, running commands, live state, anchors, closing) — composed without a
/// summary and without asking git (a branch and a commit of usual length stand in).
pub(crate) fn note_fixed_tokens(
    session: &dyn Conversation,
    covered: &[super::message::Message],
    previous: Option<&codewhale_journal::ActiveCompaction>,
    anchors: Option<&str>,
) -> u64 {
    let previous_files = previous.map(|c| c.record.files_touched.clone()).unwrap_or_default();
    let files = note::files_touched(covered, &previous_files);
    let running = session.running();
    let live = LiveState {
        workspace: session.workspace().display().to_string(),
        branch: Some("main".to_owned()),
        commit: Some("0123456789ab".to_owned()),
    };
    let text = compose(session, covered, "", &files, &running, &live, anchors);
    u64::from(crate::session::counts::exact(&text))
}

/// What an auto pass on `plain` aims to leave (docs/compaction.md, *The cut*: a pass buys
/// room), and the median turn it must leave room for, in estimated tokens.
pub(crate) fn room(
    session: &dyn Conversation,
    plain: &super::plain::PlainView,
    previous: Option<&codewhale_journal::ActiveCompaction>,
    anchors: Option<&str>,
    to_come: u64,
) -> (super::pass_plan::Room, u64) {
    let budget = session.budget();
    let limits = *budget.limits();
    let turns = super::pass_plan::turn_sizes(session.journal(), plain);
    let median = super::pass_plan::median_turn(&turns);
    let aim = super::pass_plan::aim(limits.threshold, budget.calibrated(median), turns.len());
    // The note's own part as the widest cut would make it: files touched by everything before
    // the round.
    let policy = limits.cut_policy(budget.calibration());
    let round_start = policy.round(&plain.messages, &plain.tokens).map_or(0, |r| r.start);
    let covered = &plain.messages[..round_start.min(plain.messages.len())];
    let note = note_fixed_tokens(session, covered, previous, anchors)
        + codewhale_compaction::budget::note_budget_tokens(&limits.note_window());
    let fixed = budget.system_tokens() + note;
    (super::pass_plan::Room { aim, fixed, to_come }, median)
}

/// What the view a background note yields must be at or below to be committed, in provider
/// tokens: the aim of an auto pass when its snapshot was planned to reach it; otherwise —
/// not even the smallest view could be at the aim — the threshold less one median turn, the
/// room a foreground pass would have to leave before it paid for a request of its own.
pub(crate) fn commit_target(
    session: &dyn Conversation,
    plain: &super::plain::PlainView,
    previous: Option<&codewhale_journal::ActiveCompaction>,
    anchors: Option<&str>,
    reaches_aim: bool,
) -> u64 {
    let (room, median) = room(session, plain, previous, anchors, 0);
    if reaches_aim {
        return room.aim;
    }
    let budget = session.budget();
    budget.limits().threshold.saturating_sub(budget.calibrated(median)).max(room.aim)
}

/// Summary requests one pass may send: `compaction.max_summary_requests`, default
/// [`super::summary_input::DEFAULT_MAX_REQUESTS`].
pub(crate) fn max_summary_requests(session: &dyn Conversation) -> u32 {
    session
        .config()
        .compaction
        .max_summary_requests
        .unwrap_or(super::summary_input::DEFAULT_MAX_REQUESTS)
        .max(1)
}

/// The covered `task` calls with their children, as the note lists them (docs/subagents.md).
fn subagents(
    session: &dyn Conversation,
    covered: &[super::message::Message],
) -> Vec<(String, String)> {
    use super::message::Part;
    let calls: Vec<&str> = covered
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            Part::ToolUse { id, name, .. } if name == crate::tools::task::TOOL => Some(id.as_str()),
            _ => None,
        })
        .collect();
    session.subagents_listed(&calls)
}

/// The skills whose `SKILL.md` a covered call read, with the path to read again.
fn skills_read(
    session: &dyn Conversation,
    covered: &[super::message::Message],
) -> Vec<(String, String)> {
    let workspace = session.workspace().to_path_buf();
    let skill_of = |raw: &str| {
        let path = std::path::Path::new(raw);
        let path = if path.is_absolute() { path.to_owned() } else { workspace.join(path) };
        session.skill_of_file(&path)
    };
    note::skills_read(covered, &skill_of)
}

/// The note of a summary pass: the summary plus what Codewhale knows itself (files touched by
/// the covered calls, background commands, the live state, the anchors).
pub(crate) async fn build_note(
    session: &dyn Conversation,
    covered: &[super::message::Message],
    previous: Option<&codewhale_journal::ActiveCompaction>,
    summary: &str,
    anchors: Option<&str>,
) -> (String, note::FilesTouched) {
    let previous_files = previous.map(|c| c.record.files_touched.clone()).unwrap_or_default();
    let mut files = note::files_touched(covered, &previous_files);
    // Tools accept absolute paths inside the workspace; list every file the same way.
    for (path, _) in &mut files.entries {
        if let Ok(rel) = std::path::Path::new(path.as_str()).strip_prefix(session.workspace()) {
            *path = rel.display().to_string();
        }
    }
    let running = session.running();
    // `git` is a child process: keep it off the async workers.
    let workspace = session.workspace().to_path_buf();
    let live = tokio::task::spawn_blocking(move || capture_live_state(&workspace))
        .await
        .unwrap_or_else(|_| LiveState {
            workspace: session.workspace().display().to_string(),
            branch: None,
            commit: None,
        });
    let text = compose(session, covered, summary, &files, &running, &live, anchors);
    (text, files)
}

/// The note around `summary`: the parts given, and what the conversation itself restates (the
/// live plan, the skills and subagents the covered calls used, the latest PostCompact output).
/// One composition serves the note's own part (an empty summary) and the note a pass writes,
/// so the room reserved for the one is the size of the other.
fn compose(
    session: &dyn Conversation,
    covered: &[super::message::Message],
    summary: &str,
    files: &note::FilesTouched,
    running: &[note::Running],
    live: &LiveState,
    anchors: Option<&str>,
) -> String {
    let plan = session.live_plan().map(|p| crate::plan::section(&p));
    let skills = skills_read(session, covered);
    let subagents = subagents(session, covered);
    let hooks = session.latest_post_compact();
    note::compose(&NoteInput {
        summary,
        files,
        running,
        live,
        anchors,
        plan: plan.as_deref(),
        skills: &skills,
        subagents: &subagents,
        hooks: hooks.as_deref(),
    })
}

/// Emits a notice for this pass.
/// Asks `git` about `workspace`. A missing `git` or a directory outside a repository just
/// leaves the fields empty: the stamp says so rather than failing the pass.
pub(crate) fn capture_live_state(workspace: &std::path::Path) -> LiveState {
    let git = |args: &[&str]| -> Option<String> {
        let out =
            std::process::Command::new("git").arg("-C").arg(workspace).args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let text = text.trim();
        (out.status.success() && !text.is_empty()).then(|| text.to_owned())
    };
    LiveState {
        workspace: workspace.display().to_string(),
        branch: git(&["symbolic-ref", "--short", "-q", "HEAD"]),
        commit: git(&["rev-parse", "--short", "HEAD"]),
    }
}

pub(crate) fn warn(emit: &(dyn Fn(Event) + Send + Sync), message: String) {
    emit(Event::Notice { level: NoticeLevel::Warning, message });
}

/// A summary request was rejected as too long: the window it teaches replaces the session's,
/// journaled, and the user is told once, in one sentence.
pub(crate) fn learned_from_summary(
    session: &mut dyn Conversation,
    window: u64,
    source: crate::budget::WindowSource,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> Result<(), crate::error::EngineError> {
    let how = if source == crate::budget::WindowSource::Overflow {
        "its window".to_owned()
    } else {
        "90 % of that request, since the error named no window,".to_owned()
    };
    warn(
        emit,
        format!(
            "the provider rejected the summary request as too long; Codewhale takes {how} \
             {window} tokens from now on and writes the note under it"
        ),
    );
    session.learn_window(window, source)?;
    emit(session.usage_event(None, None));
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn live_state_outside_a_repository_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let live = super::capture_live_state(dir.path());
        assert_eq!(live.branch, None);
        assert!(live.stamp().contains("not a git repository"));
    }
}
