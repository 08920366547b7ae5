//! `journal check`: a read-only audit of a journal file.
//!
//! Uses the same [`scan`](crate::scan) as loading, but never the repairing open: the file is
//! read once and not locked, truncated or otherwise touched. Reports every problem with the line
//! it is on: torn tails, malformed lines, duplicate ids, dangling parents, parent cycles, a HEAD
//! moved to an entry that does not exist, invalid compaction records, side questions answered
//! from another branch, and tool pairs broken in HEAD's view.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::entry::EntryId;
use crate::journal::{DagProblem, Journal};
use crate::line::Line;
use crate::load::{self, LoadError, LoadWarning};
use crate::payload::Payload;
use crate::view::render;
use crate::view_check::check_view;

/// One problem, with the line it is on when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub line: Option<u32>,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What `journal check` found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// Entries after the header.
    pub entries: usize,
    /// Branch tips.
    pub branches: usize,
    pub head: EntryId,
    pub compactions: usize,
    /// The active compaction of HEAD's view.
    pub active_compaction: Option<EntryId>,
    /// What makes the journal unsound (`journal check` exits 1).
    pub problems: Vec<Problem>,
    /// What was read as best it could be (informational fields of an unexpected type): reported,
    /// but the journal is sound.
    pub warnings: Vec<Problem>,
}

impl CheckReport {
    /// The one-line summary of a sound journal.
    pub fn summary(&self) -> String {
        let active = match &self.active_compaction {
            Some(id) => format!(" (active {id})"),
            None => String::new(),
        };
        format!(
            "ok: {} entries, {} {}, head {}, {} {}{active}",
            self.entries,
            self.branches,
            if self.branches == 1 { "branch" } else { "branches" },
            self.head,
            self.compactions,
            if self.compactions == 1 { "compaction" } else { "compactions" },
        )
    }
}

/// Audits the journal at `path` without modifying it. An unreadable, empty, zero-filled or
/// non-journal file is an error.
pub fn check_file(path: &Path) -> Result<CheckReport, LoadError> {
    let io_err = |source| LoadError::Io { path: path.to_owned(), source };
    load::ensure_regular(path)?;
    let file = std::fs::File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    let scan = crate::scan::scan_file(path, &file, len)?;
    let (cycles, in_cycle) = find_cycles(&scan.valid);
    let loaded = load::assemble(path, scan, None, false)?;
    let journal = loaded.journal;

    let (mut problems, warnings) = load_problems(&loaded.warnings, &in_cycle);
    problems.extend(cycles);
    problems.extend(undecodable_results(&journal));
    problems.extend(side_questions_off_branch(&journal));
    problems.extend(invalid_compactions(&journal));

    let head = journal.head_id().clone();
    let view = render(&journal, head.as_str());
    if let Err(e) = check_view(&view) {
        problems.push(Problem {
            line: journal.line_of(e.entry().as_str()),
            message: format!("in HEAD's view: {e}"),
        });
    }
    problems.sort_by_key(|p| p.line.unwrap_or(u32::MAX));

    Ok(CheckReport {
        entries: journal.len() - 1,
        branches: journal.tips().len(),
        head,
        compactions: journal.compactions().count(),
        active_compaction: view.compaction.map(|c| c.id),
        problems,
        warnings,
    })
}

/// What loading reported, as problems and warnings: coerced lines are warnings (the entry is
/// usable as read), a read-only open is neither, and a dangling parent that is part of a cycle
/// is left to the cycle's own report.
fn load_problems(
    reported: &[LoadWarning],
    in_cycle: &HashSet<String>,
) -> (Vec<Problem>, Vec<Problem>) {
    let mut problems: Vec<Problem> = Vec::new();
    let mut warnings: Vec<Problem> = Vec::new();
    for w in reported {
        if matches!(w, LoadWarning::ReadOnly { .. }) {
            continue;
        }
        if let LoadWarning::Coerced { line, notes } = w {
            // Informational fields only: the entry is usable as read.
            let message = format!("read as best it could be: {}", notes.join("; "));
            warnings.push(Problem { line: Some(*line), message });
            continue;
        }
        let line = match w {
            LoadWarning::TornTail { line, .. }
            | LoadWarning::MissingNewline { line, .. }
            | LoadWarning::NulPrefix { line }
            | LoadWarning::Dag { line, .. }
            | LoadWarning::Coerced { line, .. } => *line,
            LoadWarning::Malformed(m) => m.line,
            LoadWarning::ReadOnly { .. } => continue,
        };
        let message = match w {
            LoadWarning::TornTail { bytes, .. } => {
                format!("torn final line ({bytes} bytes, not a complete entry)")
            }
            LoadWarning::MissingNewline { .. } => "the final entry has no newline".to_owned(),
            LoadWarning::NulPrefix { .. } => "starts with zero bytes".to_owned(),
            LoadWarning::Malformed(m) => m.error.clone(),
            LoadWarning::Dag { problem, .. } => load::dag_message(problem),
            LoadWarning::Coerced { .. } | LoadWarning::ReadOnly { .. } => continue,
        };
        // A cycle shows up as a parent that is not an earlier entry; report it once, as a cycle.
        if let LoadWarning::Dag { problem: DagProblem::DanglingParent { id, .. }, .. } = w {
            if in_cycle.contains(id.as_str()) {
                continue;
            }
        }
        problems.push(Problem { line: Some(line), message });
    }
    (problems, warnings)
}

