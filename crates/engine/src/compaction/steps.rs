//! What the passes — foreground and background — and the triggers share over a session: the
//! summary output budget, whether an auto pass can help now, composing a note from a summary,
//! the backoff's session side, and the warning a pass leaves. Below [`super::pass`],
//! [`super::background`] and [`super::triggers`], which all call it; it calls none of them.

use super::note::{self, LiveState, NoteInput, Running};
use crate::session::Session;
use codewhale_protocol::{Event, NoticeLevel};

/// Output budget of a summary request: room for a 12,000-character note with headroom.
const SUMMARY_MAX_OUTPUT: u64 = 8_192;

/// The output budget of a summary request under `limits`. In a small window it is twice the
/// note's budget (headroom for a model that writes long), not the whole reserved output: a
/// summary request's input may use what the note does not need of the window.
pub(crate) fn summary_max_output(limits: &crate::budget::Limits) -> u32 {
    let mut most = SUMMARY_MAX_OUTPUT.min(limits.reserved_output);
    if limits.window <= crate::budget::SMALL_WINDOW {
        most = most.min(small_note_tokens(limits).saturating_mul(2));
    }
    most.max(1) as u32
}

/// The note's budget in a small window, before any cap of the request's output.
fn small_note_tokens(limits: &crate::budget::Limits) -> u64 {
    let full = (super::summary::NOTE_MAX_CHARS / 4) as u64;
    (limits.usable_input / 10).max(MIN_NOTE_TOKENS).min(full)
}

/// The smallest note budget, in tokens.
const MIN_NOTE_TOKENS: u64 = 300;

/// The note's budget under `limits`, in tokens: the 12,000-character cap (about 3,000 tokens),
/// or in a small window about a tenth of usable input (at least 300); never more than a summary
/// request may write.
pub(crate) fn note_budget_tokens(limits: &crate::budget::Limits) -> u64 {
    let budget = if limits.window <= crate::budget::SMALL_WINDOW {
        small_note_tokens(limits)
    } else {
        (super::summary::NOTE_MAX_CHARS / 4) as u64
    };
    budget.min(u64::from(summary_max_output(limits)))
}

/// The note's budget in characters, as the instruction states it and the cap applies it.
pub(crate) fn note_chars(limits: &crate::budget::Limits) -> usize {
    let chars = usize::try_from(note_budget_tokens(limits) * 4).unwrap_or(usize::MAX);
    chars.min(super::summary::NOTE_MAX_CHARS)
}

/// The note's own part, in tokens — what Codewhale adds around the model's summary (header,
/// files touched, plan, running commands, live state, anchors, closing) — composed without a
/// summary and without asking git (a branch and a commit of usual length stand in).
pub(crate) fn note_fixed_tokens(
    session: &Session,
    covered: &[super::message::Message],
    previous: Option<&codewhale_journal::ActiveCompaction>,
    anchors: Option<&str>,
) -> u64 {
    let previous_files = previous.map(|c| c.record.files_touched.clone()).unwrap_or_default();
    let files = note::files_touched(covered, &previous_files);
    let running = running(session);
    let live = LiveState {
        workspace: session.workspace().display().to_string(),
        branch: Some("main".to_owned()),
        commit: Some("0123456789ab".to_owned()),
    };
    let plan = session.live_plan().map(|p| crate::plan::section(&p));
    let skills = skills_read(session, covered);
    let subagents = subagents(session, covered);
    let hooks = crate::hooks::latest_post_compact(session);
    let text = note::compose(&NoteInput {
        summary: "",
        files: &files,
        running: &running,
        live: &live,
        anchors,
        plan: plan.as_deref(),
        skills: &skills,
        subagents: &subagents,
        hooks: hooks.as_deref(),
    });
    u64::from(crate::session::counts::exact(&text))
}

/// What each user turn on HEAD's spine added to the view (its text, replies and tool results
/// as the view holds them; a covered turn as its entries were counted), oldest first, without
/// the latest turn, which is still going on. Read from the journal's index: no entry is loaded.
pub(crate) fn turn_sizes(session: &Session, plain: &super::plain::PlainView) -> Vec<u64> {
    use std::collections::HashMap;
    let in_view: HashMap<&str, u64> =
        plain.sources.iter().map(|s| s.as_str()).zip(plain.tokens.iter().copied()).collect();
    let journal = session.journal();
    let mut turns: Vec<u64> = Vec::new();
    for pos in journal.spine_positions(journal.head_position()) {
        if !journal.is_model_visible_at(pos) {
            continue;
        }
        let id = journal.id_at(pos);
        let tokens = in_view
            .get(&*id)
            .copied()
            .or_else(|| journal.tokens_at(pos).map(u64::from))
            .unwrap_or(0);
        if journal.has_flags(pos, codewhale_journal::flags::PLAIN) {
            turns.push(tokens);
        } else if let Some(turn) = turns.last_mut() {
            *turn += tokens;
        }
    }
    turns.pop();
    turns
}

