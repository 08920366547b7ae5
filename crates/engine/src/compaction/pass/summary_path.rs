//! The summary path of an attempt (docs/compaction.md, *The summary request*): asks the
//! summarizing model for the summary of what the cut covers, then composes the note and builds
//! the record the attempt commits.
//!
//! Invariant: nothing is written here; a summary that cannot be had becomes the [`Stop`] that
//! says why (a window learned, an unusable reply, a failure, a cancel).

use codewhale_provider::CancellationToken;

use super::request::{PassRequest, Stop};
use crate::compaction::clock::SummaryClock;
use crate::compaction::conversation::{self, build_note};
use crate::compaction::cut;
use crate::compaction::plain::PlainView;
use crate::compaction::port::Conversation;
use crate::compaction::record::{self, SummaryRecord};
use crate::compaction::summarize::{self, SummaryError, SummaryJob};
use crate::compaction::{extract, summary};
use codewhale_protocol::Event;

/// The view a pass started from, as the journal renders it and as plain messages.
#[derive(Clone, Copy)]
pub(super) struct Viewed<'a> {
    pub view: &'a codewhale_journal::View,
    pub plain: &'a PlainView,
}

/// The summary path: asks the model and builds the record of `plan`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn summary_record(
    session: &dyn Conversation,
    clock: &SummaryClock,
    Viewed { view, plain }: Viewed<'_>,
    plan: &cut::CutPlan,
    previous: Option<&codewhale_journal::ActiveCompaction>,
    request: &PassRequest,
    anchors: Option<String>,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> Result<codewhale_journal::CompactionPayload, Stop> {
    let limits = *session.budget().limits();
    let model = session.summarizer_model();
    let covered = &plain.messages[..plan.cut];
    let max_output = codewhale_compaction::budget::summary_max_output(&limits.note_window());
    let summarizer = summarize::Summarizer::of(session, clock, &model);
    let progress = |p: summarize::Progress| {
        emit(Event::CompactionProgress { request: p.request, of: p.of, tokens: p.tokens })
    };
    let job = SummaryJob {
        summarizer: &summarizer,
        view,
        plain,
        cut: plan.cut,
        focus: request.focus.as_deref(),
        max_output,
        max_requests: conversation::max_summary_requests(session),
        note_chars: codewhale_compaction::budget::note_chars(&limits.note_window()),
        progress: Some(&progress),
    };
    let (text, stats) = summarize::summarize(&job, cancel).await.map_err(|e| match e {
        SummaryError::Failed(reason) => Stop::Failed(reason),
        SummaryError::Unusable(reason) => Stop::SummaryFailed(reason),
        SummaryError::Cancelled => Stop::Cancelled,
        SummaryError::WindowLearned { window, source } => Stop::WindowLearned { window, source },
    })?;
    tracing::info!(
        requests = stats.requests,
        chunks = stats.chunks,
        unread = stats.unread,
        "summary written"
    );
    let summary =
        extract::with_extract(session.journal(), view, plain, &text, &stats, job.note_chars);
    if stats.unread > 0 {
        // What the note read, and what only `recall` reaches, in one line.
        emit(Event::Notice {
            level: codewhale_protocol::NoticeLevel::Info,
            message: summary::unread_line(&stats),
        });
    }
    let (note_text, files) =
        build_note(session, covered, previous, &summary, anchors.as_deref()).await;
    let mut record = record::summary_record(SummaryRecord {
        plain,
        plan,
        previous,
        trigger: request.trigger.clone(),
        focus: request.focus.clone().filter(|f| !f.trim().is_empty()),
        summary,
        note: note_text,
        files_touched: files.paths(),
        anchors,
        model,
    })
    .ok_or_else(|| Stop::Refused("nothing before the protected part can be covered".into()))?;
    record::cost(&mut record, &stats);
    Ok(record)
}