/// Tool results whose stored output is not a valid JSON string.
fn undecodable_results(journal: &Journal) -> Vec<Problem> {
    let mut problems = Vec::new();
    for pos in journal.positions_of_kind(crate::payload::kind::TOOL_RESULT) {
        // Read for the check only: an audit of a long session must not hold it all.
        let entry = journal.read_entry(pos);
        if let Payload::ToolResult(r) = &entry.payload {
            if let Err(e) = r.content.check_decodes() {
                problems.push(Problem {
                    line: Some(journal.line_at(pos)),
                    message: format!("the tool output is not a valid JSON string ({e})"),
                });
            }
        }
    }
    problems
}

/// Side questions answered from a view that is not on their own branch.
fn side_questions_off_branch(journal: &Journal) -> Vec<Problem> {
    let mut problems = Vec::new();
    // A side question names the view it was answered from: an entry of this file, its own
    // branch (it is never in a view itself, so nothing else checks it).
    for pos in journal.positions_of_kind(crate::payload::kind::SIDE) {
        let entry = journal.read_entry(pos);
        let Payload::Side(side) = &entry.payload else { continue };
        let Some(reads) = &side.reads else { continue };
        let on_branch = entry
            .parent
            .as_ref()
            .is_some_and(|p| journal.is_ancestor(reads.head.as_str(), p.as_str()));
        if !on_branch {
            problems.push(Problem {
                line: Some(journal.line_at(pos)),
                message: format!(
                    "side question {} was answered from {}, which is not on its branch",
                    entry.id, reads.head
                ),
            });
        }
    }
    problems
}

/// Compaction records that change nothing (none of covers, pruned_ids and bounded).
fn invalid_compactions(journal: &Journal) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (entry, record) in journal.compactions() {
        if !record.is_valid() {
            problems.push(Problem {
                line: journal.line_of(entry.id.as_str()),
                message: format!(
                    "compaction record {} has none of covers, pruned_ids and bounded; it is ignored",
                    entry.id
                ),
            });
        }
    }
    problems
}

/// Parent cycles: loading sees them as parents that are not earlier entries; here each is
/// named as a cycle once, on the line of its first entry in the file.
fn find_cycles(entries: &[Line]) -> (Vec<Problem>, HashSet<String>) {
    let index: HashMap<&str, usize> =
        entries.iter().enumerate().map(|(i, e)| (e.id(), i)).collect();
    // 0 = unvisited, 1 = on the current path, 2 = done.
    let mut state = vec![0u8; entries.len()];
    let mut out = Vec::new();
    let mut members = HashSet::new();
    for start in 0..entries.len() {
        let mut path = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            match state[i] {
                2 => break,
                1 => {
                    let at = path.iter().position(|&p| p == i).unwrap_or(0);
                    let cycle = &path[at..];
                    let first = cycle.iter().copied().min().unwrap_or(i);
                    let ids: Vec<&str> = cycle.iter().map(|&p| entries[p].id()).collect();
                    members.extend(ids.iter().map(|s| (*s).to_owned()));
                    out.push(Problem {
                        line: Some(entries[first].line),
                        message: format!("parent cycle: {} -> {}", ids.join(" -> "), ids[0]),
                    });
                    break;
                }
                _ => {
                    state[i] = 1;
                    path.push(i);
                    cur = entries[i].parent().and_then(|p| index.get(p).copied());
                }
            }
        }
        for p in path {
            state[p] = 2;
        }
    }
    (out, members)
}
