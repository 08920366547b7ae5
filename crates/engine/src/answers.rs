//! The session's answers to the front end that are built from the layers above it: the
//! context report (compaction's breakdown of the view), the anchors and whether each is in the
//! view, pages of history, and unpinning an anchor. Functions of a [`Session`] kept here,
//! above compaction, anchors and history pages, so the session itself imports none of them.
//!
//! Invariant: every figure comes from the session's budget; the report's total and the usage
//! event's pressure are the same number with the same label.

use codewhale_journal::{flags, Payload, UserPayload};

use crate::anchors::AnchorStore;
use crate::context_report as report;
use crate::session::Session;
use codewhale_protocol::{AnchorInfo, ContextReport, HistoryPage};

/// The context report of HEAD, built from the live budget.
pub fn context_report(
    session: &mut Session,
    background: Option<codewhale_protocol::BackgroundState>,
) -> ContextReport {
    crate::tokens::wait_ready();
    session.settle_counts();
    let view = session.render();
    let plain = crate::compaction::plain::of(&view, |item| session.known_tokens(item));
    let anchors = anchors_text(session);
    let mut report = report::build(
        session.journal(),
        &view,
        &plain,
        session.budget(),
        session.model(),
        anchors.as_deref(),
    );
    report.file_store_bytes = session.file_store().size_bytes();
    report.skills = session.commands().skills_report(session.budget().limits().usable_input);
    report.background =
        background.map(|state| codewhale_protocol::report::BackgroundReport { state });
    report
}

/// The workspace's anchors file, redacted as the checkpoint restates it.
fn anchors_text(session: &Session) -> Option<String> {
    let text = AnchorStore::new(session.workspace()).text().ok().flatten()?;
    Some(session.redactor().redact(&text).into_owned())
}

/// The anchors, numbered as `/anchor rm` takes them, and whether each is in the view.
pub fn anchor_infos(session: &Session) -> Vec<AnchorInfo> {
    let Some(text) = anchors_text(session) else { return Vec::new() };
    let view = session.render();
    let plain = crate::compaction::plain::of(&view, |item| session.known_tokens(item));
    report::anchors_in_view(&plain, &text)
        .into_iter()
        .enumerate()
        .map(|(i, (text, in_view))| AnchorInfo { index: i + 1, text, in_view })
        .collect()
}

/// HEAD's whole conversation as the user saw it (`/export`).
pub fn transcript(session: &Session) -> codewhale_protocol::Transcript {
    crate::history_pages::transcript(session.journal(), session.model())
}

/// A page of HEAD's conversation for the UI.
pub fn history_page(
    session: &Session,
    before: Option<&str>,
    limit: usize,
    reset: bool,
) -> HistoryPage {
    crate::history_pages::page(session.journal(), before, limit, reset)
}
/// Unpins anchor `index` (1-based): removed from the workspace's file, and withdrawn from
/// the conversation by a synthetic note (`withdraws: <anchor entry>`), so later views
/// leave the anchor out and the model reads, once, that it no longer applies. Returns the
/// notice to show.
pub fn withdraw_anchor(
    session: &mut Session,
    index: usize,
) -> Result<(codewhale_protocol::AnchorChange, String), String> {
    let store = AnchorStore::new(session.workspace());
    let removed = store.remove(index).map_err(|e| e.to_string())?;
    session.guard().accept(&[session.workspace().join(crate::anchors::ANCHORS_FILE)]);
    let pinned = session.redactor().redact(removed.trim()).into_owned();
    let journal = session.journal();
    let spine = journal.spine_positions(journal.head_position());
    let entry =
        spine.into_iter().rev().filter(|&p| journal.has_flags(p, flags::ANCHOR)).find_map(|p| {
            let e = journal.read_entry(p);
            matches!(&e.payload, Payload::User(u)
            if u.content.iter().filter_map(|b| b.as_text()).any(|t| t.trim() == pinned))
            .then(|| e.id.clone())
        });
    let first = pinned.lines().next().unwrap_or_default();
    let mut note = UserPayload::synthetic(format!(
        "The user withdrew this pinned note; it no longer applies: \"{first}\""
    ));
    note.withdraws = entry;
    session.append(note).map_err(|e| format!("the anchor was removed from the file, but {e}"))?;
    // The pin left the view: the budget is the journal's again (it subtracts the pin).
    session.replay_budget();
    let message = format!("anchor {index} removed: {first}");
    Ok((codewhale_protocol::AnchorChange::Removed { index, text: pinned }, message))
}
