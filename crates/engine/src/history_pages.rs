//! Pages of the conversation at HEAD for the UI ([`codewhale_protocol::HistoryPage`]).
//!
//! The whole branch, not just what the model reads: entries the active compaction covers are
//! included and marked `covered`, and the compaction itself appears where its note sits. A page
//! is the newest `limit` rows before a cursor (an entry id from an earlier page), moved back so
//! that it never starts on a tool result (a call and its results stay in one page). Building a
//! page reads only the entries on it (tool output stays in the session file otherwise).
//! Invariant: pages of one HEAD tile the branch — every row is on exactly one page.

use std::collections::HashSet;

use codewhale_journal::{
    active_compaction_of, checkpoint_note, kind, Block, Entry, Journal, Payload, Text, UserPayload,
};

use codewhale_protocol::{
    CallEnd, CompactionKind, CompactionTrigger, HistoryItem, HistoryPage, ImageInfo, NoticeLevel,
    ToolOutcome, Transcript,
};

/// Output kept per tool result for display; the journal has the rest.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// The page the engine sends unasked after a session opens or HEAD moves.
pub const FIRST_PAGE: usize = 200;

/// The most rows one page may hold.
pub const MAX_PAGE: usize = 2_000;

/// The page of `limit` rows before `before` (or the newest), at `journal`'s HEAD.
pub fn page(journal: &Journal, before: Option<&str>, limit: usize, reset: bool) -> HistoryPage {
    let head = journal.head_id().clone();
    // Spine positions (ascending) of the rows shown; only the page's entries are read.
    let rows: Vec<u32> = journal
        .spine_positions(journal.head_position())
        .into_iter()
        .filter(|&p| shown(journal.kind_at(p)))
        .collect();
    let at = |id: &str| journal.position(id).and_then(|p| rows.binary_search(&p).ok());
    let active = active_compaction_of(journal, head.as_str());
    // Spine rows the active record covers (its retained messages excepted).
    let (covered_range, retained) = match active.as_ref().and_then(|a| a.record.covers.as_ref()) {
        Some(c) => {
            let retained: HashSet<&str> = active
                .as_ref()
                .map(|a| a.record.retained_ids.iter().map(|id| id.as_str()).collect())
                .unwrap_or_default();
            (at(c.first.as_str()).zip(at(c.last.as_str())), retained)
        }
        None => (None, HashSet::new()),
    };
    let end = before.and_then(at).unwrap_or(rows.len());
    let mut start = end.saturating_sub(limit.clamp(1, MAX_PAGE));
    while start > 0 && journal.kind_at(rows[start]) == kind::TOOL_RESULT {
        start -= 1;
    }
    let mut items: Vec<HistoryItem> = Vec::new();
    for (index, &pos) in rows.iter().enumerate().take(end).skip(start) {
        let id = journal.id_at(pos);
        let covered = covered_range
            .is_some_and(|(a, b)| (a..=b).contains(&index) && !retained.contains(&*id));
        // Read for the page only: scrolling back through a long session must not hold it.
        push_entry(&mut items, journal, &journal.read_entry(pos), covered);
        if covered_range.is_some_and(|(_, b)| b == index) {
            if let Some(a) = &active {
                items.push(compaction_item(a));
            }
        }
    }
    let older = (start > 0).then(|| journal.id_at(rows[start]).to_string());
    HistoryPage { head: head.to_string(), items, older, reset }
}

