//! One compaction pass: the thin async shell around the pure core (DESIGN §5).
//!
//! The three triggers share [`run`]: render the view, try the prune, else plan the cut, ask the
//! model for a summary (quality gate, one stricter retry, overflow handled by dropping the
//! oldest whole exchanges), compose the note, build the record, render the would-be view from a
//! copy of the journal and check the survival contract on old vs new. Only then is the record
//! appended and synced. Invariants: a refused or failed pass writes no record and changes
//! nothing the model reads (it leaves a `system` notice); every outcome is emitted as an event
//! and logged with its figures.

use std::collections::HashSet;

use codewhale_journal::{
    check_view, render, CompactionPath, CompactionPayload, Entry, Level, SystemPayload, Trigger,
};
use codewhale_provider::{Block, CancellationToken, Message as PMessage, Request, Role as PRole};

use super::checkpoint::is_checkpoint;
use super::cut::{self, CutPolicy};
use super::note::{self, LiveState, NoteInput, Running};
use super::plain::PlainView;
use super::prune::{self, PrunePolicy, PRUNE_TARGET_FRACTION};
use super::record::{self, SummaryRecord};
use super::summary;
use super::survival::{self, SurvivalInput};
use crate::anchors::AnchorStore;
use crate::protocol::Event;
use crate::session::{counts, Session};

/// Output budget of a summary request: room for a 12,000-character note with headroom.
const SUMMARY_MAX_OUTPUT: u64 = 8_192;

/// What a pass was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct PassRequest {
    pub trigger: Trigger,
    /// The manual `/compact` focus.
    pub focus: Option<String>,
}

/// How a pass ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassOutcome {
    Compacted {
        id: String,
        path: CompactionPath,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Nothing to do (too few messages, everything protected): not an error.
    Refused(String),
    /// The pass was attempted and abandoned; nothing was written.
    Failed(String),
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
}

