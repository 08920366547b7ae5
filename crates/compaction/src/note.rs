//! The checkpoint note (docs/compaction.md, *The checkpoint note*): the first text block of the
//! checkpoint message.
//!
//! [`compose`] assembles, in this order: the fixed [`HEADER`], the model's summary, `## Files
//! touched` (computed here from the covered tool calls, never by the model), `## Plan` (the live
//! plan restated verbatim, see [`crate::plan`]), `## Running now`
//! (from the background-command registry), the live-state stamp, the anchors restated verbatim
//! and the [`CLOSING`]. Every function is pure (the engine asks `git` for the [`LiveState`]), so
//! the note of a pass is reproducible from its inputs.

use std::collections::HashMap;

use serde_json::Value;

use super::checkpoint::{
    ANCHORS_TITLE, CLOSING, FILES_TOUCHED_TITLE, HEADER, LIVE_STATE_PREFIX, RUNNING_NOW_TITLE,
};
use super::message::{Message, Part, Role};

/// At most this many paths are listed under `## Files touched`.
pub const MAX_FILES_TOUCHED: usize = 256;

/// The file-handling tools whose `path` argument names a file the session touched, with the
/// word the note uses for each.
const FILE_TOOLS: [(&str, &str); 3] =
    [("read_file", "read"), ("write_file", "written"), ("edit_file", "edited")];

/// Files the covered tool calls touched, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilesTouched {
    /// `(path, what was done)`, newest first, at most [`MAX_FILES_TOUCHED`].
    pub entries: Vec<(String, String)>,
    /// How many more distinct paths were left out.
    pub more: usize,
}

impl FilesTouched {
    /// The paths alone (what the record stores).
    pub fn paths(&self) -> Vec<String> {
        self.entries.iter().map(|(p, _)| p.clone()).collect()
    }
}

/// The ids of `covered`'s tool calls whose result says they failed (or were denied or
/// refused): they touched nothing and read nothing.
fn failed_calls(covered: &[Message]) -> std::collections::HashSet<&str> {
    covered
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|part| match part {
            Part::ToolResult { tool_use_id, is_error: true, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect()
}

/// Collects the files of `covered`'s tool calls (newest first), then those of the previous
/// record (`previous`, already newest first) that the new calls did not mention. A call whose
/// result says it failed, was denied or refused touched nothing and is left out.
pub fn files_touched(covered: &[Message], previous: &[String]) -> FilesTouched {
    let mut order: Vec<String> = Vec::new();
    let mut actions: HashMap<String, Vec<&'static str>> = HashMap::new();
    let failed = failed_calls(covered);
    for message in covered.iter().rev().filter(|m| m.role == Role::Assistant) {
        for part in message.content.iter().rev() {
            let Part::ToolUse { id, name, input } = part else { continue };
            if failed.contains(id.as_str()) {
                continue;
            }
            // An MCP tool is listed only when its arguments name a path.
            let action = match FILE_TOOLS.iter().find(|(tool, _)| tool == name) {
                Some((_, action)) => *action,
                None if name.starts_with(codewhale_journal::MCP_TOOL_PREFIX) => {
                    "used by an MCP tool"
                }
                None => continue,
            };
            let Some(path) = input.get("path").and_then(Value::as_str) else { continue };
            let seen = actions.entry(path.to_owned()).or_default();
            if seen.is_empty() {
                order.push(path.to_owned());
            }
            if !seen.contains(&action) {
                seen.push(action);
            }
        }
    }
    for path in previous {
        if !actions.contains_key(path) {
            actions.insert(path.clone(), Vec::new());
            order.push(path.clone());
        }
    }
    let more = order.len().saturating_sub(MAX_FILES_TOUCHED);
    order.truncate(MAX_FILES_TOUCHED);
    let entries = order
        .into_iter()
        .map(|path| {
            let mut done = actions.remove(&path).unwrap_or_default();
            // Chronological order reads better: "read, edited" rather than "edited, read".
            done.reverse();
            let label = if done.is_empty() { "earlier".to_owned() } else { done.join(", ") };
            (path, label)
        })
        .collect();
    FilesTouched { entries, more }
}

/// A background command still alive at the time of the pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    pub command: String,
    pub pid: u32,
    pub ports: Vec<u16>,
}

/// Where the workspace stood when the pass ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveState {
    pub workspace: String,
    /// Branch name, or `None` outside a git repository (or on a detached HEAD).
    pub branch: Option<String>,
    /// Short commit id.
    pub commit: Option<String>,
}