/// The whole of HEAD's branch as the user saw it, oldest first (`/export`, `codewhale export`):
/// every row a page would show, covered ones included and marked as the active compaction
/// says, and every compaction record that applies to the branch — its covered segment,
/// `pruned_ids` and `bounded` all on it — where it was written: after the last row the file
/// held then, so a superseded capsule stays where the user saw it happen.
pub fn transcript(journal: &Journal, model: &str) -> Transcript {
    let start = journal.head_position();
    let spine = journal.spine_positions(start);
    let on_spine: HashSet<u32> = spine.iter().copied().collect();
    let rows: Vec<u32> = spine.into_iter().filter(|&p| shown(journal.kind_at(p))).collect();
    let at_row = |id: &str| journal.position(id).and_then(|p| rows.binary_search(&p).ok());
    let active = active_compaction_of(journal, journal.head_id().as_str());
    let (covered_range, retained) = match active.as_ref().and_then(|a| a.record.covers.as_ref()) {
        Some(c) => {
            let retained: HashSet<String> = active
                .as_ref()
                .map(|a| a.record.retained_ids.iter().map(|id| id.to_string()).collect())
                .unwrap_or_default();
            (at_row(c.first.as_str()).zip(at_row(c.last.as_str())), retained)
        }
        None => (None, HashSet::new()),
    };
    let applies = |id: &codewhale_journal::EntryId| {
        journal.position(id.as_str()).is_some_and(|p| on_spine.contains(&p))
    };
    let mut records: Vec<(u32, HistoryItem)> = journal
        .compactions()
        .filter(|(_, r)| r.is_valid())
        .filter(|(_, r)| r.covers.as_ref().is_none_or(|c| applies(&c.last)))
        .filter(|(_, r)| {
            r.pruned_ids.iter().all(applies) && r.bounded.iter().all(|b| applies(&b.id))
        })
        .filter_map(|(e, r)| {
            let pos = journal.position(e.id.as_str())?;
            Some((pos, record_item(e.id.to_string(), r)))
        })
        .collect();
    records.reverse();
    let mut items: Vec<HistoryItem> = Vec::new();
    for (index, &pos) in rows.iter().enumerate() {
        while records.last().is_some_and(|(at, _)| *at < pos) {
            items.extend(records.pop().map(|(_, item)| item));
        }
        let id = journal.id_at(pos);
        let covered = covered_range
            .is_some_and(|(a, b)| (a..=b).contains(&index) && !retained.contains(&*id));
        push_entry(&mut items, journal, &journal.read_entry(pos), covered);
    }
    items.extend(records.into_iter().rev().map(|(_, item)| item));
    Transcript { session: journal.header().session_id.clone(), model: model.to_owned(), items }
}

/// Kinds a transcript shows.
fn shown(entry_kind: &str) -> bool {
    matches!(
        entry_kind,
        kind::USER
            | kind::ASSISTANT
            | kind::TOOL_RESULT
            | kind::BRANCH_SUMMARY
            | kind::SYSTEM
            | kind::SIDE
    )
}

