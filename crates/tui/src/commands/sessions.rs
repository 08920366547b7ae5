//! `codewhale sessions [--json]`: the sessions in `$CODEWHALE_HOME/sessions`, newest first.
//!
//! The table shows id, last update (UTC), entry count, what its priced requests cost, workspace
//! and title. `--json` prints one JSON array on a single line (`[]` when there are none),
//! newest first, of objects with `id`, `cwd`, `title`, `entries`, `cost_usd`, `updated`,
//! `created_at`, `path`, `provider`, `model` and `parent` (the session whose `task` call started
//! it, or null): one
//! document, so a script reads it whole. A subagent's session is listed right under its
//! parent (its id indented in the table), and a parent's cost includes its children's (`json.loads(stdout)`, `jq '.[0].id'`). Files that are
//! not readable journals are named on stderr and skipped. Titles and workspaces come from
//! journals (an imported session's among them), so the table shows their control characters
//! escaped (`\u{1b}`): a title cannot clear the screen or write the clipboard (OSC 52).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::offline::{self, SessionInfo};

use crate::home;

/// Lists the sessions under `home/sessions`, newest first.
pub fn run(home: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let dir = home::sessions_dir(home);
    let listing = offline::sessions(&dir)
        .with_context(|| format!("cannot list the sessions in {}", dir.display()))?;
    for (path, reason) in &listing.skipped {
        errln!("skipped {}: {reason}", path.display());
    }
    if json {
        let array: Vec<serde_json::Value> = listing.sessions.iter().map(json_object).collect();
        outln!("{}", serde_json::Value::Array(array));
    } else if listing.sessions.is_empty() {
        errln!("no sessions in {}", dir.display());
    } else {
        out!("{}", table(&listing.sessions));
    }
    Ok(ExitCode::SUCCESS)
}

fn json_object(s: &SessionInfo) -> serde_json::Value {
    serde_json::json!({
        "id": s.id,
        "cwd": s.cwd,
        "title": s.title,
        "entries": s.entries,
        "cost_usd": s.cost_usd,
        "updated": s.updated.to_string(),
        "created_at": s.created_at.to_string(),
        // Through `display`: `json!` would panic on a path that is not valid UTF-8.
        "path": s.path.display().to_string(),
        "provider": s.provider,
        "model": s.model,
        "parent": s.parent,
    })
}

/// `text` with every control character escaped, so it prints as itself on a terminal.
fn shown(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() })
        .collect()
}

fn table(sessions: &[SessionInfo]) -> String {
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|s| {
            // No priced request: nothing to say (a model without a known price, or none yet).
            let cost =
                if s.cost_usd > 0.0 { crate::figures::dollars(s.cost_usd) } else { "-".to_owned() };
            // A subagent's session sits under its parent, indented.
            let id = if s.parent.is_some() { format!("└ {}", s.id) } else { s.id.clone() };
            [
                id,
                s.updated.format("%Y-%m-%d %H:%M"),
                s.entries.to_string(),
                cost,
                shown(&s.cwd),
                s.title.as_deref().map_or_else(|| "(untitled)".to_owned(), shown),
            ]
        })
        .collect();
    let header = ["ID", "UPDATED (UTC)", "ENTRIES", "COST", "CWD", "TITLE"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header.map(str::to_owned)).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else if i == 2 || i == 3 {
                line.push_str(&format!("{cell:>w$}  ", w = widths[i]));
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn terminal_escapes_in_titles_are_shown_not_sent() {
        let title = "fix it\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{1b}[2J";
        let out = super::shown(title);
        assert!(!out.chars().any(char::is_control), "{out:?}");
        assert_eq!(out, "fix it\\u{1b}]52;c;ZWNobyBwd25lZA==\\u{7}\\u{1b}[2J");
    }
}