/// Runs one pass on `session`, emitting the events of DESIGN §5.8 through `emit`.
pub async fn run(
    session: &mut Session,
    request: PassRequest,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> PassOutcome {
    let trigger = request.trigger.as_str().to_owned();
    emit(Event::CompactionStarted { trigger: trigger.clone() });
    let outcome = match attempt(session, &request, cancel).await {
        Ok(done) => done,
        Err(Stop::Refused(reason)) => PassOutcome::Refused(reason),
        Err(Stop::Failed(reason)) => PassOutcome::Failed(reason),
    };
    let pressure = session.budget().pressure().tokens;
    let (threshold, usable_input) =
        (session.budget().limits().threshold, session.budget().limits().usable_input);
    match &outcome {
        PassOutcome::Compacted { id, path, tokens_before, tokens_after } => {
            tracing::info!(%trigger, %id, path = path.as_str(), tokens_before, tokens_after, "compaction pass finished");
            let (covered, retained) = session
                .journal()
                .get(id)
                .and_then(|e| match &e.payload {
                    codewhale_journal::Payload::Compaction(r) => Some((
                        r.covers.as_ref().map_or(0, |c| c.count),
                        r.retained_ids.len() as u64,
                    )),
                    _ => None,
                })
                .unwrap_or((0, 0));
            emit(Event::CompactionFinished {
                id: id.clone(),
                path: path.as_str().to_owned(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                covered,
                retained,
            });
        }
        PassOutcome::Refused(reason) => {
            tracing::info!(%trigger, %reason, pressure, threshold, usable_input, "compaction refused");
            notice(session, Level::Info, &format!("compaction ({trigger}) refused: {reason}"));
            emit(Event::CompactionRefused { reason: reason.clone() });
        }
        PassOutcome::Failed(reason) => {
            tracing::warn!(%trigger, %reason, pressure, threshold, usable_input, "compaction failed");
            notice(
                session,
                Level::Warning,
                &format!("compaction ({trigger}) failed, nothing was changed: {reason}"),
            );
            emit(Event::CompactionFailed { reason: reason.clone() });
        }
    }
    outcome
}

/// Growth (as a fraction of usable input) after which an auto pass is tried again when the last
/// pass could not get below the threshold.
const REGROWTH_FRACTION: f64 = 0.1;

/// Whether an auto pass can help now. Not when the active record already could not get below
/// the threshold (the user's own protected messages fill the window) and the conversation has
/// not grown by a tenth of usable input since: that pass would summarize next to nothing, on
/// every turn. Reactive and manual passes are never held back.
pub fn auto_worthwhile(session: &Session) -> bool {
    let limits = *session.budget().limits();
    let pressure = session.budget().pressure().tokens;
    let view = session.render();
    let Some(after) = view.compaction.as_ref().and_then(|c| c.record.tokens_after) else {
        return true;
    };
    let regrowth = (limits.usable_input as f64 * REGROWTH_FRACTION) as u64;
    after < limits.threshold || pressure >= after + regrowth
}

fn notice(session: &mut Session, level: Level, text: &str) {
    let parent = session.journal().head_id().clone();
    if let Err(err) =
        session.append_entry(Entry::new(Some(parent), SystemPayload::new(level, text)))
    {
        tracing::error!("cannot journal the compaction notice: {err}");
    }
}

fn plain_of(session: &Session, view: &codewhale_journal::View) -> PlainView {
    PlainView::new(view, |item| item.tokens.or_else(|| session.counts.get(&item.source)))
}

async fn attempt(
    session: &mut Session,
    request: &PassRequest,
    cancel: CancellationToken,
) -> Result<PassOutcome, Stop> {
    let view = session.render();
    let plain = plain_of(session, &view);
    if plain.messages.len() < cut::MIN_MESSAGES {
        return Err(Stop::Refused(format!(
            "the conversation has {} model-visible messages; compaction needs at least {}",
            plain.messages.len(),
            cut::MIN_MESSAGES
        )));
    }
    let anchors = AnchorStore::new(session.workspace())
        .text()
        .map_err(|e| Stop::Failed(format!("cannot read the anchors: {e}")))?;
    let budget = session.budget();
    let limits = *budget.limits();
    let calibration = budget.calibration();
    let before = budget.pressure().tokens;

    if request.trigger != Trigger::Manual {
        let target = (limits.threshold as f64 * PRUNE_TARGET_FRACTION) as u64;
        let already: HashSet<usize> = plain.pruned.iter().copied().collect();
        let policy = PrunePolicy { pressure: before, target, calibration };
        let plan = prune::plan(&plain.messages, &plain.tokens, &already, &policy);
        if plan.sufficient && !plan.pruned.is_empty() {
            let record = record::prune_record(
                &plain,
                &plan.pruned,
                view.compaction.as_ref(),
                request.trigger.clone(),
            );
            let parent = session.journal().head_id().clone();
            match commit(session, &plain, record, parent, anchors.as_deref(), before).await {
                Ok(done) => return Ok(done),
                // The carried-forward note may predate the current anchors: summarize instead.
                Err(Stop::Failed(reason)) => {
                    tracing::info!(%reason, "prune-only result refused, trying the summary path")
                }
                Err(stop) => return Err(stop),
            }
        }
    }

    // A manual pass is asked for even when the window has room: it keeps only the protected
    // part, or a small conversation would have nothing to cover under a 25 % tail.
    let tail_fraction =
        if request.trigger == Trigger::Manual { 0.0 } else { super::cut::TAIL_FRACTION };
    let policy = CutPolicy {
        retained_tokens: session.config().compaction.retained_user_tokens,
        tail_fraction,
        ..CutPolicy::new(limits.usable_input, calibration)
    };
    let plan = cut::plan(&plain.messages, &plain.tokens, &policy)
        .map_err(|e| Stop::Refused(e.to_string()))?;
    let model = session
        .config()
        .compaction
        .compaction_model
        .clone()
        .unwrap_or_else(|| session.model().to_owned());
    let covered = plain.messages[..plan.cut].to_vec();
    let max_output = SUMMARY_MAX_OUTPUT.min(limits.reserved_output).max(1) as u32;
    let text =
        summarize(session, covered, request.focus.as_deref(), &model, max_output, cancel).await?;
    let summary = summary::cap(&text);

    let (note_text, files) = build_note(
        session,
        &plain.messages[..plan.cut],
        view.compaction.as_ref(),
        &summary,
        anchors.as_deref(),
    )
    .await;
    let record = record::summary_record(SummaryRecord {
        plain: &plain,
        plan: &plan,
        previous: view.compaction.as_ref(),
        trigger: request.trigger.clone(),
        focus: request.focus.clone().filter(|f| !f.trim().is_empty()),
        summary,
        note: note_text,
        files_touched: files.paths(),
        anchors: anchors.clone(),
        model,
    })
    .ok_or_else(|| Stop::Refused("nothing before the protected part can be covered".into()))?;
    let first = record.covers.as_ref().map(|c| c.first.clone());
    let parent = first
        .and_then(|f| session.journal().get(f.as_str()).and_then(|e| e.parent.clone()))
        .unwrap_or_else(|| session.journal().header_entry().id.clone());
    commit(session, &plain, record, parent, anchors.as_deref(), before).await
}

/// The note of a summary pass: the summary plus what Codewhale knows itself (files touched by
/// the covered calls, background commands, the live state, the anchors).
async fn build_note(
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
    let running: Vec<Running> = session
        .background()
        .running()
        .into_iter()
        .map(|r| Running { command: r.command, pid: r.pid, ports: r.ports })
        .collect();
    // `git` is a child process: keep it off the async workers.
    let workspace = session.workspace().to_path_buf();
    let live = tokio::task::spawn_blocking(move || LiveState::capture(&workspace))
        .await
        .unwrap_or_else(|_| LiveState {
            workspace: session.workspace().display().to_string(),
            branch: None,
            commit: None,
        });
    let text = note::compose(&NoteInput {
        summary,
        files: &files,
        running: &running,
        live: &live,
        anchors,
    });
    (text, files)
}

/// Asks the model for a summary of `covered`: overflow drops the oldest whole exchanges, an
/// unusable answer gets one stricter retry. Transient errors were already retried by the client.
async fn summarize(
    session: &Session,
    mut covered: Vec<super::message::Message>,
    focus: Option<&str>,
    model: &str,
    max_output: u32,
    cancel: CancellationToken,
) -> Result<String, Stop> {
    if summary::fit_input(&mut covered, focus, summary::INPUT_MAX_BYTES).is_none() {
        return Err(Stop::Failed(
            "the summary input exceeds 2 MiB even with only the previous note".into(),
        ));
    }
    let mut strict = false;
    loop {
        let mut request = Request::new(model, max_output);
        request.messages.push(PMessage::new(
            PRole::User,
            vec![
                Block::text(summary::transcript(&covered)),
                Block::text(summary::instruction(focus, strict)),
            ],
        ));
        match session.client().complete(&request, cancel.clone()).await {
            Ok(response) => {
                let text = response.text();
                match summary::judge(&text) {
                    Ok(()) => return Ok(text),
                    Err(issue) if !strict => {
                        tracing::info!(%issue, "unusable summary, retrying with a stricter instruction");
                        strict = true;
                    }
                    Err(issue) => {
                        return Err(Stop::Failed(format!(
                            "the summary was unusable twice ({issue})"
                        )))
                    }
                }
            }
            Err(failure) if failure.error.is_context_overflow() => {
                let excess = match failure.error.kind {
                    codewhale_provider::ErrorKind::ContextOverflow {
                        limit: Some(limit),
                        requested: Some(requested),
                    } => requested.checked_sub(limit),
                    _ => None,
                };
                if !summary::shrink_for_overflow(&mut covered, excess) {
                    return Err(Stop::Failed(format!(
                        "the summary request is too long even with only the previous note: {}",
                        failure.error
                    )));
                }
                tracing::info!(?excess, "summary request overflowed; dropped the oldest exchanges");
            }
            Err(failure) => {
                return Err(Stop::Failed(format!("the summary request failed: {}", failure.error)))
            }
        }
    }
}

/// Checks the record against the survival contract on a copy of the journal, then appends it.
async fn commit(
    session: &mut Session,
    plain: &PlainView,
    record: CompactionPayload,
    parent: codewhale_journal::EntryId,
    anchors: Option<&str>,
    tokens_before: u64,
) -> Result<PassOutcome, Stop> {
    let path = record.path.clone();
    let note_tokens = counts::exact(&record.note);
    let mut entry = Entry::new(Some(parent), record).with_tokens(note_tokens);
    let mut journal = session.journal().clone();
    journal.push(entry.clone());
    let head = journal.head_id().clone();
    let new_view = render(&journal, head.as_str());
    if new_view.compaction.as_ref().map(|c| &c.id) != Some(&entry.id) {
        return Err(Stop::Failed("the new record would not describe the current branch".into()));
    }
    check_view(&new_view)
        .map_err(|e| Stop::Failed(format!("the compacted view is not sendable: {e}")))?;
    let new_plain = PlainView::new(&new_view, |item| {
        if item.source == entry.id {
            Some(note_tokens)
        } else {
            item.tokens.or_else(|| session.counts.get(&item.source))
        }
    });
    // A summary pass restates the anchors, so they must be there. A prune-only pass restates
    // nothing: it must only not lose anchors the view already carried.
    let anchors: Vec<String> = anchors
        .filter(|a| path == CompactionPath::Summary || survival::carries(&plain.messages, a))
        .map(str::to_owned)
        .into_iter()
        .collect();
    let violations = survival::check(&SurvivalInput {
        original: &plain.messages,
        replacement: &new_plain.messages,
        last_round_start: None,
        anchors: &anchors,
        require_checkpoint: path == CompactionPath::Summary,
    });
    if !violations.is_empty() {
        let reasons: Vec<String> = violations.iter().map(ToString::to_string).collect();
        return Err(Stop::Failed(format!(
            "the survival contract refused it: {}",
            reasons.join("; ")
        )));
    }
    debug_assert!(new_plain.messages.iter().filter(|m| is_checkpoint(m)).count() <= 1);
    let (old_total, new_total) = (plain.total(), new_plain.total());
    if new_total >= old_total {
        return Err(Stop::Failed(format!(
            "the pass did not shrink the view ({old_total} → {new_total} estimated tokens)"
        )));
    }
    let budget = session.budget();
    let tokens_after = budget.calibrated(budget.system_tokens() + new_total);
    if let codewhale_journal::Payload::Compaction(r) = &mut entry.payload {
        r.tokens_before = Some(tokens_before);
        r.tokens_after = Some(tokens_after);
    }
    let id = entry.id.to_string();
    session
        .append_entry(entry)
        .map_err(|e| Stop::Failed(format!("cannot write the record: {e}")))?;
    session.sync().await.map_err(|e| Stop::Failed(format!("cannot sync the record: {e}")))?;
    session.budget_mut().record_compaction(new_total, old_total - new_total);
    session.refresh_system_prompt();
    Ok(PassOutcome::Compacted { id, path, tokens_before, tokens_after })
}