fn push_entry(items: &mut Vec<HistoryItem>, journal: &Journal, entry: &Entry, covered: bool) {
    let id = entry.id.to_string();
    match &entry.payload {
        Payload::User(u) => {
            if let Some(item) = user_item(journal, u, id, covered) {
                items.push(item);
            }
        }
        Payload::Assistant(a) => {
            let text = texts(&a.content);
            let thinking = a
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::Thinking(t) => Some(t.thinking.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            if !text.trim().is_empty() || !thinking.trim().is_empty() {
                items.push(HistoryItem::Assistant { id: id.clone(), text, thinking, covered });
            }
            for call in a.content.iter().filter_map(Block::as_tool_use) {
                items.push(HistoryItem::Tool {
                    id: id.clone(),
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                    result: None,
                    covered,
                });
            }
        }
        Payload::ToolResult(r) => {
            let outcome = outcome_of(r);
            let slot = items.iter_mut().rev().find_map(|i| match i {
                HistoryItem::Tool { call_id, result, .. }
                    if *call_id == r.tool_use_id && result.is_none() =>
                {
                    Some(result)
                }
                _ => None,
            });
            if let Some(slot) = slot {
                *slot = Some(outcome);
            }
        }
        Payload::System(s) => {
            let level = match s.level {
                codewhale_journal::Level::Warning => NoticeLevel::Warning,
                codewhale_journal::Level::Error => NoticeLevel::Error,
                _ => NoticeLevel::Info,
            };
            items.push(HistoryItem::Notice { id, text: s.text.clone(), level })
        }
        Payload::BranchSummary(b) => {
            items.push(HistoryItem::BranchSummary { id, summary: b.summary.clone(), covered })
        }
        Payload::Side(s) => items.push(HistoryItem::Side {
            id,
            question: s.question.clone(),
            answer: s.answer.clone(),
            model: s.model.clone().unwrap_or_default(),
            cost_usd: s.usage.as_ref().and_then(|u| u.cost_usd),
        }),
        _ => {}
    }
}

fn user_item(journal: &Journal, u: &UserPayload, id: String, covered: bool) -> Option<HistoryItem> {
    let text = texts(&u.content);
    if let Some(withdrawn) = &u.withdraws {
        let text = match journal.get(withdrawn.as_str()).map(|e| &e.payload) {
            Some(Payload::User(a)) => texts(&a.content),
            _ => text,
        };
        return Some(HistoryItem::AnchorWithdrawn { id, text, covered });
    }
    if u.anchor {
        return Some(HistoryItem::Anchor { id, text, covered });
    }
    if let Some(shell) = &u.user_shell {
        let prefix = crate::user_shell::model_text(&shell.command, "");
        let output = text.strip_prefix(prefix.as_str()).unwrap_or(&text).to_owned();
        let exit_code = shell.exit_code.and_then(|c| i32::try_from(c).ok());
        let command = shell.command.clone();
        // An entry written before `end` was journaled is read by its exit code.
        let end = match &shell.end {
            Some(end) => crate::call_end::from_journal(end),
            None if exit_code == Some(0) => CallEnd::Completed,
            None => CallEnd::Failed,
        };
        return Some(HistoryItem::UserShell { id, command, output, end, exit_code, covered });
    }
    let images: Vec<ImageInfo> = u
        .content
        .iter()
        .filter_map(|b| b.as_image())
        .map(|i| crate::images::info(i, false))
        .collect();
    // Engine notes to the model are not the user's words.
    let said = !text.is_empty() || !images.is_empty();
    (u.is_plain() && said).then_some(HistoryItem::User { id, text, covered, images })
}

fn compaction_item(a: &codewhale_journal::ActiveCompaction) -> HistoryItem {
    record_item(a.id.to_string(), &a.record)
}

fn record_item(id: String, r: &codewhale_journal::CompactionPayload) -> HistoryItem {
    HistoryItem::Compaction {
        id,
        trigger: trigger_of(&r.trigger),
        path: kind_of(&r.path),
        covered_entries: r.covers.as_ref().map_or(0, |c| c.count),
        retained: r.retained_ids.len() as u64,
        tokens_before: r.tokens_before.unwrap_or(0),
        tokens_after: r.tokens_after.unwrap_or(0),
        note: checkpoint_note(r).into_owned(),
        background: r.background,
    }
}

/// The protocol's trigger of a journaled one (an unknown value reads as `auto`).
pub fn trigger_of(t: &codewhale_journal::Trigger) -> CompactionTrigger {
    match t {
        codewhale_journal::Trigger::Manual => CompactionTrigger::Manual,
        codewhale_journal::Trigger::Reactive => CompactionTrigger::Reactive,
        codewhale_journal::Trigger::Idle => CompactionTrigger::Idle,
        _ => CompactionTrigger::Auto,
    }
}

/// The protocol's path of a journaled one.
pub fn kind_of(p: &codewhale_journal::CompactionPath) -> CompactionKind {
    match p {
        codewhale_journal::CompactionPath::PruneOnly => CompactionKind::PruneOnly,
        _ => CompactionKind::Summary,
    }
}

fn texts(blocks: &[Block]) -> String {
    blocks.iter().filter_map(Block::as_text).collect::<Vec<_>>().join("\n")
}

fn display(text: &Text) -> String {
    let text = text.as_str();
    if text.len() <= MAX_OUTPUT_BYTES {
        return text.to_owned();
    }
    let end = text.floor_char_boundary(MAX_OUTPUT_BYTES);
    format!("{}\n… (shortened for display)", &text[..end])
}

/// How a journaled call ended, from the fields its result carries; a result written before
/// they existed is read by the engine's own wording of it ([`crate::turn::calls`]).
fn outcome_of(r: &codewhale_journal::ToolResultPayload) -> ToolOutcome {
    // Read as text only when a question needs it: outputs can be megabytes.
    let text = || r.content.to_string();
    let (end, exit_code, reason) = match &r.end {
        Some(end) => {
            let end = crate::call_end::from_journal(end);
            (end, r.exit_code.and_then(|c| i32::try_from(c).ok()), r.reason.clone())
        }
        None => {
            let text = text();
            let (end, reason) = legacy_end(r.is_error, &text);
            (end, crate::tools::shell::exit_code_of(&text), reason)
        }
    };
    // The shell tool writes the code as its last line; a file written otherwise may not.
    let exit_code_in_output =
        exit_code.is_some() && crate::tools::shell::exit_code_of(&text()) == exit_code;
    ToolOutcome {
        is_error: r.is_error,
        output: display(&r.content),
        end,
        exit_code,
        exit_code_in_output,
        reason,
    }
}

/// How a call ended (and what the user said when they declined it), by the wording the
/// engine gave a refused, timed-out or interrupted result before results carried it as data.
fn legacy_end(is_error: bool, output: &str) -> (CallEnd, Option<String>) {
    let end = if !is_error {
        CallEnd::Completed
    } else if let Some(denial) = output.strip_prefix("denied: ") {
        if denial.contains("needs the user's approval") || denial.contains("only the user may") {
            return (CallEnd::NotApproved, None);
        }
        let said = denial.split_once(" and said: ").map(|(_, said)| said);
        let said = said.map(|s| s.split(". Do not repeat it").next().unwrap_or(s).to_owned());
        return (CallEnd::Denied, said);
    } else if output.starts_with(crate::session::INTERRUPTED_RESULT)
        || output.contains("[interrupted by the user")
    {
        CallEnd::Interrupted
    } else if output.lines().next_back().is_some_and(|l| l.starts_with("[timed out after ")) {
        CallEnd::TimedOut
    } else {
        CallEnd::Failed
    };
    (end, None)
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{CallEnd as J, ToolResultPayload};

    use super::*;

    #[test]
    fn a_result_says_how_it_ended_as_data_and_old_results_are_read_by_their_wording() {
        // A shell command whose output happens to start with "denied:" completed.
        let mut r = ToolResultPayload::new(
            "c1",
            "denied: permission to the printer\n[exit code: 0]",
            false,
        );
        r.end = Some(J::Completed);
        r.exit_code = Some(0);
        let o = outcome_of(&r);
        assert_eq!((o.end, o.exit_code), (CallEnd::Completed, Some(0)));
        r.end = Some(J::Failed);
        r.exit_code = Some(2);
        assert_eq!(outcome_of(&r).exit_code, Some(2), "the journaled code, not the text's");
        // Written before results carried it: the engine's own wording tells.
        let old = ToolResultPayload::new("c2", "denied: the user said no", true);
        assert_eq!(outcome_of(&old).end, CallEnd::Denied);
        let old = ToolResultPayload::new("c3", "boom\n[exit code: 3]", true);
        assert_eq!((outcome_of(&old).end, outcome_of(&old).exit_code), (CallEnd::Failed, Some(3)));
    }

    #[test]
    fn who_refused_a_call_and_why_come_back_from_old_and_new_results() {
        let mut r = ToolResultPayload::new("c1", "denied: the user declined this", true);
        r.end = Some(J::Denied);
        r.reason = Some("use the Makefile".into());
        let o = outcome_of(&r);
        assert_eq!((o.end, o.reason.as_deref()), (CallEnd::Denied, Some("use the Makefile")));
        let old = ToolResultPayload::new(
            "c2",
            crate::approval::denied_by_user("shell", Some("use the Makefile")),
            true,
        );
        let o = outcome_of(&old);
        assert_eq!((o.end, o.reason.as_deref()), (CallEnd::Denied, Some("use the Makefile")));
        let old = ToolResultPayload::new(
            "c3",
            crate::approval::denied_without_terminal("shell", crate::approval::ApprovalMode::Ask),
            true,
        );
        assert_eq!(outcome_of(&old).end, CallEnd::NotApproved);
        let old = ToolResultPayload::new("c4", "partial\n[timed out after 200 ms; killed]", true);
        assert_eq!(outcome_of(&old).end, CallEnd::TimedOut);
        // Printed by a command that succeeded: not a refusal.
        let printed = ToolResultPayload::new("c5", "denied: nothing\n[exit code: 0]", false);
        assert_eq!(outcome_of(&printed).end, CallEnd::Completed);
    }

    #[test]
    fn the_engine_says_whether_the_output_states_its_exit_code() {
        let mut r = ToolResultPayload::new("c1", "boom\n[exit code: 2]", true);
        r.end = Some(J::Failed);
        r.exit_code = Some(2);
        assert!(outcome_of(&r).exit_code_in_output);
        // A code journaled beside an output that does not say it (another writer's file).
        let mut bare = ToolResultPayload::new("c2", "boom", true);
        bare.end = Some(J::Failed);
        bare.exit_code = Some(2);
        assert!(!outcome_of(&bare).exit_code_in_output);
        assert!(!outcome_of(&ToolResultPayload::new("c3", "listed", false)).exit_code_in_output);
    }

    /// A notice read back from the journal keeps the level it was journaled with.
    #[test]
    fn journaled_notices_come_back_with_their_level() {
        use codewhale_journal::{HeaderPayload, Level, SystemPayload};
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let payloads: Vec<Payload> = vec![
            UserPayload::text("hello").into(),
            SystemPayload::new(Level::Warning, "a warning").into(),
            SystemPayload::new(Level::Error, "an error").into(),
            SystemPayload::new(Level::Info, "a note").into(),
        ];
        for payload in payloads {
            let e = Entry::new(Some(parent.clone()), payload);
            parent = e.id.clone();
            journal.push(e);
        }
        let page = page(&journal, None, 10, true);
        let notices: Vec<(&str, NoticeLevel)> = page
            .items
            .iter()
            .filter_map(|i| match i {
                HistoryItem::Notice { text, level, .. } => Some((text.as_str(), *level)),
                _ => None,
            })
            .collect();
        assert_eq!(
            notices,
            [
                ("a warning", NoticeLevel::Warning),
                ("an error", NoticeLevel::Error),
                ("a note", NoticeLevel::Info)
            ]
        );
    }

    /// The export's transcript: the whole branch, covered turns marked, each compaction that
    /// applies to it where it was written (a superseded one too), none from another branch.
    #[test]
    fn the_transcript_holds_every_compaction_of_the_branch_where_it_happened() {
        use codewhale_journal::{
            AssistantPayload, CompactionPath, CompactionPayload, Covers, HeaderPayload,
            ToolResultPayload, Trigger,
        };
        let header = Entry::new(None, HeaderPayload::new("s-1", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let mut push = |journal: &mut Journal, payload: Payload| {
            let e = Entry::new(Some(parent.clone()), payload);
            parent = e.id.clone();
            journal.push(e.clone());
            e.id
        };
        let record =
            |first: &codewhale_journal::EntryId, last: &codewhale_journal::EntryId, note: &str| {
                let mut r = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
                r.covers = Some(Covers::new(first.clone(), last.clone(), 4));
                r.note = note.into();
                r
            };
        let u1 = push(&mut journal, UserPayload::text("u1").into());
        let call = Block::tool_use("t1", "shell", serde_json::json!({"command": "ls"}));
        push(&mut journal, AssistantPayload::new(vec![call]).into());
        push(&mut journal, ToolResultPayload::new("t1", "a.rs", false).into());
        let a1 = push(&mut journal, AssistantPayload::new(vec![Block::text("a1")]).into());
        journal.push(Entry::new(Some(a1.clone()), record(&u1, &a1, "note one")));
        push(&mut journal, UserPayload::text("u2").into());
        let a2 = push(&mut journal, AssistantPayload::new(vec![Block::text("a2")]).into());
        // A record of a branch this one does not hold.
        let side = Entry::new(Some(u1.clone()), UserPayload::text("side"));
        let side_id = side.id.clone();
        journal.push(side);
        journal.push(Entry::new(Some(side_id.clone()), record(&side_id, &side_id, "side note")));
        journal.push(Entry::new(Some(a2.clone()), record(&u1, &a2, "note two")));
        push(&mut journal, UserPayload::text("u3").into());

        let t = transcript(&journal, "gpt-test");
        assert_eq!((t.session.as_str(), t.model.as_str()), ("s-1", "gpt-test"));
        let shown: Vec<String> = t
            .items
            .iter()
            .map(|i| match i {
                HistoryItem::User { text, covered, .. } => {
                    format!("{text}{}", if *covered { "*" } else { "" })
                }
                HistoryItem::Assistant { text, covered, .. } => {
                    format!("{text}{}", if *covered { "*" } else { "" })
                }
                HistoryItem::Tool { name, result, covered, .. } => format!(
                    "{name}:{}{}",
                    result.as_ref().map_or("none", |r| r.output.as_str()),
                    if *covered { "*" } else { "" }
                ),
                HistoryItem::Compaction { note, .. } => format!("[{note}]"),
                other => format!("{other:?}"),
            })
            .collect();
        // The active record (note two) covers everything before u3.
        assert_eq!(
            shown,
            ["u1*", "shell:a.rs*", "a1*", "[note one]", "u2*", "a2*", "[note two]", "u3"]
        );
    }
}
