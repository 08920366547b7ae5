//! What the passes — foreground and background — and the triggers share over a session: the
//! summary output budget, whether an auto pass can help now, composing a note from a summary,
//! the backoff's session side, and the warning a pass leaves. Below [`super::pass`],
//! [`super::background`] and [`super::triggers`], which all call it; it calls none of them.

use super::note::{self, LiveState, NoteInput, Running};
use crate::protocol::{Event, NoticeLevel};
use crate::session::Session;

/// Output budget of a summary request: room for a 12,000-character note with headroom.
const SUMMARY_MAX_OUTPUT: u64 = 8_192;

/// The output budget of a summary request under `limits`.
pub(crate) fn summary_max_output(limits: &crate::budget::Limits) -> u32 {
    SUMMARY_MAX_OUTPUT.min(limits.reserved_output).max(1) as u32
}

/// Growth (as a fraction of usable input) after which an auto pass is tried again when the last
/// pass could not get below the threshold.
const REGROWTH_FRACTION: f64 = 0.1;

/// How much the conversation must grow before a held-back auto pass is tried again.
fn regrowth(session: &Session) -> u64 {
    (session.budget().limits().usable_input as f64 * REGROWTH_FRACTION) as u64
}

/// Whether an auto pass can help now. Not when the active record already could not get below
/// the threshold (the user's own protected messages fill the window) and the conversation has
/// not grown by a tenth of usable input since: that pass would summarize next to nothing, on
/// every turn. Reactive and manual passes are never held back.
pub(crate) fn auto_worthwhile(session: &Session) -> bool {
    let limits = *session.budget().limits();
    let pressure = session.budget().pressure().tokens;
    let view = session.render();
    let Some(after) = view.compaction.as_ref().and_then(|c| c.record.tokens_after) else {
        return true;
    };
    after < limits.threshold || pressure >= after + regrowth(session)
}

/// The note of a summary pass: the summary plus what Codewhale knows itself (files touched by
/// the covered calls, background commands, the live state, the anchors).
pub(crate) async fn build_note(
    session: &Session,
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
    let running: Vec<Running> = session
        .background()
        .running()
        .into_iter()
        .map(|r| Running { command: r.command, pid: r.pid, ports: r.ports })
        .collect();
    // `git` is a child process: keep it off the async workers.
    let workspace = session.workspace().to_path_buf();
    let live = tokio::task::spawn_blocking(move || LiveState::capture(&workspace))
        .await
        .unwrap_or_else(|_| LiveState {
            workspace: session.workspace().display().to_string(),
            branch: None,
            commit: None,
        });
    let plan = session.live_plan().map(|p| crate::plan::section(&p));
    let text = note::compose(&NoteInput {
        summary,
        files: &files,
        running: &running,
        live: &live,
        anchors,
        plan: plan.as_deref(),
    });
    (text, files)
}

/// Emits a notice for this pass.
pub(crate) fn warn(emit: &(dyn Fn(Event) + Send + Sync), message: String) {
    emit(Event::Notice { level: NoticeLevel::Warning, message });
}

/// Called when the summarizer failed: hold auto passes back, and say so once per streak.
pub(crate) fn summary_failed(
    session: &mut Session,
    reason: &str,
    emit: &(dyn Fn(Event) + Send + Sync),
) {
    if super::backoff::failed(&mut session.compaction.summary_backoff) {
        warn(
            emit,
            format!(
                "the model could not write a usable summary ({reason}); automatic compaction \
                 now waits a few turns between attempts (longer after each failure), and \
                 meanwhile each request leaves out the oldest messages that do not fit (the \
                 journal keeps them); {} asks again at any time",
                session.hints.compact()
            ),
        );
    }
}

/// Whether auto passes are holding back after failed summaries.
pub(crate) fn backing_off(session: &Session) -> bool {
    super::backoff::holding(session.compaction.summary_backoff)
}
