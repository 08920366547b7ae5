//! What a pass will try, decided before any model call (docs/compaction.md, *Triggers*): a pure
//! function of the plain view, the trigger and the budget.
//!
//! A pass tries a prune-only record first when pruning alone gets below the prune target (auto
//! and reactive passes, never on a folded-in background note), then the summary of what a cut
//! covers, and when there is nothing to summarize a bound record that starts from what the
//! prune found. [`plan`] names all three; the async shell in `pass` runs them in that order and
//! stops at the first record that is written. Invariant: the plan reads nothing but its
//! arguments, so the same view and budget always give the same plan.
//!
//! **A pass buys room** (docs/compaction.md, *The cut*): an auto pass aims at
//! min(threshold − 3 median turns, 60 % of the threshold) ([`aim`]); its cut shrinks the kept
//! tail toward the protected part, then the retained user messages toward the last round's
//! texts, until the view it would leave gets there ([`aimed_cut`]) — or is the smallest it can
//! make. [`worth_sending`] then sends its summary request only when that view leaves at least
//! one median turn below the threshold.

use std::collections::HashSet;

use codewhale_journal::Trigger;

use super::cut::{self, CutError, CutPlan, CutPolicy};
use super::plain::PlainView;
use super::prune::{self, PrunePolicy, PRUNE_TARGET_FRACTION};

/// How much of the pipeline a pass may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassMode {
    /// Prune, summarize, bound.
    Full,
    /// Only bound what the last round holds (no model call): the last resort before a request.
    BoundOnly,
}

/// What the plan is made from: the view a pass starts on and the budget it must meet.
#[derive(Clone, Copy, Debug)]
pub struct PlanInputs<'a> {
    pub plain: &'a PlainView,
    pub trigger: &'a Trigger,
    pub mode: PassMode,
    /// A background note was folded in as the previous note: the view is already the one it
    /// summarizes, so no prune-only record is tried first.
    pub folded: bool,
    /// The request's size now, in provider tokens.
    pub pressure: u64,
    /// `T`, the threshold a pass gets below.
    pub threshold: u64,
    /// `U`, the usable input.
    pub usable_input: u64,
    /// `W`, the window (a small one cuts the kept exchanges' results shorter).
    pub window: u64,
    /// Calibration ratio `c`, in [1, 2].
    pub calibration: f64,
    /// The configured retained user text budget (`None`: the default of docs/compaction.md, *Limits
    /// and configuration*).
    pub retained_user_tokens: Option<u64>,
    /// What an auto pass aims at; `None` for the other triggers.
    pub room: Option<Room>,
}

/// What an auto pass aims to leave (docs/compaction.md, *The cut*: a pass buys room).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// The pressure to get to, in provider tokens ([`aim`]).
    pub aim: u64,
    /// What the view after the pass holds besides its kept tail and retained user messages —
    /// the system prompt with the tool schemas, the note's own part and the summary's budget —
    /// in estimated tokens.
    pub fixed: u64,
    /// What the conversation adds before the note is committed (a background note is written
    /// ahead of the threshold), in estimated tokens; 0 for a pass committed at once.
    pub to_come: u64,
}

/// Turns a median needs; before that the aim is 60 % of the threshold alone.
pub const MEDIAN_TURNS: usize = 3;
/// The aim's cap as a fraction of the threshold.
pub const AIM_FRACTION: f64 = 0.6;

/// The median of `turns` (what each user turn added to the view, in tokens): the middle value
/// of [`MEDIAN_TURNS`] or more, else the mean of those there are, or 0.
pub fn median_turn(turns: &[u64]) -> u64 {
    if turns.is_empty() {
        return 0;
    }
    if turns.len() < MEDIAN_TURNS {
        return turns.iter().sum::<u64>() / turns.len() as u64;
    }
    let mut sorted = turns.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2
    }
}

/// What an auto pass aims at, in provider tokens: min(threshold − 3 median turns, 60 % of the
/// threshold); with fewer than [`MEDIAN_TURNS`] turns, 60 % alone.
pub fn aim(threshold: u64, median_turn: u64, turns: usize) -> u64 {
    let cap = (threshold as f64 * AIM_FRACTION) as u64;
    if turns < MEDIAN_TURNS {
        return cap;
    }
    threshold.saturating_sub(median_turn.saturating_mul(3)).min(cap)
}