impl LiveState {
    pub fn stamp(&self) -> String {
        let git = match (&self.branch, &self.commit) {
            (Some(branch), Some(commit)) => format!("git branch {branch} at {commit}"),
            (None, Some(commit)) => format!("git detached at {commit}"),
            (Some(branch), None) => format!("git branch {branch} with no commits"),
            (None, None) => "not a git repository".to_owned(),
        };
        format!("{LIVE_STATE_PREFIX} workspace {}; {git}. Re-check before acting.", self.workspace)
    }
}

/// Everything a note is made of.
#[derive(Clone, Copy, Debug)]
pub struct NoteInput<'a> {
    /// The model's summary after caps.
    pub summary: &'a str,
    pub files: &'a FilesTouched,
    pub running: &'a [Running],
    pub live: &'a LiveState,
    /// The full text of the workspace's anchors file, when it has any.
    pub anchors: Option<&'a str>,
    /// The live plan's `## Plan` section ([`crate::plan::section`]), when there is a plan.
    pub plan: Option<&'a str>,
    /// The skills whose `SKILL.md` a covered call read (docs/extending.md, *Skills*), by
    /// name with the path to read again.
    pub skills: &'a [(String, String)],
    /// The covered `task` calls (docs/subagents.md): description and child session id, for
    /// `recall`.
    pub subagents: &'a [(String, String)],
    /// The latest text a `PostCompact` hook printed (docs/extending.md, *Hooks*), restated
    /// verbatim.
    pub hooks: Option<&'a str>,
}

/// The heading of the covered `task` calls.
pub const SUBAGENTS_TITLE: &str = "## Subagents";

/// The heading of the latest `PostCompact` hook output.
pub const HOOKS_TITLE: &str = "## From your hooks (verbatim)";

/// The heading of the skills the covered calls read.
pub const SKILLS_TITLE: &str = "## Skills in use";

/// The skills whose `SKILL.md` a covered `read_file` call read that did not fail, each once,
/// first read first: `skill_of` names the skill a path (as the call gave it) is the
/// `SKILL.md` of, with the path to read.
pub fn skills_read(
    covered: &[Message],
    skill_of: &dyn Fn(&str) -> Option<(String, String)>,
) -> Vec<(String, String)> {
    let failed = failed_calls(covered);
    let mut found: Vec<(String, String)> = Vec::new();
    for message in covered.iter().filter(|m| m.role == Role::Assistant) {
        for part in &message.content {
            let Part::ToolUse { id, name, input } = part else { continue };
            if name != "read_file" || failed.contains(id.as_str()) {
                continue;
            }
            let Some(path) = input.get("path").and_then(Value::as_str) else { continue };
            if let Some(skill) = skill_of(path) {
                if !found.contains(&skill) {
                    found.push(skill);
                }
            }
        }
    }
    found
}

/// The note's full text.
pub fn compose(input: &NoteInput<'_>) -> String {
    let mut out = String::with_capacity(HEADER.len() + input.summary.len() + 1024);
    out.push_str(HEADER);
    out.push_str("\n\n");
    out.push_str(input.summary.trim());
    if !input.files.entries.is_empty() {
        out.push_str(&format!("\n\n{FILES_TOUCHED_TITLE}\n"));
        for (path, done) in &input.files.entries {
            out.push_str(&format!("- {path} ({done})\n"));
        }
        if input.files.more > 0 {
            out.push_str(&format!("- and {} more\n", input.files.more));
        }
        out.pop();
    }
    if let Some(plan) = input.plan {
        out.push_str("\n\n");
        out.push_str(plan);
    }
    if !input.running.is_empty() {
        out.push_str(&format!("\n\n{RUNNING_NOW_TITLE}\n"));
        for r in input.running {
            let ports = if r.ports.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = r.ports.iter().map(u16::to_string).collect();
                format!(", listening on {}", list.join(", "))
            };
            out.push_str(&format!("- `{}` (pid {}{ports})\n", r.command, r.pid));
        }
        out.pop();
    }
    out.push_str("\n\n");
    out.push_str(&input.live.stamp());
    if !input.skills.is_empty() {
        out.push_str(&format!("\n\n{SKILLS_TITLE}\n"));
        let listed: Vec<String> = input
            .skills
            .iter()
            .map(|(name, path)| format!("- `{name}`: read `{path}` again before relying on it"))
            .collect();
        out.push_str(&listed.join("\n"));
    }
    if !input.subagents.is_empty() {
        out.push_str(&format!("\n\n{SUBAGENTS_TITLE}\n"));
        let listed: Vec<String> = input
            .subagents
            .iter()
            .map(|(description, id)| {
                format!("- \"{description}\": session {id} (recall{{\"entry\": \"{id}\"}} reads what it found)")
            })
            .collect();
        out.push_str(&listed.join("\n"));
    }
    if let Some(hooks) = input.hooks.filter(|h| !h.trim().is_empty()) {
        out.push_str(&format!("\n\n{HOOKS_TITLE}\n"));
        out.push_str(hooks.trim_end_matches('\n'));
    }
    if let Some(anchors) = input.anchors.filter(|a| !a.trim().is_empty()) {
        out.push_str(&format!("\n\n{ANCHORS_TITLE}\n"));
        out.push_str(anchors.trim_end_matches('\n'));
    }
    out.push_str("\n\n");
    out.push_str(CLOSING);
    out
}

