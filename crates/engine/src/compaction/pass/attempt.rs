//! One attempt of a pass (docs/compaction.md): the steps [`super::run`] tries, in the order the
//! pure [`pass_plan::plan`] gives them — a finished background note first, then prune,
//! summarize or bound — each ending in `commit`, which fits, checks and writes the record.
//!
//! Invariants: every record goes through `commit::commit`; a step whose record is refused hands
//! over to the next one, and the attempt writes nothing when none is committed; a cancelled
//! attempt stops before it asks the model and before it commits a summary or a bound record.

use codewhale_journal::Trigger;
use codewhale_provider::CancellationToken;

use super::summary_path::{summary_record, Viewed};
use super::{PassOutcome, PassRequest, Stop};
use crate::anchors::AnchorStore;
use crate::compaction::background::{self, Tried};
use crate::compaction::clock::SummaryClock;
use crate::compaction::commit::{self, Proposal, Written};
use crate::compaction::conversation;
use crate::compaction::judge::Refusal;
use crate::compaction::pass_plan::{self, PlanInputs, SendCheck};
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

pub(super) async fn attempt(
    session: &mut dyn Conversation,
    clock: &SummaryClock,
    request: &PassRequest,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> Result<PassOutcome, Stop> {
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
    // A background note first: committed as it is when it buys the room an auto pass aims
    // at, else the view this pass summarizes.
    let (view, plain, folded) = match &request.background {
        Some(prepared) => {
            let previous = view.compaction.as_ref();
            let target = conversation::commit_target(
                session,
                &plain,
                previous,
                anchors.as_deref(),
                prepared.reaches_aim,
            );
            let current = background::Current {
                view: &view,
                plain: &plain,
                anchors: anchors.as_deref(),
                before,
                target,
            };
            match background::try_commit(session, prepared, current).await {
                Tried::Written(done) => return Ok(written(done)),
                Tried::FoldIn(folded) => (folded.0, folded.1, true),
                Tried::Discard => (view, plain, false),
            }
        }
        None => (view, plain, false),
    };
    let budget = session.budget();
    let calibration = budget.calibration();
    let previous = view.compaction.as_ref();
    let head = session.journal().head_id().clone();
    let proposal = |record, parent| Proposal {
        plain: &plain,
        previous: previous.map(|c| &c.record),
        record,
        parent,
        anchors: anchors.as_deref(),
        tokens_before: before,
        target: limits.threshold,
        exact: false,
    };

    // An auto pass buys room: it aims below the threshold by three median turns.
    let auto = matches!(request.trigger, Trigger::Auto | Trigger::Idle);
    let (room, median) = conversation::room(session, &plain, previous, anchors.as_deref(), 0);
    let plan = pass_plan::plan(&PlanInputs {
        plain: &plain,
        trigger: &request.trigger,
        mode: request.mode,
        folded,
        pressure: before,
        threshold: limits.threshold,
        usable_input: limits.usable_input,
        window: limits.window,
        calibration,
        retained_user_tokens: session.config().compaction.retained_user_tokens,
        room: auto.then_some(room),
    });
    if let Some(pruned) = &plan.prune_first {
        let record = record::prune_record(&plain, pruned, previous, request.trigger.clone());
        match commit::commit(session, proposal(record, head.clone())).await {
            Ok(done) => return Ok(written(done)),
            // The carried-forward note may predate the current anchors: summarize instead.
            Err(Refusal::Failed(reason)) => {
                tracing::info!(%reason, "prune-only result refused, trying the summary path")
            }
            Err(Refusal::NoChange | Refusal::NoGain(_) | Refusal::OverTarget) => {}
        }
    }

    if cancel.is_cancelled() {
        return Err(Stop::Cancelled);
    }
    let summary = plan.summary.clone().and_then(|cut| {
        let covered = &plain.messages[..cut.cut];
        let check = SendCheck {
            before: plain.total(),
            tail: cut.tail_tokens,
            retained: cut.retained_tokens,
            note_fixed: conversation::note_fixed_tokens(
                session,
                covered,
                previous,
                anchors.as_deref(),
            ),
            note_budget: codewhale_compaction::budget::note_budget_tokens(&limits.note_window()),
            prefix: session.budget().system_tokens(),
            threshold: crate::budget::from_provider(limits.threshold as f64, calibration),
            manual: request.trigger == Trigger::Manual,
            spare: auto.then_some(median),
        };
        // Decided before any request: a summary that could not be committed is not paid for.
        pass_plan::worth_sending(&check).map(|()| cut).inspect_err(
            |why| tracing::info!(%why, "no summary request: it could not be committed"),
        )
    });
    let why_not_summary = match &summary {
        Ok(cut) => {
            let mut record = summary_record(
                session,
                clock,
                Viewed { view: &view, plain: &plain },
                cut,
                previous,
                request,
                anchors.clone(),
                cancel.clone(),
                emit,
            )
            .await?;
            if cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            if folded {
                // The folded-in note was never written: this record follows the one before it,
                // and carries what its request cost too.
                record.previous_id = previous.and_then(|p| p.record.previous_id.clone());
                let folded_cost = previous.and_then(|p| p.record.extra.get("cost_usd"));
                if let (Some(own), Some(earlier)) = (
                    record.extra.get("cost_usd").and_then(serde_json::Value::as_f64),
                    folded_cost.and_then(serde_json::Value::as_f64),
                ) {
                    record.extra.insert("cost_usd".to_owned(), serde_json::json!(own + earlier));
                }
                if let Some(earlier) = previous.map(|p| record::usage(&p.record)) {
                    let own = record::usage(&record);
                    let usage = serde_json::json!({
                        "input_tokens": own.0 + earlier.0,
                        "output_tokens": own.1 + earlier.1,
                    });
                    record.extra.insert("usage".to_owned(), usage);
                }
            }
            let first = record.covers.as_ref().map(|c| c.first.clone());
            let parent = first
                .and_then(|f| session.journal().get(f.as_str()).and_then(|e| e.parent.clone()))
                .unwrap_or_else(|| session.journal().header_entry().id.clone());
            return match commit::commit(session, proposal(record, parent)).await {
                Ok(done) => Ok(written(done)),
                Err(Refusal::Failed(reason)) => Err(Stop::Failed(reason)),
                Err(Refusal::NoGain(reason)) => Err(no_gain(request, reason)),
                Err(Refusal::NoChange | Refusal::OverTarget) => {
                    Err(Stop::Refused("the view would not change".into()))
                }
            };
        }
        Err(why) => why.clone(),
    };

    // Nothing to summarize: prune what the prune found and bound the rest to fit.
    if cancel.is_cancelled() {
        return Err(Stop::Cancelled);
    }
    let record =
        record::prune_record(&plain, &plan.bound_pruned, previous, request.trigger.clone());
    match commit::commit(session, proposal(record, head)).await {
        Ok(done) => Ok(written(done)),
        Err(Refusal::NoChange) => Err(Stop::Refused(why_not_summary)),
        Err(Refusal::NoGain(reason)) => Err(no_gain(request, reason)),
        Err(Refusal::Failed(reason)) => Err(Stop::Failed(reason)),
        // Only an exact proposal is refused so.
        Err(Refusal::OverTarget) => Err(Stop::Failed("the view stays over the threshold".into())),
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
