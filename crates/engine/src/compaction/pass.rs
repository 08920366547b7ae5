//! One compaction pass: the thin async shell around the pure core (docs/compaction.md).
//!
//! The three triggers share [`run`]. A pass tries, in order:
//! 1. **prune** (auto and reactive): stub old tool output; when that gets below the prune
//!    target, a prune-only record is written and no model is called;
//! 2. **summarize** (at least four messages and something before the protected part): plan the
//!    cut, ask the model for a summary (quality gate, one stricter retry, overflow handled by
//!    dropping the oldest whole exchanges), compose the note, build the record;
//! 3. **bound** (when there is nothing to summarize): a prune-only record that shortens what the
//!    contract allows, largest first, so the request fits — room is always found.
//!
//! Which steps apply is the pure [`pass_plan::plan`]; this shell runs them in that order.
//! Every record then goes through `commit`, which fits it under the
//! threshold, checks it and writes it. Invariants: a refused or failed pass writes no record
//! and changes nothing the model reads (it leaves a `system` notice); every outcome is emitted
//! as an event and logged with its figures. A [`PassMode::BoundOnly`] pass never calls the
//! model: it is the last resort before a request that would not fit.

use codewhale_journal::{CompactionPath, Entry, Level, SystemPayload, Trigger};
use codewhale_provider::CancellationToken;

use super::background::{self, Prepared, Tried};
use super::clock::SummaryClock;
use super::commit::{self, Proposal, Written};
use super::compactor::Compactor;
use super::conversation::{self, build_note};
use super::cut;
use super::judge::Refusal;
use super::pass_plan::{self, PassMode, PlanInputs, SendCheck};
use super::plain::PlainView;
use super::record::{self, SummaryRecord};
use super::summarize::{self, SummaryError, SummaryJob};
use crate::anchors::AnchorStore;
use crate::compaction::port::Conversation;
use codewhale_protocol::Event;

/// What a pass was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct PassRequest {
    pub trigger: Trigger,
    /// The manual `/compact` focus.
    pub focus: Option<String>,
    pub mode: PassMode,
    /// A finished background note (docs/compaction.md, *Background compaction*): committed as it is
    /// when it fits and passes the contract, else folded in as the previous note of this pass.
    pub background: Option<Box<Prepared>>,
}

impl PassRequest {
    /// A full pass.
    pub fn new(trigger: Trigger, focus: Option<String>) -> PassRequest {
        PassRequest { trigger, focus, mode: PassMode::Full, background: None }
    }
}

/// How a pass ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassOutcome {
    Compacted {
        id: String,
        path: CompactionPath,
        tokens_before: u64,
        tokens_after: u64,
        /// False when even the smallest bounds left the request over the threshold.
        fits: bool,
    },
    /// Nothing to do (too few messages, everything protected and within the window): not an
    /// error.
    Refused(String),
    /// The pass was attempted and abandoned; nothing was written.
    Failed(String),
    /// The user interrupted the pass; nothing was written.
    Cancelled,
}

impl PassOutcome {
    /// True when a record was written.
    pub fn compacted(&self) -> bool {
        matches!(self, PassOutcome::Compacted { .. })
    }
}

enum Stop {
    Refused(String),
    Failed(String),
    /// The summarizer could not produce a usable note (auto passes back off after this).
    SummaryFailed(String),
    /// The user interrupted the pass.
    Cancelled,
    /// A summary request was rejected as too long: the window it teaches is journaled and the
    /// pass plans again under it.
    WindowLearned {
        window: u64,
        source: crate::budget::WindowSource,
    },
}

/// How many times one pass plans again under a window a rejected summary request taught.
const WINDOW_RETRIES: u32 = 3;

