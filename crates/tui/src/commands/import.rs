//! `codewhale import FILE | --from claude|codex [--cwd DIR] [--pick N | --latest] [--json]`:
//! another tool's session as a new Codewhale session (the conversion is the engine's
//! `offline::import`; this module picks the file and prints the report).
//!
//! With `--from`, the sessions that tool stored for the workspace are listed newest first
//! (size, time, first prompt). On a terminal (without `--json`) the user picks one; otherwise
//! the list is printed and only the session named by `--pick N` or `--latest` is imported.
//! `--json` prints one object: the report (`session`, `source`, `entries_read`,
//! `entries_written`, `pairs_repaired`, `blocks_merged`, `thinking_dropped`,
//! `summaries_imported`, `view_tokens`, ...) or, when nothing was picked, `{"candidates": [...]}`.
//! Exit codes: 0 imported (or listed), 1 the import failed, 2 bad usage.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::offline::import::{
    candidates, import, Candidate, ImportParams, Imported, Roots, Tool,
};
use serde_json::json;

use crate::cli::{GlobalArgs, ImportArgs, ImportFrom};

/// Imports the file the arguments name (or the user picks) and prints the report.
pub fn run(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    args: ImportArgs,
) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(workspace)?;
    let (source, workspace) = match (args.file, args.from) {
        (Some(file), _) => (file, workspace),
        (None, Some(from)) => {
            let tool = match from {
                ImportFrom::Claude => Tool::Claude,
                ImportFrom::Codex => Tool::Codex,
            };
            let dir = args.cwd.unwrap_or(workspace);
            let list = candidates(tool, &Roots::from_env(), &dir);
            if list.is_empty() {
                anyhow::bail!(
                    "{} stored no sessions for {}; check the workspace (--cwd DIR) or import a \
                     file directly with `codewhale import FILE`",
                    tool.display_name(),
                    dir.display()
                );
            }
            match choose(&list, args.pick, args.latest, args.json)? {
                Choice::Picked(path) => (path, dir),
                Choice::Listed => return Ok(ExitCode::SUCCESS),
                Choice::BadPick(n) => {
                    errln!(
                        "codewhale: there is no session {n}; the list has {} (pick 1 to {})",
                        list.len(),
                        list.len()
                    );
                    return Ok(ExitCode::from(2));
                }
            }
        }
        (None, None) => {
            errln!("codewhale: name the session file, or pass --from claude|codex");
            return Ok(ExitCode::from(2));
        }
    };
    let imported = import(&ImportParams { home, workspace: &workspace, source: &source })
        .with_context(|| format!("cannot import {}", source.display()))?;
    if args.json {
        outln!("{}", report_json(&imported));
    } else {
        out!("{}", human(&imported, &source, &super::interactive::home_flag(global)));
    }
    Ok(ExitCode::SUCCESS)
}

enum Choice {
    Picked(PathBuf),
    Listed,
    BadPick(u64),
}

fn choose(
    list: &[Candidate],
    pick: Option<u64>,
    latest: bool,
    json: bool,
) -> anyhow::Result<Choice> {
    let chosen = match (pick, latest) {
        (Some(n), _) => Some(n),
        (None, true) => Some(1),
        (None, false) => None,
    };
    if let Some(n) = chosen {
        return Ok(match usize::try_from(n).ok().and_then(|i| list.get(i.wrapping_sub(1))) {
            Some(c) => Choice::Picked(c.path.clone()),
            None => Choice::BadPick(n),
        });
    }
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !interactive {
        if json {
            let items: Vec<serde_json::Value> =
                list.iter().enumerate().map(|(i, c)| candidate_json(i + 1, c)).collect();
            outln!("{}", json!({ "candidates": items }));
        } else {
            out!("{}", table(list));
            errln!("codewhale: import one with --pick N or --latest");
        }
        return Ok(Choice::Listed);
    }
    errout!("{}", table(list));
    loop {
        errout!("import which session? [1-{}, empty to cancel]: ", list.len());
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let read =
            std::io::stdin().lock().read_line(&mut line).context("cannot read the choice")?;
        let answer = line.trim();
        if read == 0 || answer.is_empty() {
            errln!("codewhale: nothing imported");
            return Ok(Choice::Listed);
        }
        match answer.parse::<usize>().ok().and_then(|n| list.get(n.wrapping_sub(1))) {
            Some(c) => return Ok(Choice::Picked(c.path.clone())),
            None => errln!("codewhale: type a number from 1 to {}", list.len()),
        }
    }
}

