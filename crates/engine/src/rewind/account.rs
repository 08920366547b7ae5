//! The account of a restore (docs/journal-format.md, *The file store*): the `system` entry the
//! user reads — with the intent's id and the files it left for a forced run — and the note
//! that tells the model which files came back. Written by a restore as it ends, and by the
//! completion of one a kill interrupted ([`super::intent`]); one that changed nothing writes
//! nothing.

use codewhale_journal::{Level, SystemPayload, UserPayload};

use crate::checkpoint::restore::Planned;
use crate::error::EngineError;
use crate::session::Session;
use codewhale_protocol::RestoreOutcome;

/// Journals a restore's outcome (nothing when it did nothing): the `system` entry, with the
/// files it left for a forced run, and, when files came back, the note to the model.
pub(crate) fn record(
    session: &mut Session,
    plan: &[Planned],
    outcome: &RestoreOutcome,
    when: &str,
    intent: &str,
) -> Result<(), EngineError> {
    if is_empty(outcome) {
        return Ok(());
    }
    let level = if outcome.skipped.is_empty() && outcome.failed.is_empty() {
        Level::Info
    } else {
        Level::Warning
    };
    let mut entry = SystemPayload::new(level, outcome_line(outcome, when));
    entry.restore_id = Some(intent.to_owned()).filter(|id| !id.is_empty());
    let left: Vec<_> = plan
        .iter()
        .filter(|p| outcome.skipped.contains(&p.path))
        .map(Planned::left_change)
        .collect();
    entry.left = Some(left).filter(|l| !l.is_empty());
    session.append(entry)?;
    if !outcome.restored.is_empty() {
        session.append(UserPayload::synthetic(model_note(plan, outcome, when)))?;
    }
    Ok(())
}

/// The one-line account of a restore the user reads (and the `system` entry holds).
pub fn outcome_line(outcome: &RestoreOutcome, when: &str) -> String {
    let mut parts = Vec::new();
    if outcome.restored.is_empty() {
        parts.push(format!("no file was restored to its content {when}"));
    } else {
        let n = outcome.restored.len();
        let files = if n == 1 { "file" } else { "files" };
        parts.push(format!(
            "restored {n} {files} to their content {when}: {}",
            outcome.restored.join(", ")
        ));
    }
    let elsewhere: Vec<&str> = outcome
        .skipped
        .iter()
        .filter(|p| !outcome.protected.contains(p))
        .map(String::as_str)
        .collect();
    if !elsewhere.is_empty() {
        parts.push(format!(
            "left {} changed by someone else since: {}",
            elsewhere.len(),
            elsewhere.join(", ")
        ));
    }
    if !outcome.protected.is_empty() {
        parts.push(format!(
            "left {} protected (git, Codewhale or instruction files are written back only with \
             a yes): {}",
            outcome.protected.len(),
            outcome.protected.join(", ")
        ));
    }
    for (path, why) in &outcome.failed {
        parts.push(format!("could not restore {path}: {why}"));
    }
    parts.join("; ")
}

fn model_note(plan: &[Planned], outcome: &RestoreOutcome, when: &str) -> String {
    let removed = |path: &String| plan.iter().any(|p| &p.path == path && p.target.is_none());
    let written: Vec<&str> =
        outcome.restored.iter().filter(|p| !removed(p)).map(String::as_str).collect();
    let gone: Vec<&str> =
        outcome.restored.iter().filter(|p| removed(p)).map(String::as_str).collect();
    let mut text = format!("The user took files back to their content {when}.");
    if !written.is_empty() {
        text.push_str(&format!(" Restored: {}.", written.join(", ")));
    }
    if !gone.is_empty() {
        text.push_str(&format!(" Removed (they did not exist then): {}.", gone.join(", ")));
    }
    text.push_str(
        " What you read or wrote in these files earlier may no longer be there; read a file \
         again before relying on its content.",
    );
    text
}

/// The outcome of a restore that found nothing to do.
fn is_empty(outcome: &RestoreOutcome) -> bool {
    outcome.restored.is_empty() && outcome.skipped.is_empty() && outcome.failed.is_empty()
}