/// The checkpoint message of a note: exactly two text blocks, the note and the marker.
#[cfg(test)]
pub fn checkpoint_message(note: impl Into<String>) -> Message {
    Message::new(Role::User, vec![Part::text(note), Part::text(super::checkpoint::MARKER)])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::checkpoint::{is_checkpoint, is_placeholder, note_body};

    fn call(id: &str, name: &str, path: &str) -> Message {
        Message::new(Role::Assistant, vec![Part::tool_use(id, name, json!({ "path": path }))])
    }

    #[test]
    fn files_touched_newest_first_with_actions_and_previous_paths() {
        let covered = vec![
            call("1", "read_file", "src/a.rs"),
            call("2", "edit_file", "src/a.rs"),
            call("3", "shell", "ignored"),
            call("4", "write_file", "src/b.rs"),
        ];
        let files = files_touched(&covered, &["src/b.rs".into(), "old.rs".into()]);
        assert_eq!(
            files.entries,
            vec![
                ("src/b.rs".to_owned(), "written".to_owned()),
                ("src/a.rs".to_owned(), "read, edited".to_owned()),
                ("old.rs".to_owned(), "earlier".to_owned()),
            ]
        );
        assert_eq!(files.more, 0);
    }

    #[test]
    fn calls_that_failed_were_denied_or_refused_touched_nothing() {
        let result = |id: &str, ok: bool| {
            let text = if ok { "written" } else { "denied by the user" };
            let part = if ok { Part::tool_result(id, text) } else { Part::failed_result(id, text) };
            Message::new(Role::Tool, vec![part])
        };
        let covered = vec![
            call("1", "write_file", "denied.rs"),
            result("1", false),
            call("2", "write_file", "written.rs"),
            result("2", true),
            call("3", "edit_file", ".git/hooks/pre-commit"),
            result("3", false),
        ];
        let files = files_touched(&covered, &[]);
        assert_eq!(files.entries, [("written.rs".to_owned(), "written".to_owned())]);
    }

    #[test]
    fn mcp_calls_are_listed_only_when_they_name_a_path() {
        let pathless = Message::new(
            Role::Assistant,
            vec![Part::tool_use("2", "mcp__github__create_issue", json!({"title": "x"}))],
        );
        let covered = vec![call("1", "mcp__fs__read_text_file", "docs/a.md"), pathless];
        let files = files_touched(&covered, &[]);
        assert_eq!(files.entries, [("docs/a.md".to_owned(), "used by an MCP tool".to_owned())]);
    }

    #[test]
    fn files_touched_caps_at_256_and_counts_the_rest() {
        let covered: Vec<Message> =
            (0..300).map(|i| call(&i.to_string(), "read_file", &format!("f{i}.rs"))).collect();
        let files = files_touched(&covered, &[]);
        assert_eq!(files.entries.len(), MAX_FILES_TOUCHED);
        assert_eq!(files.entries[0].0, "f299.rs");
        assert_eq!(files.more, 44);
        let note = compose(&NoteInput {
            summary: "## Objective\nRead everything.",
            files: &files,
            running: &[],
            live: &LiveState { workspace: "/w".into(), branch: None, commit: None },
            anchors: None,
            plan: None,
            skills: &[],
            subagents: &[],
            hooks: None,
        });
        assert!(note.contains("- and 44 more\n\n"));
    }

    #[test]
    fn note_has_every_section_in_order_and_is_a_checkpoint() {
        let files = files_touched(&[call("1", "edit_file", "src/lib.rs")], &[]);
        let running = [Running { command: "cargo run".into(), pid: 42, ports: vec![8080] }];
        let live = LiveState {
            workspace: "/w".into(),
            branch: Some("main".into()),
            commit: Some("abc1234".into()),
        };
        let anchors = "Never push to main.\n---\nUse rustls.\n";
        let note = compose(&NoteInput {
            summary: "## Objective\nShip the parser.\n",
            files: &files,
            running: &running,
            live: &live,
            anchors: Some(anchors),
            plan: Some("## Plan\n- [done] Write the lexer\n- [pending] Write the parser"),
            skills: &[("pdf".into(), "/h/skills/pdf/SKILL.md".into())],
            subagents: &[],
            hooks: Some("Team rules: tabs, no unwrap.\n"),
        });
        let order = [
            HEADER,
            "## Objective\nShip the parser.",
            "## Files touched\n- src/lib.rs (edited)",
            "## Plan\n- [done] Write the lexer\n- [pending] Write the parser",
            "## Running now\n- `cargo run` (pid 42, listening on 8080)",
            "Live state at compaction: workspace /w; git branch main at abc1234. Re-check before acting.",
            "## Skills in use\n- `pdf`: read `/h/skills/pdf/SKILL.md` again before relying on it",
            "## From your hooks (verbatim)\nTeam rules: tabs, no unwrap.",
            "User-pinned anchors (verbatim):\nNever push to main.\n---\nUse rustls.",
            CLOSING,
        ];
        let positions: Vec<usize> = order.iter().map(|s| note.find(s).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{note}");
        assert!(note.starts_with("Codewhale handoff note."));
        assert!(note.ends_with(CLOSING));
        assert_eq!(note_body(&note), "## Objective\nShip the parser.");
        assert!(!is_placeholder(note_body(&note)));
        assert!(is_checkpoint(&checkpoint_message(note)));
    }

    /// The header's claims, checked against what the journal's view function renders: retained
    /// user messages just before the note, the recent conversation after it, shortened outputs
    /// marked with the phrases the header quotes.
    #[test]
    fn header_describes_what_the_view_renders() {
        use codewhale_journal::{
            self as j, AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry,
            HeaderPayload, ItemKind, ToolResultPayload, Trigger, UserPayload,
        };
        assert_eq!(super::super::checkpoint::MARKER, j::CHECKPOINT_MARKER);
        assert!(HEADER.contains("\"output pruned by compaction\""));
        assert!(j::pruned_stub(5000, &"e".into()).contains("output pruned by compaction"));
        assert!(HEADER.contains("recall"));
        assert!(HEADER.contains(&format!("\"{}\"", j::cut::WORDS)));

        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut journal = j::Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let mut push = |journal: &mut j::Journal, payload: j::Payload| {
            let e = Entry::new(Some(parent.clone()), payload);
            parent = e.id.clone();
            journal.push(e.clone());
            e.id
        };
        let u1 = push(&mut journal, UserPayload::text("first ask").into());
        let call = Block::tool_use("t1", "read_file", json!({"path": "a.rs"}));
        push(&mut journal, AssistantPayload::new(vec![call]).into());
        let r1 = push(&mut journal, ToolResultPayload::new("t1", "x".repeat(10_000), false).into());
        let a2 = push(&mut journal, AssistantPayload::new(vec![Block::text("read it")]).into());
        push(&mut journal, UserPayload::text("second ask").into());
        let call = Block::tool_use("t2", "read_file", json!({"path": "b.rs"}));
        push(&mut journal, AssistantPayload::new(vec![call]).into());
        let r2 = push(&mut journal, ToolResultPayload::new("t2", "y".repeat(10_000), false).into());
        push(&mut journal, AssistantPayload::new(vec![Block::text("done")]).into());

        let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
        record.covers = Some(Covers::new(u1.clone(), a2, 4));
        record.retained_ids = vec![u1.clone()];
        record.bounded = vec![j::Bounded::new(r2.clone(), 1000)];
        record.note = format!("{HEADER}\n\n## Objective\nRead the files.");
        record.summary = Some("## Objective\nRead the files.".into());
        journal.push(Entry::new(Some(header.id.clone()), record));

        let view = j::render(&journal, journal.head_id().as_str());
        let kinds: Vec<ItemKind> = view.items.iter().map(|i| i.kind).collect();
        let at = kinds.iter().position(|k| *k == ItemKind::Checkpoint).unwrap();
        assert_eq!(view.items[at - 1].source, u1, "retained just before the note");
        assert_eq!(at, 1);
        assert!(view.items.iter().all(|i| i.source != r1), "covered output is gone");
        let bounded = view.items.iter().find(|i| i.source == r2).unwrap();
        assert!(at < view.items.iter().position(|i| i.source == r2).unwrap());
        let text = bounded.tool_result().unwrap().content.to_string();
        assert!(text.contains(j::cut::WORDS), "{text}");
        let first = view.items[at].blocks()[0].as_text().unwrap();
        assert!(first.starts_with(HEADER));
    }

    #[test]
    fn live_state_outside_a_repository_says_so() {
        let live = LiveState { workspace: "/w".into(), branch: None, commit: None };
        assert!(live.stamp().contains("not a git repository"));
    }
}
