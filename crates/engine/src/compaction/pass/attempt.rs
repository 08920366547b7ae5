//! One attempt of a pass (docs/compaction.md): the steps `pass::run` tries, in the order the
//! pure [`pass_plan::plan`] gives them — a finished background note first, then prune,
//! summarize or bound — each ending in `commit`, which fits, checks and writes the record.
//!
//! Invariants: every record goes through `commit::commit`; a step whose record is refused hands
//! over to the next one, and the attempt writes nothing when none is committed; a cancelled
//! attempt stops before it asks the model and before it commits a summary or a bound record.

use std::ops::ControlFlow;

use codewhale_journal::{ActiveCompaction, CompactionPayload, EntryId, Trigger, View};
use codewhale_provider::CancellationToken;

use super::request::{PassOutcome, PassRequest, Stop};
use super::summary_path::{summary_record, Viewed};
use crate::anchors::AnchorStore;
use crate::budget::Limits;
use crate::compaction::background::{self, Tried};
use crate::compaction::clock::SummaryClock;
use crate::compaction::commit::{self, Proposal, Written};
use crate::compaction::conversation;
use crate::compaction::cut::CutPlan;
use crate::compaction::judge::Refusal;
use crate::compaction::pass_plan::{self, PassPlan, PlanInputs, SendCheck};
use crate::compaction::plain::PlainView;
use crate::compaction::port::Conversation;
use crate::compaction::record;
use codewhale_protocol::Event;

/// The plain form of the pass's view, which keeps the tool calls' inputs: the view's items are
/// left without them (summary requests take them back for the items they carry).
fn plain_of(session: &dyn Conversation, view: &mut codewhale_journal::View) -> PlainView {
    crate::compaction::plain::taking_inputs(view, |item| session.known_tokens(item))
}

fn written(w: Written) -> PassOutcome {
    PassOutcome::Compacted {
        id: w.id.to_string(),
        path: w.path,
        tokens_before: w.tokens_before,
        tokens_after: w.tokens_after,
        fits: w.fits,
    }
}

/// One attempt: reads what the pass starts from, tries a finished background note, then the
/// steps of the plan in order (prune first, summarize, bound) until one record is committed or
/// none can be.
pub(super) async fn attempt(
    session: &mut dyn Conversation,
    clock: &SummaryClock,
    request: &PassRequest,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> Result<PassOutcome, Stop> {
    let start = Start::read(session)?;
    let steps = match background_first(session, request, start).await {
        ControlFlow::Break(done) => return Ok(done),
        ControlFlow::Continue(start) => Steps::new(session, request, start),
    };
    let (plan, median) = steps.plan(session);
    if let Some(pruned) = &plan.prune_first {
        if let Some(done) = steps.prune_first(session, pruned).await {
            return Ok(done);
        }
    }

    if cancel.is_cancelled() {
        return Err(Stop::Cancelled);
    }
    let why_not_summary = match steps.summary_cut(session, &plan, median) {
        Ok(cut) => return steps.summarize(session, clock, &cut, cancel, emit).await,
        Err(why) => why,
    };

    // Nothing to summarize: prune what the prune found and bound the rest to fit.
    if cancel.is_cancelled() {
        return Err(Stop::Cancelled);
    }
    steps.bound(session, &plan.bound_pruned, why_not_summary).await
}

/// What an attempt starts from, read once the counts are exact.
struct Start {
    view: View,
    plain: PlainView,
    /// The view holds a finished background note, folded in as its previous note.
    folded: bool,
    /// The anchors, redacted.
    anchors: Option<String>,
    limits: Limits,
    /// The pressure before the pass, in provider tokens.
    before: u64,
}

impl Start {
    /// The view at the head with its plain form, the anchors, the limits and the pressure.
    fn read(session: &mut dyn Conversation) -> Result<Start, Stop> {
        // A pass reports the figure `codewhale context` gives: exact counts, the system prompt's
        // included, not provisional upper bounds (a `/compact` right after `exec` runs would
        // otherwise start from a higher figure).
        crate::tokens::wait_ready();
        session.settle_counts();
        let mut view = session.render();
        let plain = plain_of(session, &mut view);
        // Compared and restated in their redacted form: a secret written into the file by hand
        // never reaches a note, and the contract compares what the note can hold.
        let anchors = AnchorStore::new(session.workspace())
            .text()
            .map_err(|e| Stop::Failed(format!("cannot read the anchors: {e}")))?
            .map(|a| session.redactor().redact(&a).into_owned());
        let limits = *session.budget().limits();
        let before = session.budget().pressure().tokens;
        Ok(Start { view, plain, folded: false, anchors, limits, before })
    }
}

/// A background note first: committed as it is when it buys the room an auto pass aims
/// at (the attempt ends with it), else the view this pass summarizes.
async fn background_first(
    session: &mut dyn Conversation,
    request: &PassRequest,
    start: Start,
) -> ControlFlow<PassOutcome, Start> {
    let (view, plain, folded) = match &request.background {
        Some(prepared) => {
            let previous = start.view.compaction.as_ref();
            let target = conversation::commit_target(
                session,
                &start.plain,
                previous,
                start.anchors.as_deref(),
                prepared.reaches_aim,
            );
            let current = background::Current {
                view: &start.view,
                plain: &start.plain,
                anchors: start.anchors.as_deref(),
                before: start.before,
                target,
            };
            match background::try_commit(session, prepared, current).await {
                Tried::Written(done) => return ControlFlow::Break(written(done)),
                Tried::FoldIn(folded) => (folded.0, folded.1, true),
                Tried::Discard => (start.view, start.plain, false),
            }
        }
        None => (start.view, start.plain, false),
    };
    ControlFlow::Continue(Start { view, plain, folded, ..start })
}

/// What the steps after the background note share: the view they start from, the figures read
/// before them and the head a prune-only record is parented on.
struct Steps<'a> {
    request: &'a PassRequest,
    start: Start,
    calibration: f64,
    head: EntryId,
}

