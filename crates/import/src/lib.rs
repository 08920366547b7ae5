//! Bringing a conversation from Claude Code or Codex CLI into Codewhale.
//!
//! [`import`] reads a source file (a Claude Code session or a Codex rollout; [`detect`] tells
//! which) and hands the entries of a new Codewhale session to a sink, in order: first the
//! `header`, then the conversation on one branch, with the source's own compaction summaries as
//! `compaction` records. It returns a [`Report`] of what was read, written, repaired and left
//! out. It never writes anywhere itself and never modifies the source; the caller's sink
//! redacts, counts tokens and appends to a journal.
//!
//! How it works: the file is read twice, line by line with bounded memory (module `lines`).
//! Pass 1 keeps a small index per line; a pure planner picks the lines of the conversation
//! (`claude::plan`: the latest branch of the uuid DAG; `codex::plan`: file order without
//! rolled-back turns). Pass 2 converts the planned lines to normalized events, and module
//! `assemble` turns those into entries (merging, pairing, repairs, checkpoints).
//!
//! [`discover`] finds the sessions those tools stored for a workspace.
//!
//! The mapping of every source field is documented in `docs/import.md`.

mod assemble;
mod claude;
mod codex;
mod convert;
pub mod detect;
pub mod discover;
mod error;
mod lines;
mod report;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

use codewhale_journal::{Entry, HeaderPayload};
use serde_json::{json, Value};

pub use assemble::{INTERRUPTED, SUMMARY_PREFIX};
pub use error::ImportError;
pub use report::{thinking_reason, Report, Tool};

use assemble::{Assembler, Event};
use detect::Sniffed;
use lines::{LineRef, Lines};

/// What the header of the new session says about where it came from.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The source file as the user named it (written into the header).
    pub path: String,
    /// The workspace to record when the source names none.
    pub default_cwd: String,
    /// Codewhale's version, for the header's `app_version`.
    pub app_version: String,
}

/// A finished import.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The new session's id (the header's `session_id`).
    pub session_id: String,
    pub report: Report,
}

/// Imports the file at `path`; see [`import`].
pub fn import_file<F>(path: &Path, origin: &Origin, sink: F) -> Result<Imported, ImportError>
where
    F: FnMut(Entry) -> Result<(), ImportError>,
{
    let read_err = |source| ImportError::Read { path: path.to_owned(), source };
    let sniffed = detect::sniff(File::open(path).map_err(read_err)?).map_err(read_err)?;
    let file = File::open(path).map_err(read_err)?;
    import(file, sniffed, path, origin, sink)
}

/// Imports `reader` (whose first lines said `sniffed`), giving each entry to `sink`: the
/// header first, then the conversation. Nothing reaches the sink when the source holds no
/// conversation.
pub fn import<R, F>(
    reader: R,
    sniffed: Sniffed,
    path: &Path,
    origin: &Origin,
    sink: F,
) -> Result<Imported, ImportError>
where
    R: Read + Seek,
    F: FnMut(Entry) -> Result<(), ImportError>,
{
    let tool = match sniffed {
        Sniffed::Tool(tool) => tool,
        Sniffed::Compressed => return Err(ImportError::Compressed { path: path.to_owned() }),
        Sniffed::Empty => {
            return Err(ImportError::Empty { path: path.to_owned(), reason: "it is empty".into() })
        }
        Sniffed::Unknown => {
            return Err(ImportError::Unrecognized {
                path: path.to_owned(),
                reason: "none of its first lines looks like either format".into(),
            })
        }
    };
    let read_err = |source| ImportError::Read { path: path.to_owned(), source };
    let mut lines = Lines::new(reader).map_err(read_err)?;
    let mut report = Report::new(tool);
    let (refs, plan, header, mut converter) = match tool {
        Tool::Claude => {
            let mut index = claude::Index::default();
            let end = lines.scan(|r, bytes| index.add(r, bytes)).map_err(read_err)?;
            report.torn_tail_bytes = end.torn_bytes;
            report.oversized(end.oversized);
            let plan = claude::plan(&index, &mut report);
            let header = claude_header(&index.meta, origin);
            let refs: Vec<LineRef> = index.nodes.iter().map(|n| n.line).collect();
            (refs, plan, header, Converter::Claude(Default::default()))
        }
        Tool::Codex => {
            let mut index = codex::Index::default();
            let end = lines.scan(|r, bytes| index.add(r, bytes)).map_err(read_err)?;
            report.torn_tail_bytes = end.torn_bytes;
            report.oversized(end.oversized);
            let plan = codex::plan(&index, &mut report);
            let header = codex_header(&index.meta, origin);
            let refs: Vec<LineRef> = index.nodes.iter().map(|n| n.line).collect();
            (refs, plan, header, Converter::Codex(Default::default()))
        }
    };
    report.entries_read = refs.len() as u64;
    let session_id = header.session_id.clone();
    let mut header = Some(Entry::new(None, header));
    let mut sink = Some(sink);
    let mut assembler: Option<Assembler<F>> = None;
    let mut buf = Vec::new();
    let mut events = Vec::new();
    for i in plan {
        lines.read(refs[i], &mut buf).map_err(read_err)?;
        let target = match &mut assembler {
            Some(a) => a.report(),
            None => &mut report,
        };
        converter.line(&buf, target, &mut events);
        for event in events.drain(..) {
            if assembler.is_none() {
                if let (Some(h), Some(s)) = (header.take(), sink.take()) {
                    let mut a = Assembler::new(tool, h, s)?;
                    merge_counts(a.report(), std::mem::replace(&mut report, Report::new(tool)));
                    assembler = Some(a);
                }
            }
            if let Some(a) = &mut assembler {
                a.push(event)?;
            }
        }
    }
    let Some(assembler) = assembler else {
        return Err(ImportError::Empty {
            path: path.to_owned(),
            reason: format!(
                "none of its {} lines is a message of the conversation",
                report.entries_read
            ),
        });
    };
    let report = assembler.finish()?;
    Ok(Imported { session_id, report })
}

