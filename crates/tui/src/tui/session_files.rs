//! The session files the UI lists and imports, read off the UI task.

use super::views::SessionRow;
use super::TuiParams;

/// Sessions newest first: all of them, or those whose workspace is this one.
pub(super) fn session_rows(
    params: &TuiParams,
    all: bool,
    current: &str,
) -> Result<Vec<SessionRow>, String> {
    let dir = codewhale_engine::offline::sessions_dir(&params.home);
    let found = if all {
        codewhale_engine::offline::sessions(&dir).map(|l| l.sessions)
    } else {
        codewhale_engine::offline::sessions_for(&params.home, &params.workspace)
    };
    let sessions =
        found.map_err(|e| format!("cannot list the sessions in {}: {e}", dir.display()))?;
    // A session nothing was written to (left by a crash; a clean exit removes it) has nothing
    // to resume.
    Ok(sessions
        .into_iter()
        .filter(|s| s.entries > 0 || s.id == current)
        .map(|s| SessionRow {
            updated: s.updated.format("%Y-%m-%d %H:%M"),
            entries: s.entries,
            cwd: s.cwd,
            title: s.title.unwrap_or_else(|| "(untitled)".to_owned()),
            current: s.id == current,
            id: s.id,
        })
        .collect())
}

/// `/import`: imports `source` and returns the new session's id and a one-line report.
pub(super) fn import_session(
    home: &std::path::Path,
    workspace: &std::path::Path,
    source: &std::path::Path,
) -> Result<(String, String), String> {
    use codewhale_engine::offline::import::{import, ImportParams};
    let imported = import(&ImportParams { home, workspace, source })
        .map_err(|e| format!("cannot import {}: {e}", source.display()))?;
    let r = &imported.report;
    let mut report = format!(
        "imported the {} session: {} entries read, {} written, {} tool pairs repaired, {} \
         summaries imported; switching to it",
        r.source.display_name(),
        r.entries_read,
        r.entries_written,
        r.pairs_repaired,
        r.summaries_imported
    );
    if let Some(before) = imported.earlier.first() {
        report.push_str(&format!(
            " (this file was imported before, as session {before}, which is unchanged: \
             `/resume {before}` goes back to it)"
        ));
    }
    Ok((imported.session_id, report))
}