impl<'a> Steps<'a> {
    fn new(session: &dyn Conversation, request: &'a PassRequest, start: Start) -> Steps<'a> {
        let calibration = session.budget().calibration();
        let head = session.journal().head_id().clone();
        Steps { request, start, calibration, head }
    }

    /// The record the view starts from (a folded-in background note's, when there is one).
    fn previous(&self) -> Option<&ActiveCompaction> {
        self.start.view.compaction.as_ref()
    }

    /// An auto pass buys room: it aims below the threshold by three median turns.
    fn auto(&self) -> bool {
        matches!(self.request.trigger, Trigger::Auto | Trigger::Idle)
    }

    /// What `commit` is asked to write: `record`, parented on `parent`, under the threshold.
    fn proposal(&self, record: CompactionPayload, parent: EntryId) -> Proposal<'_> {
        Proposal {
            plain: &self.start.plain,
            previous: self.previous().map(|c| &c.record),
            record,
            parent,
            anchors: self.start.anchors.as_deref(),
            tokens_before: self.start.before,
            target: self.start.limits.threshold,
            exact: false,
        }
    }

    /// The plan of the pass, and the median turn an auto pass keeps spare.
    fn plan(&self, session: &dyn Conversation) -> (PassPlan, u64) {
        let limits = self.start.limits;
        let (room, median) = conversation::room(
            session,
            &self.start.plain,
            self.previous(),
            self.start.anchors.as_deref(),
            0,
        );
        let plan = pass_plan::plan(&PlanInputs {
            plain: &self.start.plain,
            trigger: &self.request.trigger,
            mode: self.request.mode,
            folded: self.start.folded,
            pressure: self.start.before,
            threshold: limits.threshold,
            usable_input: limits.usable_input,
            window: limits.window,
            calibration: self.calibration,
            retained_user_tokens: session.config().compaction.retained_user_tokens,
            room: self.auto().then_some(room),
        });
        (plan, median)
    }

    /// The prune-only record of `pruned`, when that alone reaches the prune target: the outcome
    /// when it is committed.
    async fn prune_first(
        &self,
        session: &mut dyn Conversation,
        pruned: &[usize],
    ) -> Option<PassOutcome> {
        let record = record::prune_record(
            &self.start.plain,
            pruned,
            self.previous(),
            self.request.trigger.clone(),
        );
        match commit::commit(session, self.proposal(record, self.head.clone())).await {
            Ok(done) => return Some(written(done)),
            // The carried-forward note may predate the current anchors: summarize instead.
            Err(Refusal::Failed(reason)) => {
                tracing::info!(%reason, "prune-only result refused, trying the summary path")
            }
            Err(Refusal::NoChange | Refusal::NoGain(_) | Refusal::OverTarget) => {}
        }
        None
    }