fn modified(c: &Candidate) -> String {
    chrono::DateTime::<chrono::Utc>::from(c.modified).format("%Y-%m-%d %H:%M").to_string()
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn table(list: &[Candidate]) -> String {
    let mut out = String::from("  N  MODIFIED (UTC)    SIZE      FIRST PROMPT\n");
    for (i, c) in list.iter().enumerate() {
        out.push_str(&format!(
            "{:>3}  {}  {:>8}  {}\n",
            i + 1,
            modified(c),
            size(c.size),
            c.first_prompt.as_deref().unwrap_or("(no prompt found)")
        ));
    }
    out
}

fn candidate_json(n: usize, c: &Candidate) -> serde_json::Value {
    json!({
        "n": n,
        "source": c.tool.as_str(),
        "path": c.path.display().to_string(),
        "size": c.size,
        "modified": chrono::DateTime::<chrono::Utc>::from(c.modified).to_rfc3339(),
        "first_prompt": c.first_prompt,
    })
}

fn report_json(i: &Imported) -> serde_json::Value {
    let r = &i.report;
    json!({
        "session": i.session_id,
        "earlier_imports": i.earlier,
        "subagent": r.subagent,
        "path": i.path.display().to_string(),
        "source": r.source.as_str(),
        "entries_read": r.entries_read,
        "entries_written": r.entries_written,
        "pairs_repaired": r.pairs_repaired,
        "calls_interrupted": r.calls_interrupted,
        "results_kept_as_text": r.results_kept_as_text,
        "blocks_merged": r.blocks_merged,
        "thinking_dropped": r.thinking_dropped,
        "thinking_dropped_reasons": r.thinking_dropped_reasons,
        "summaries_imported": r.summaries_imported,
        "sidechain_lines": r.sidechain_lines,
        "images_replaced": r.images_replaced,
        "images_imported": r.images_imported,
        "torn_tail_bytes": r.torn_tail_bytes,
        "lines_unused": r.lines_unused,
        "problems": r.problems,
        "view_tokens": i.view_tokens,
        "view_tokens_estimated": i.view_tokens_estimated,
    })
}

fn reasons(map: &std::collections::BTreeMap<String, u64>) -> String {
    map.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
}

/// The report for people; `home_flag` is ` --home DIR` when the user gave one, so the
/// suggested command works as printed.
fn human(i: &Imported, source: &Path, home_flag: &str) -> String {
    let r = &i.report;
    let mut out = format!(
        "imported the {} session {}\n  as session {} (continue it with `codewhale resume {}{home_flag}`)\n",
        r.source.display_name(),
        source.display(),
        i.session_id,
        i.session_id
    );
    if r.subagent {
        out.push_str(
            "  a sub-agent's own transcript (Claude Code's `agent-*.jsonl`), imported as a \
             session of its own; the session that started the sub-agent is imported from its \
             own file\n",
        );
    }
    if let Some(before) = i.earlier.first() {
        out.push_str(&format!(
            "  this file was imported before, as session {before}{}: that session is unchanged \
             (`codewhale resume {before}{home_flag}` continues it)\n",
            if i.earlier.len() > 1 {
                format!(" (and {} more)", i.earlier.len() - 1)
            } else {
                String::new()
            }
        ));
    }
    let mut row = |label: &str, value: String| out.push_str(&format!("  {label:<20} {value}\n"));
    row("entries read", format!("{} lines", r.entries_read));
    row("entries written", r.entries_written.to_string());
    row(
        "tool pairs repaired",
        format!(
            "{} ({} calls given an interrupted result, {} results kept as text)",
            r.pairs_repaired, r.calls_interrupted, r.results_kept_as_text
        ),
    );
    row("blocks merged", r.blocks_merged.to_string());
    let why = if r.thinking_dropped == 0 {
        String::new()
    } else {
        format!(" ({})", reasons(&r.thinking_dropped_reasons))
    };
    row("thinking dropped", format!("{}{why}", r.thinking_dropped));
    row("summaries imported", r.summaries_imported.to_string());
    let how = if i.view_tokens_estimated { "estimated, bytes/4" } else { "o200k" };
    row("view tokens", format!("{} ({how})", i.view_tokens));
    if r.sidechain_lines > 0 {
        row(
            "sub-agent lines",
            format!("{} (not spliced in; the Task results are)", r.sidechain_lines),
        );
    }
    if r.images_imported > 0 {
        row("images imported", format!("{} (into the session's blob store)", r.images_imported));
    }
    if r.images_replaced > 0 {
        row("images replaced", format!("{} (by a text placeholder)", r.images_replaced));
    }
    if let Some(bytes) = r.torn_tail_bytes {
        row("torn last line", format!("{bytes} bytes (still being written, or cut short)"));
    }
    if !r.lines_unused.is_empty() {
        row("lines not used", format!("{}: {}", r.unused_total(), reasons(&r.lines_unused)));
    }
    if !r.problems.is_empty() {
        row("source problems", reasons(&r.problems));
    }
    out
}