/// What an auto pass on `plain` aims to leave (docs/compaction.md, *The cut*: a pass buys
/// room), and the median turn it must leave room for, in estimated tokens.
pub(crate) fn room(
    session: &Session,
    plain: &super::plain::PlainView,
    previous: Option<&codewhale_journal::ActiveCompaction>,
    anchors: Option<&str>,
    to_come: u64,
) -> (super::pass_plan::Room, u64) {
    let budget = session.budget();
    let limits = *budget.limits();
    let turns = turn_sizes(session, plain);
    let median = super::pass_plan::median_turn(&turns);
    let aim = super::pass_plan::aim(limits.threshold, budget.calibrated(median), turns.len());
    // The note's own part as the widest cut would make it: files touched by everything before
    // the round.
    let policy = super::cut::CutPolicy::of(&limits, budget.calibration());
    let round_start = policy.round(&plain.messages, &plain.tokens).map_or(0, |r| r.start);
    let covered = &plain.messages[..round_start.min(plain.messages.len())];
    let note = note_fixed_tokens(session, covered, previous, anchors) + note_budget_tokens(&limits);
    let fixed = budget.system_tokens() + note;
    (super::pass_plan::Room { aim, fixed, to_come }, median)
}

/// What the view a background note yields must be at or below to be committed, in provider
/// tokens: the aim of an auto pass when its snapshot was planned to reach it; otherwise —
/// not even the smallest view could be at the aim — the threshold less one median turn, the
/// room a foreground pass would have to leave before it paid for a request of its own.
pub(crate) fn commit_target(
    session: &Session,
    plain: &super::plain::PlainView,
    previous: Option<&codewhale_journal::ActiveCompaction>,
    anchors: Option<&str>,
    reaches_aim: bool,
) -> u64 {
    let (room, median) = room(session, plain, previous, anchors, 0);
    if reaches_aim {
        return room.aim;
    }
    let budget = session.budget();
    budget.limits().threshold.saturating_sub(budget.calibrated(median)).max(room.aim)
}

/// The background commands still alive, as the note's `## Running now` lists them.
fn running(session: &Session) -> Vec<Running> {
    session
        .background()
        .running()
        .into_iter()
        .map(|r| Running { command: r.command, pid: r.pid, ports: r.ports })
        .collect()
}

/// Summary requests one pass may send: `compaction.max_summary_requests`, default
/// [`super::summary_input::DEFAULT_MAX_REQUESTS`].
pub(crate) fn max_summary_requests(session: &Session) -> u32 {
    session
        .config()
        .compaction
        .max_summary_requests
        .unwrap_or(super::summary_input::DEFAULT_MAX_REQUESTS)
        .max(1)
}

/// The summary a note carries: the model's text after caps and, when the request limit left
/// the oldest covered messages unread, the extract of them at the end of its `Reference`
/// section (the cap leaves room for it).
pub(crate) fn with_extract(
    session: &Session,
    view: &codewhale_journal::View,
    plain: &super::plain::PlainView,
    text: &str,
    stats: &super::summary::SummaryStats,
    note_chars: usize,
) -> String {
    let unread = stats.unread.min(view.items.len());
    let time = |index: usize| {
        let id = view.items.get(index)?.source.as_str();
        session.journal().get(id).map(|e| e.ts.to_string())
    };
    let ends = super::extract::Ends {
        first: view.items.first().map(|i| i.source.to_string()).unwrap_or_default(),
        last: unread.checked_sub(1).map(|i| view.items[i].source.to_string()).unwrap_or_default(),
        first_time: time(0),
        last_time: unread.checked_sub(1).and_then(time),
    };
    let Some(extract) =
        super::extract::extract(&plain.messages[..unread], &plain.tokens[..unread], &ends)
    else {
        return super::summary::cap_to(text, note_chars);
    };
    let room = note_chars.saturating_sub(extract.chars().count() + 2);
    format!(
        "{}

{extract}",
        super::summary::cap_to(text, room)
    )
}