    /// The cut a summary covers when its note could be committed, else why there is no summary.
    fn summary_cut(
        &self,
        session: &dyn Conversation,
        plan: &PassPlan,
        median: u64,
    ) -> Result<CutPlan, String> {
        let limits = self.start.limits;
        plan.summary.clone().and_then(|cut| {
            let covered = &self.start.plain.messages[..cut.cut];
            let check = SendCheck {
                before: self.start.plain.total(),
                tail: cut.tail_tokens,
                retained: cut.retained_tokens,
                note_fixed: conversation::note_fixed_tokens(
                    session,
                    covered,
                    self.previous(),
                    self.start.anchors.as_deref(),
                ),
                note_budget: codewhale_compaction::budget::note_budget_tokens(
                    &limits.note_window(),
                ),
                prefix: session.budget().system_tokens(),
                threshold: crate::budget::from_provider(limits.threshold as f64, self.calibration),
                manual: self.request.trigger == Trigger::Manual,
                spare: self.auto().then_some(median),
            };
            // Decided before any request: a summary that could not be committed is not paid for.
            pass_plan::worth_sending(&check).map(|()| cut).inspect_err(
                |why| tracing::info!(%why, "no summary request: it could not be committed"),
            )
        })
    }

    /// The summary path: the record of `cut`, its summary written by the model, committed in
    /// place of what it covers.
    async fn summarize(
        &self,
        session: &mut dyn Conversation,
        clock: &SummaryClock,
        cut: &CutPlan,
        cancel: CancellationToken,
        emit: &(dyn Fn(Event) + Send + Sync),
    ) -> Result<PassOutcome, Stop> {
        let mut record = summary_record(
            session,
            clock,
            Viewed { view: &self.start.view, plain: &self.start.plain },
            cut,
            self.previous(),
            self.request,
            self.start.anchors.clone(),
            cancel.clone(),
            emit,
        )
        .await?;
        if cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if self.start.folded {
            self.follow_folded(&mut record);
        }
        let first = record.covers.as_ref().map(|c| c.first.clone());
        let parent = first
            .and_then(|f| session.journal().get(f.as_str()).and_then(|e| e.parent.clone()))
            .unwrap_or_else(|| session.journal().header_entry().id.clone());
        match commit::commit(session, self.proposal(record, parent)).await {
            Ok(done) => Ok(written(done)),
            Err(Refusal::Failed(reason)) => Err(Stop::Failed(reason)),
            Err(Refusal::NoGain(reason)) => Err(no_gain(self.request, reason)),
            Err(Refusal::NoChange | Refusal::OverTarget) => {
                Err(Stop::Refused("the view would not change".into()))
            }
        }
    }

    /// The folded-in note was never written: this record follows the one before it, and
    /// carries what its request cost too.
    fn follow_folded(&self, record: &mut CompactionPayload) {
        let previous = self.previous();
        record.previous_id = previous.and_then(|p| p.record.previous_id.clone());
        let folded_cost = previous.and_then(|p| p.record.extra.get("cost_usd"));
        if let (Some(own), Some(earlier)) = (
            record.extra.get("cost_usd").and_then(serde_json::Value::as_f64),
            folded_cost.and_then(serde_json::Value::as_f64),
        ) {
            record.extra.insert("cost_usd".to_owned(), serde_json::json!(own + earlier));
        }
        if let Some(earlier) = previous.map(|p| record::usage(&p.record)) {
            let own = record::usage(record);
            let usage = serde_json::json!({
                "input_tokens": own.0 + earlier.0,
                "output_tokens": own.1 + earlier.1,
            });
            record.extra.insert("usage".to_owned(), usage);
        }
    }

    /// The bound path, when there is nothing to summarize: a prune-only record of what the prune
    /// found that shortens the rest, largest first, so the request fits.
    async fn bound(
        &self,
        session: &mut dyn Conversation,
        pruned: &[usize],
        why_not_summary: String,
    ) -> Result<PassOutcome, Stop> {
        let record = record::prune_record(
            &self.start.plain,
            pruned,
            self.previous(),
            self.request.trigger.clone(),
        );
        match commit::commit(session, self.proposal(record, self.head.clone())).await {
            Ok(done) => Ok(written(done)),
            Err(Refusal::NoChange) => Err(Stop::Refused(why_not_summary)),
            Err(Refusal::NoGain(reason)) => Err(no_gain(self.request, reason)),
            Err(Refusal::Failed(reason)) => Err(Stop::Failed(reason)),
            // Only an exact proposal is refused so.
            Err(Refusal::OverTarget) => {
                Err(Stop::Failed("the view stays over the threshold".into()))
            }
        }
    }
}

/// A pass that would not shrink the view: information for a manual pass, a failure for an
/// auto or reactive one (docs/compaction.md, *Triggers*).
fn no_gain(request: &PassRequest, reason: String) -> Stop {
    if request.trigger == Trigger::Manual {
        Stop::Refused(reason)
    } else {
        Stop::Failed(reason)
    }
}