/// Runs one pass on `session`, emitting the events of docs/compaction.md, *Background compaction*
/// through `emit`.
pub async fn run(
    session: &mut dyn Conversation,
    compactor: &mut Compactor,
    request: PassRequest,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> PassOutcome {
    let trigger = request.trigger.as_str().to_owned();
    let typed_trigger = crate::history_pages::trigger_of(&request.trigger);
    emit(Event::CompactionStarted { trigger: typed_trigger });
    let mut summary_failed = false;
    let mut relearned = 0;
    // The user's `PreCompact` hooks, before the pass sends anything: exit 2 skips it.
    let mut skipped = session.pre_compact(&request.trigger).await;
    let outcome = loop {
        if let Some(reason) = skipped.take() {
            compactor.summary_failed(session, &reason, emit);
            summary_failed = true;
            break PassOutcome::Failed(reason);
        }
        break match attempt(session, &compactor.clock, &request, cancel.clone(), emit).await {
            Ok(done) => {
                summary_succeeded(compactor, &done);
                done
            }
            Err(Stop::Refused(reason)) => PassOutcome::Refused(reason),
            Err(Stop::Failed(reason)) => PassOutcome::Failed(reason),
            Err(Stop::SummaryFailed(reason)) => {
                compactor.summary_failed(session, &reason, emit);
                summary_failed = true;
                PassOutcome::Failed(reason)
            }
            Err(Stop::Cancelled) => PassOutcome::Cancelled,
            Err(Stop::WindowLearned { window, source }) => {
                if let Err(err) = learned_from_summary(session, window, source, emit) {
                    PassOutcome::Failed(format!("cannot journal the window learned: {err}"))
                } else if relearned < WINDOW_RETRIES {
                    relearned += 1;
                    continue;
                } else {
                    PassOutcome::Failed(
                        "the provider rejected the summary request as too long, even shortened"
                            .into(),
                    )
                }
            }
        };
    };
    let pressure = session.budget().pressure().tokens;
    let (threshold, usable_input) =
        (session.budget().limits().threshold, session.budget().limits().usable_input);
    match &outcome {
        PassOutcome::Compacted { id, path, tokens_before, tokens_after, fits } => {
            tracing::info!(%trigger, %id, path = path.as_str(), tokens_before, tokens_after, fits, "compaction pass finished");
            emit(super::commit::finished_event(
                session,
                id,
                typed_trigger,
                (*tokens_before, *tokens_after),
            ));
        }
        PassOutcome::Refused(reason) => {
            tracing::info!(%trigger, %reason, pressure, threshold, usable_input, "nothing to compact");
            let text = format!("nothing to compact ({trigger}): {reason}");
            notice(session, SystemPayload::new(Level::Info, text));
            emit(Event::CompactionRefused { reason: reason.clone() });
        }
        PassOutcome::Failed(reason) => {
            tracing::warn!(%trigger, %reason, pressure, threshold, usable_input, "compaction failed");
            let text = format!("compaction ({trigger}) failed, nothing was changed: {reason}");
            let mut payload = SystemPayload::new(Level::Warning, text);
            // Journaled, so the backoff holds across processes (each `exec` is one).
            payload.summary_failed = summary_failed;
            notice(session, payload);
            emit(Event::CompactionFailed { reason: reason.clone() });
        }
        PassOutcome::Cancelled => {
            // Nothing is written: an interrupted pass leaves the file as it was.
            tracing::info!(%trigger, "compaction cancelled");
            emit(Event::CompactionCancelled);
        }
    }
    outcome
}

/// A summary request was rejected as too long: the window it teaches replaces the session's,
/// journaled, and the user is told once, in one sentence.
pub(super) fn learned_from_summary(
    session: &mut dyn Conversation,
    window: u64,
    source: crate::budget::WindowSource,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> Result<(), crate::error::EngineError> {
    let how = if source == crate::budget::WindowSource::Overflow {
        "its window".to_owned()
    } else {
        "90 % of that request, since the error named no window,".to_owned()
    };
    conversation::warn(
        emit,
        format!(
            "the provider rejected the summary request as too long; Codewhale takes {how} \
             {window} tokens from now on and writes the note under it"
        ),
    );
    session.learn_window(window, source)?;
    emit(session.usage_event(None, None));
    Ok(())
}

/// Called when a pass wrote a summary: auto passes run normally again.
fn summary_succeeded(compactor: &mut Compactor, outcome: &PassOutcome) {
    if matches!(
        outcome,
        PassOutcome::Compacted { path: codewhale_journal::CompactionPath::Summary, .. }
    ) {
        compactor.summary_backoff = None;
    }
}

fn notice(session: &mut dyn Conversation, payload: SystemPayload) {
    let parent = session.journal().head_id().clone();
    if let Err(err) = session.append_entry(Entry::new(Some(parent), payload)) {
        tracing::error!("cannot journal the compaction notice: {err}");
    }
}

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

async fn attempt(
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
                if let Some(earlier) = previous.map(|p| super::record::usage(&p.record)) {
                    let own = super::record::usage(&record);
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

/// The view a pass started from, as the journal renders it and as plain messages.
#[derive(Clone, Copy)]
struct Viewed<'a> {
    view: &'a codewhale_journal::View,
    plain: &'a PlainView,
}

/// The summary path: asks the model and builds the record of `plan`.
#[allow(clippy::too_many_arguments)]
async fn summary_record(
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
        super::extract::with_extract(session.journal(), view, plain, &text, &stats, job.note_chars);
    if stats.unread > 0 {
        // What the note read, and what only `recall` reaches, in one line.
        emit(Event::Notice {
            level: codewhale_protocol::NoticeLevel::Info,
            message: super::summary::unread_line(&stats),
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
    super::record::cost(&mut record, &stats);
    Ok(record)
}