/// Records on `record` what the summary requests behind it cost (`cost_usd`, when known) and
/// the tokens they read and wrote (`usage`), so a session's total (`codewhale sessions`) and
/// `codewhale eval` count its notes too.
pub(crate) fn record_cost(
    record: &mut codewhale_journal::CompactionPayload,
    stats: &super::summary::SummaryStats,
) {
    if let Some(cost) = stats.cost_usd {
        record.extra.insert("cost_usd".to_owned(), serde_json::json!(cost));
    }
    if stats.input_tokens + stats.output_tokens > 0 {
        let usage = serde_json::json!({
            "input_tokens": stats.input_tokens,
            "output_tokens": stats.output_tokens,
        });
        record.extra.insert("usage".to_owned(), usage);
    }
}

/// The tokens a record's summary requests read and wrote (its `usage`), `(0, 0)` when none
/// was recorded.
pub fn record_usage(record: &codewhale_journal::CompactionPayload) -> (u64, u64) {
    let usage = record.extra.get("usage");
    let field = |name: &str| usage.and_then(|u| u.get(name)).and_then(serde_json::Value::as_u64);
    (field("input_tokens").unwrap_or(0), field("output_tokens").unwrap_or(0))
}

/// The one line that says what a note read and what only `recall` reaches.
pub(crate) fn unread_line(stats: &super::summary::SummaryStats) -> String {
    format!(
        "the oldest {} messages (about {} tokens) are kept for recall; the note read the newest \
         {} tokens",
        stats.unread,
        short_count(stats.unread_tokens),
        short_count(stats.read_tokens)
    )
}

/// A token count as people say it: 950, 12k, 172k, 58M.
fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{}k", n / 1_000),
        _ => format!("{}M", n / 1_000_000),
    }
}

/// Growth (as a fraction of usable input) after which an auto pass is tried again when the last
/// pass could not get below the threshold.
const REGROWTH_FRACTION: f64 = 0.1;

/// How much the conversation must grow before a held-back auto pass is tried again.
fn regrowth(session: &Session) -> u64 {
    (session.budget().limits().usable_input as f64 * REGROWTH_FRACTION) as u64
}

/// Whether an auto pass can help now. Not when the active record already could not get a tenth
/// of usable input below the threshold (the user's own protected messages fill the window) and
/// the conversation has not grown by a tenth of usable input since: that pass would summarize
/// next to nothing, on every turn. Reactive and manual passes are never held back.
pub(crate) fn auto_worthwhile(session: &Session) -> bool {
    let limits = *session.budget().limits();
    let pressure = session.budget().pressure().tokens;
    let view = session.render();
    let Some(after) = view.compaction.as_ref().and_then(|c| c.record.tokens_after) else {
        return true;
    };
    // A record that left less than that much room (it bounded up to the threshold) counts as
    // one that could not get below it: the next small turn would cross again.
    after + regrowth(session) <= limits.threshold || pressure >= after + regrowth(session)
}

/// The covered `task` calls with their children, as the note lists them (docs/subagents.md).
fn subagents(session: &Session, covered: &[super::message::Message]) -> Vec<(String, String)> {
    use super::message::Part;
    let calls: Vec<&str> = covered
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            Part::ToolUse { id, name, .. } if name == crate::tools::task::TOOL => Some(id.as_str()),
            _ => None,
        })
        .collect();
    crate::children::listed(session, &calls)
}

/// The skills whose `SKILL.md` a covered call read, with the path to read again.
fn skills_read(session: &Session, covered: &[super::message::Message]) -> Vec<(String, String)> {
    let workspace = session.workspace().to_path_buf();
    let skill_of = |raw: &str| {
        let path = std::path::Path::new(raw);
        let path = if path.is_absolute() { path.to_owned() } else { workspace.join(path) };
        let skill = session.commands.skill_of_file(&path)?;
        Some((skill.name.clone(), skill.file.display().to_string()))
    };
    note::skills_read(covered, &skill_of)
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
    let running = running(session);
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
    let skills = skills_read(session, covered);
    let subagents = subagents(session, covered);
    let hooks = crate::hooks::latest_post_compact(session);
    let text = note::compose(&NoteInput {
        summary,
        files: &files,
        running: &running,
        live: &live,
        anchors,
        plan: plan.as_deref(),
        skills: &skills,
        subagents: &subagents,
        hooks: hooks.as_deref(),
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
