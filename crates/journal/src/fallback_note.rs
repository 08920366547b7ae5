//! The checkpoint note of a compaction record that came without one.
//!
//! Codewhale writes the complete note into every record (`note`), so the view replays exactly what
//! the model read when the pass ran. docs/journal-format.md, *`compaction`*, the contract other
//! tools write to, does not list `note`: a record built by another tool (or an import) has only
//! `summary`, `files_touched` and `anchors`. Rendering its `note` (empty) would give the model a
//! checkpoint whose first block is empty — no `Codewhale handoff note` opening, so not even
//! structurally a checkpoint, and the summary lost. [`checkpoint_note`] rebuilds a note from the
//! record's own fields instead. It reads nothing but the record (no clock, no workspace, no
//! registry), so the rebuilt note is byte-identical on every render and after every reload, and the
//! prompt-cache prefix stays stable.
//!
//! [`imported_checkpoint_note`] is the note of a record an import writes for another tool's own
//! compaction summary: marked as imported, naming the tool, the summary verbatim.

use std::borrow::Cow;

use crate::payload::CompactionPayload;

/// How a rebuilt note opens: the structural prefix followed by a header that claims only what a
/// record without a note can back up.
pub const REBUILT_NOTE_HEADER: &str =
    include_str!("../../../assets/prompts/note-rebuilt-header.md").trim_ascii_end();

/// The title of the list of files the covered tool calls touched (as in Codewhale's own notes).
pub const FILES_TOUCHED_TITLE: &str = "## Files touched";

/// At most this many paths are listed; the rest are counted (docs/compaction.md, *The checkpoint
/// note*).
pub const MAX_FILES_TOUCHED: usize = 256;

/// Introduces the anchors, restated verbatim.
pub const ANCHORS_TITLE: &str = "User-pinned anchors (verbatim):";

/// What a rebuilt note says when the record has no summary either (a prune-only record written
/// before any summary existed, but with a covered segment).
const NO_SUMMARY: &str = "(The compaction record holds no summary of the covered part.)";

/// The note's last paragraph, in Codewhale's own notes too: the note grants nothing.
pub const NOTE_CLOSING: &str =
    include_str!("../../../assets/prompts/note-closing.md").trim_ascii_end();

/// How the note of an imported summary opens, before the tool's name.
pub const IMPORTED_NOTE_PREFIX: &str = "Codewhale handoff note (imported from ";

/// The note of a compaction record an import writes for a summary that `tool` (a product name,
/// e.g. `Claude Code`) wrote when it compacted the conversation itself. It keeps the structural
/// prefix, says the summary is imported and not Codewhale's, and closes like every note.
pub fn imported_checkpoint_note(tool: &str, summary: &str) -> String {
    let summary = summary.trim();
    let summary = if summary.is_empty() { NO_SUMMARY } else { summary };
    format!(
        "{IMPORTED_NOTE_PREFIX}{tool}). The earlier part of this conversation took place in \
         {tool}, which compacted it; the summary below is {tool}'s own, imported verbatim, not \
         written by Codewhale. Earlier detail exists only in this summary: when you need a full \
         output, rerun the command or reread the file.\n\n{summary}\n\n{NOTE_CLOSING}"
    )
}

/// The first text block of `record`'s checkpoint: its `note` when it has one, otherwise a note
/// rebuilt from `summary`, `files_touched` and `anchors`.
pub fn checkpoint_note(record: &CompactionPayload) -> Cow<'_, str> {
    if !record.note.trim().is_empty() {
        return Cow::Borrowed(&record.note);
    }
    let summary = record.summary.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let mut out = String::with_capacity(
        REBUILT_NOTE_HEADER.len() + summary.map_or(0, str::len) + NOTE_CLOSING.len() + 256,
    );
    out.push_str(REBUILT_NOTE_HEADER);
    out.push_str("\n\n");
    out.push_str(summary.unwrap_or(NO_SUMMARY));
    if !record.files_touched.is_empty() {
        out.push_str("\n\n");
        out.push_str(FILES_TOUCHED_TITLE);
        // `files_touched` is stored newest first (§5.5), so the cap keeps the newest.
        for path in record.files_touched.iter().take(MAX_FILES_TOUCHED) {
            out.push_str("\n- ");
            out.push_str(path);
        }
        let more = record.files_touched.len().saturating_sub(MAX_FILES_TOUCHED);
        if more > 0 {
            out.push_str(&format!("\n- and {more} more"));
        }
    }
    if let Some(anchors) = record.anchors.as_deref().filter(|a| !a.trim().is_empty()) {
        out.push_str("\n\n");
        out.push_str(ANCHORS_TITLE);
        out.push('\n');
        out.push_str(anchors.trim_end_matches('\n'));
    }
    out.push_str("\n\n");
    out.push_str(NOTE_CLOSING);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{CompactionPath, Trigger};

    fn record() -> CompactionPayload {
        CompactionPayload::new(CompactionPath::Summary, Trigger::Auto)
    }

    #[test]
    fn an_imported_note_is_marked_names_its_tool_and_keeps_the_summary() {
        let note = imported_checkpoint_note("Claude Code", "  ## Summary\nFixed it.\n");
        assert!(note.starts_with("Codewhale handoff note (imported from Claude Code)."), "{note}");
        assert!(note.contains("\n\n## Summary\nFixed it.\n\n"), "{note}");
        assert!(note.ends_with(NOTE_CLOSING));
        assert!(imported_checkpoint_note("Codex CLI", " ").contains(NO_SUMMARY));
    }

    #[test]
    fn a_stored_note_is_used_as_is() {
        let mut r = record();
        r.note = "Codewhale handoff note. Stored.".into();
        r.summary = Some("not this".into());
        assert!(matches!(checkpoint_note(&r), Cow::Borrowed("Codewhale handoff note. Stored.")));
    }

    #[test]
    fn a_missing_note_is_rebuilt_from_the_record() {
        let mut r = record();
        r.note = "  \n".into();
        r.summary = Some("## Objective\nFix the parser.\n".into());
        r.files_touched = vec!["src/new.rs".into(), "src/old.rs".into()];
        r.anchors = Some("- never push\n".into());
        let note = checkpoint_note(&r);
        assert_eq!(
            note,
            format!(
                "{REBUILT_NOTE_HEADER}\n\n## Objective\nFix the parser.\n\n## Files touched\n\
                 - src/new.rs\n- src/old.rs\n\n{ANCHORS_TITLE}\n- never push\n\n{NOTE_CLOSING}"
            )
        );
        assert!(note.starts_with("Codewhale handoff note."));
    }

    #[test]
    fn the_files_list_is_capped_and_counted_and_empty_parts_are_left_out() {
        let mut r = record();
        r.files_touched = (0..300).map(|i| format!("f{i}.rs")).collect();
        r.anchors = Some(" \n".into());
        let note = checkpoint_note(&r);
        assert!(note.contains(NO_SUMMARY));
        assert!(note.contains("\n- f255.rs\n- and 44 more\n\n"), "{note}");
        assert!(!note.contains("f256.rs"));
        assert!(!note.contains(ANCHORS_TITLE));
    }
}