/// The cut of an auto pass: the usual one when the view it leaves is at or below the aim;
/// otherwise the kept tail shrinks toward the protected part and then the retained user
/// messages toward the last round's texts, down to the smallest view the pass can make.
pub fn aimed_cut(
    messages: &[super::message::Message],
    tokens: &[u64],
    base: &CutPolicy,
    room: &Room,
) -> Result<CutPlan, CutError> {
    let plan = cut::plan(messages, tokens, base)?;
    let c = base.calibration;
    let aim = crate::budget::from_provider(room.aim as f64, c).saturating_sub(room.to_come);
    let leaves = |p: &CutPlan| room.fixed + p.tail_tokens + p.retained_tokens;
    if leaves(&plan) <= aim {
        return Ok(plan);
    }
    let tail_room = aim.saturating_sub(room.fixed + plan.retained_tokens);
    let tail_fraction = (tail_room as f64 * c.clamp(1.0, 2.0)) / base.usable_input.max(1) as f64;
    let shorter = CutPolicy { tail_fraction: tail_fraction.min(base.tail_fraction), ..*base };
    let plan = cut::plan(messages, tokens, &shorter)?;
    if leaves(&plan) <= aim {
        return Ok(plan);
    }
    let retained_room = aim.saturating_sub(room.fixed + plan.tail_tokens);
    let retained = crate::budget::to_provider(retained_room, c);
    let fewer = CutPolicy {
        retained_tokens: Some(retained.min(base.retained_tokens.unwrap_or(u64::MAX))),
        ..shorter
    };
    cut::plan(messages, tokens, &fewer)
}

/// The steps of one pass, in the order they are tried.
#[derive(Clone, Debug, PartialEq)]
pub struct PassPlan {
    /// The tool results a prune-only record stubs, when that alone reaches the prune target.
    pub prune_first: Option<Vec<usize>>,
    /// What a summary covers, or why there is no summary (said when the bound path has
    /// nothing to change either).
    pub summary: Result<CutPlan, String>,
    /// The tool results the bound path stubs before it shortens the last round.
    pub bound_pruned: Vec<usize>,
}

/// The plan of a pass over `inputs`.
pub fn plan(inputs: &PlanInputs<'_>) -> PassPlan {
    let plain = inputs.plain;
    let mut prune_first = None;
    let mut bound_pruned = Vec::new();
    if *inputs.trigger != Trigger::Manual && inputs.mode == PassMode::Full && !inputs.folded {
        let target = (inputs.threshold as f64 * PRUNE_TARGET_FRACTION) as u64;
        let already: HashSet<usize> = plain.pruned.iter().copied().collect();
        let long_tail_target =
            CutPolicy::new(inputs.usable_input, inputs.calibration).long_tail_target();
        let policy = PrunePolicy {
            pressure: inputs.pressure,
            target,
            calibration: inputs.calibration,
            long_tail_target: Some(long_tail_target),
        };
        let pruned = prune::plan(&plain.messages, &plain.tokens, &already, &policy);
        if pruned.sufficient && !pruned.pruned.is_empty() {
            prune_first = Some(pruned.pruned.clone());
        }
        bound_pruned = pruned.pruned;
    }
    PassPlan { prune_first, summary: summary_cut(inputs), bound_pruned }
}

/// Where the summary path cuts, or why it does not run.
fn summary_cut(inputs: &PlanInputs<'_>) -> Result<CutPlan, String> {
    let messages = &inputs.plain.messages;
    if inputs.mode == PassMode::BoundOnly {
        return Err("nothing in the last round can be shortened further".to_owned());
    }
    if messages.len() < cut::MIN_MESSAGES {
        return Err(CutError::TooFew(messages.len()).to_string());
    }
    // A manual pass is asked for even when the window has room: it keeps only the protected
    // part, or a small conversation would have nothing to cover under a 25 % tail.
    let tail_fraction = if *inputs.trigger == Trigger::Manual { 0.0 } else { cut::TAIL_FRACTION };
    let mut policy = CutPolicy::new(inputs.usable_input, inputs.calibration);
    if inputs.window <= crate::budget::SMALL_WINDOW {
        policy.exchange_result_bytes = cut::SMALL_WINDOW_EXCHANGE_RESULT_BYTES;
    }
    let policy =
        CutPolicy { retained_tokens: inputs.retained_user_tokens, tail_fraction, ..policy };
    let planned = match (&inputs.room, inputs.trigger) {
        (Some(room), Trigger::Auto | Trigger::Idle) => {
            aimed_cut(messages, &inputs.plain.tokens, &policy, room)
        }
        _ => cut::plan(messages, &inputs.plain.tokens, &policy),
    };
    planned.map_err(|e| e.to_string())
}