/// Pass 2's converter of either source.
enum Converter {
    Claude(claude::convert::Converter),
    Codex(codex::convert::Converter),
}

impl Converter {
    fn line(&mut self, bytes: &[u8], report: &mut Report, out: &mut Vec<Event>) {
        match self {
            Converter::Claude(c) => c.line(bytes, report, out),
            Converter::Codex(c) => c.line(bytes, report, out),
        }
    }
}

/// Adds the counts gathered before the assembler existed.
fn merge_counts(into: &mut Report, from: Report) {
    into.entries_read += from.entries_read;
    into.torn_tail_bytes = into.torn_tail_bytes.or(from.torn_tail_bytes);
    into.sidechain_lines += from.sidechain_lines;
    into.subagent |= from.subagent;
    into.images_replaced += from.images_replaced;
    into.images_imported += from.images_imported;
    for (k, v) in from.lines_unused {
        *into.lines_unused.entry(k).or_default() += v;
    }
    for (k, v) in from.problems {
        *into.problems.entry(k).or_default() += v;
    }
    for (k, v) in from.thinking_dropped_reasons {
        into.thinking_dropped += v;
        *into.thinking_dropped_reasons.entry(k).or_default() += v;
    }
}

/// The header of an imported session. It belongs to the workspace it is imported into
/// (`origin.default_cwd`), where `codewhale resume --last` and the session pickers look for
/// it; the other tool's own `cwd` is kept in `imported_from.cwd`.
fn new_header(origin: &Origin) -> HeaderPayload {
    let id = uuid::Uuid::now_v7().hyphenated().to_string();
    let mut header = HeaderPayload::new(id, origin.default_cwd.clone());
    header.app_version = origin.app_version.clone();
    header
}

fn imported_from(
    tool: Tool,
    path: &str,
    session: Option<&String>,
    version: Option<&String>,
    cwd: Option<&String>,
) -> Value {
    json!({
        "tool": tool.as_str(),
        "path": path,
        "session_id": session,
        "version": version,
        "cwd": cwd,
    })
}

fn claude_header(meta: &claude::Meta, origin: &Origin) -> HeaderPayload {
    let mut h = new_header(origin);
    h.provider = "anthropic".into();
    h.model = meta.model.clone().unwrap_or_default();
    h.title = meta.custom_title.clone().or(meta.ai_title.clone()).or(meta.summary_title.clone());
    let (session, version) = (meta.session_id.as_ref(), meta.version.as_ref());
    let from = imported_from(Tool::Claude, &origin.path, session, version, meta.cwd.as_ref());
    h.extra.insert("imported_from".into(), from);
    h
}

fn codex_header(meta: &codex::Meta, origin: &Origin) -> HeaderPayload {
    let mut h = new_header(origin);
    h.provider = meta.provider.clone().unwrap_or_else(|| "openai".into());
    h.model = meta.model.clone().unwrap_or_default();
    h.title = meta.title.clone();
    let (session, version) = (meta.id.as_ref(), meta.version.as_ref());
    let from = imported_from(Tool::Codex, &origin.path, session, version, meta.cwd.as_ref());
    h.extra.insert("imported_from".into(), from);
    h
}