/// The shortest usable summary, in tokens: the ten headings with a line under each.
pub const SHORTEST_SUMMARY_TOKENS: u64 = 60;

/// What a summary pass would leave, estimated before its first request (estimated tokens, the
/// same counts the commit uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCheck {
    /// The view now, without the system prompt.
    pub before: u64,
    /// The kept tail after its usual bounds, and the retained user messages.
    pub tail: u64,
    pub retained: u64,
    /// The note's own part (the engine composes it without a summary) and the summary's budget.
    pub note_fixed: u64,
    pub note_budget: u64,
    /// The system prompt with the tool schemas.
    pub prefix: u64,
    /// The threshold, in estimated tokens.
    pub threshold: u64,
    /// A manual pass runs below the threshold too: only the view must shrink.
    pub manual: bool,
    /// The room an auto pass must leave under the threshold (one median turn, estimated
    /// tokens); `None` for the other triggers, whose kept tail the commit may still bound.
    pub spare: Option<u64>,
}

/// Whether a summary request could end in a committed record (docs/compaction.md, *Triggers*: no
/// request is paid for nothing): the view must shrink even with the shortest usable note, and —
/// for an automatic pass — the note at its full budget, the prefix and the retained user
/// messages must leave room under the threshold for the kept tail (which the commit may bound);
/// an auto pass, whose tail is already the smallest it aims at, must leave a whole median turn
/// below the threshold with the note at its floor, or it would compact again a turn later. `Err` says why not, in
/// words for the user.
pub fn worth_sending(c: &SendCheck) -> Result<(), String> {
    let shortest = c.note_fixed + SHORTEST_SUMMARY_TOKENS + c.tail + c.retained;
    if shortest >= c.before {
        return Err(format!(
            "a note would not make the conversation smaller: it replaces about {} tokens, and \
             even a short note with what stays verbatim needs about {shortest} of the {} there \
             are now",
            c.before.saturating_sub(c.tail + c.retained),
            c.before
        ));
    }
    let fixed = c.prefix + c.note_fixed + c.note_budget + c.retained;
    if !c.manual && fixed >= c.threshold {
        return Err(format!(
            "a note could not get the conversation below the threshold: the note (up to {} \
             tokens), the system prompt with the tool schemas ({}) and the user's retained \
             messages ({}) already need about {fixed} of {}",
            c.note_fixed + c.note_budget,
            c.prefix,
            c.retained,
            c.threshold
        ));
    }
    if let Some(spare) = c.spare.filter(|_| !c.manual) {
        // The smallest view: the note at its floor, the prefix and what stays verbatim.
        let after = c.prefix + c.note_fixed + SHORTEST_SUMMARY_TOKENS + c.retained + c.tail;
        if after + spare > c.threshold {
            return Err(format!(
                "a note would leave no room for the next turn: the smallest view it can make \
                 (the note, the system prompt with the tool schemas and what stays verbatim) \
                 is about {after} tokens, and a turn adds about {spare} more before the \
                 threshold of {}",
                c.threshold
            ));
        }
    }
    Ok(())
}

/// What each user turn on `journal`'s HEAD spine added to the view (its text, replies and tool results
/// as the view holds them; a covered turn as its entries were counted), oldest first, without
/// the latest turn, which is still going on. Read from the journal's index: no entry is loaded.
pub fn turn_sizes(journal: &codewhale_journal::Journal, plain: &PlainView) -> Vec<u64> {
    use std::collections::HashMap;
    let in_view: HashMap<&str, u64> =
        plain.sources.iter().map(|s| s.as_str()).zip(plain.tokens.iter().copied()).collect();
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

#[cfg(test)]
mod tests;
