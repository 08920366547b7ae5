//! What a summary request carries (docs/compaction.md, *The summary request*): the live request
//! itself — the same system prompt, tools and view, in order — plus the instruction, and what to do
//! when that does not fit the summarizer's window.
//!
//! Pure planning over plain messages with one token estimate each; the async shell
//! (the engine's summarizer) builds the requests. In order:
//! 1. the whole view fits: one request, whose messages begin with exactly the last live
//!    request's, so providers answer most of it from their prompt cache;
//! 2. bound what the input carries — tool results to head + marker + tail, long texts to a
//!    prefix, largest first (the summary input is not the live view: this costs nothing the
//!    model reads later);
//! 3. the oldest whole exchanges leave the final request and are summarized first, in chunks:
//!    a chunk becomes an interim note, which the next request folds in;
//! 4. the cost is bounded: at most [`InputBudget::max_requests`] requests in all (default
//!    [`DEFAULT_MAX_REQUESTS`]), the final one and the chunks just before it, each full. What
//!    none of them reads ([`InputPlan::unread`], the oldest part) is covered by an extract built
//!    without a model ([`super::extract`]) and stays reachable with `recall`; a previous note
//!    there is folded into the first request as its interim note.
//!
//! Invariants of an [`InputPlan`]: chunks and the final part start at exchange starts
//! ([`round::exchange_starts`]), so a call never leaves without its results; every request of
//! the plan fits the budget by the estimates; anchors and checkpoints are never bounded. A plan
//! fails only when one exchange alone cannot fit even bounded.

use std::ops::Range;

use super::bound::{self, Candidate, MIN_BOUND_BYTES};
use super::checkpoint::is_checkpoint;
use super::message::Message;
use super::round;

/// What the summarizer accepts, in estimated (o200k) tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputBudget {
    /// The whole request: system prompt, tools, messages and instruction.
    pub tokens: u64,
    /// What every request carries besides the view's messages: the system prompt with the tool
    /// schemas, and the instruction.
    pub fixed: u64,
    /// Room a chunked request keeps for the interim note it folds in.
    pub note: u64,
    /// Summary requests the pass may send (at least 1).
    pub max_requests: u32,
}

/// docs/compaction.md, *Limits and configuration*: summary requests per pass.
pub const DEFAULT_MAX_REQUESTS: u32 = 2;

/// How the summary of one pass is asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputPlan {
    /// (index, max bytes): messages shortened in every request of the pass, ascending.
    pub bounds: Vec<(usize, u64)>,
    /// Ranges of messages summarized into interim notes first, oldest first.
    pub chunks: Vec<Range<usize>>,
    /// The final request carries `messages[final_from..]` (after the last interim note).
    pub final_from: usize,
    /// `messages[..unread]` are read by no request (the request limit): an extract covers them.
    pub unread: usize,
}

impl InputPlan {
    /// True when the request is the live request plus the instruction, unchanged.
    pub fn is_whole(&self) -> bool {
        self.bounds.is_empty() && self.chunks.is_empty() && self.final_from == 0
    }
}

/// Why no plan exists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error(
        "one exchange (message {index}) needs about {tokens} tokens even shortened, more than \
         the {budget} a summary request of this model can hold"
    )]
    ExchangeTooBig { index: usize, tokens: u64, budget: u64 },
}

/// Plans the summary input of `messages` (with `tokens[i]` the estimate of `messages[i]`).
pub fn plan(
    messages: &[Message],
    tokens: &[u64],
    budget: &InputBudget,
) -> Result<InputPlan, InputError> {
    let tok = |i: usize| tokens.get(i).copied().unwrap_or(0);
    let avail = budget.tokens.saturating_sub(budget.fixed);
    let total: u64 = (0..messages.len()).map(tok).sum();
    if total <= avail {
        return Ok(InputPlan::default());
    }
    let boundable = |i: usize| !is_checkpoint(&messages[i]) && !messages[i].anchor;
    let candidates: Vec<Candidate> = (0..messages.len())
        .filter(|&i| boundable(i))
        .map(|i| Candidate::message(i, bound::message_bytes(&messages[i]), tok(i)))
        .collect();
    let bounded = bound::plan(&candidates, total, avail);
    if bounded.fits {
        return Ok(InputPlan { bounds: bounded.bounds, ..InputPlan::default() });
    }

    // Chunks: every request holds an interim note and at most `room` of messages; no single
    // message may take more than a quarter of that, so each chunk holds several exchanges.
    let room = avail.saturating_sub(budget.note);
    let (mut bounds, sizes) = chunk_bounds(messages, tokens, room);
    let mut starts = round::exchange_starts(messages);
    starts.push(messages.len());
    let exchanges = Exchanges { starts: &starts, sizes: &sizes, room };
    let first = exchanges.final_first()?;
    let final_from = starts[first];
    let (chunks, k) = exchanges.chunks(first, budget.max_requests)?;
    let unread = starts[k];
    // A bound on a message no request reads changes nothing.
    bounds.retain(|&(i, _)| i >= unread);
    Ok(InputPlan { bounds, chunks, final_from, unread })
}

/// The bounds that keep each message within a quarter of `room` (anchors and checkpoints are
/// never bounded), and every message's estimate once bounded.
fn chunk_bounds(messages: &[Message], tokens: &[u64], room: u64) -> (Vec<(usize, u64)>, Vec<u64>) {
    let tok = |i: usize| tokens.get(i).copied().unwrap_or(0);
    let boundable = |i: usize| !is_checkpoint(&messages[i]) && !messages[i].anchor;
    let per_message = (room / 4).max(1);
    let mut bounds = Vec::new();
    let mut sizes = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let (t, bytes) = (tok(i), bound::message_bytes(message));
        if boundable(i) && t > per_message && bytes > MIN_BOUND_BYTES {
            let cap =
                ((bytes as u128 * per_message as u128 / t as u128) as u64).max(MIN_BOUND_BYTES);
            bounds.push((i, cap));
            sizes.push((t as u128 * cap as u128 / bytes as u128) as u64);
        } else {
            sizes.push(t);
        }
    }
    (bounds, sizes)
}

/// The whole exchanges of the messages, with their bounded sizes, and the room a request
/// has for them.
struct Exchanges<'a> {
    /// Where each exchange starts, then the number of messages.
    starts: &'a [usize],
    /// Each message's estimate once bounded.
    sizes: &'a [u64],
    room: u64,
}

impl Exchanges<'_> {
    fn exchange(&self, k: usize) -> Range<usize> {
        self.starts[k]..self.starts[k + 1]
    }

    fn size(&self, r: Range<usize>) -> u64 {
        self.sizes[r].iter().sum()
    }

    fn too_big(&self, k: usize) -> InputError {
        InputError::ExchangeTooBig {
            index: self.starts[k],
            tokens: self.size(self.exchange(k)),
            budget: self.room,
        }
    }

    /// The first exchange of the final request: the newest whole exchanges that fit.
    fn final_first(&self) -> Result<usize, InputError> {
        let starts = self.starts;
        let mut first = starts.len() - 1;
        let mut used = 0;
        while first > 0 {
            let add = self.size(self.exchange(first - 1));
            if used + add > self.room {
                break;
            }
            used += add;
            first -= 1;
        }
        if first > 0 && first == starts.len() - 1 {
            // Not even the newest exchange fits a request of its own.
            return Err(self.too_big(first - 1));
        }
        Ok(first)
    }

    /// The chunks before exchange `first`, oldest first, and the first exchange any of them
    /// reads: the newest first, as many whole exchanges as fit in each, until the request
    /// limit; what is older stays unread.
    fn chunks(
        &self,
        first: usize,
        max_requests: u32,
    ) -> Result<(Vec<Range<usize>>, usize), InputError> {
        let starts = self.starts;
        let mut chunks = Vec::new();
        let mut k = first;
        while k > 0 && chunks.len() + 1 < max_requests.max(1) as usize {
            let (end, mut filled) = (starts[k], 0);
            while k > 0 && filled + self.size(self.exchange(k - 1)) <= self.room {
                filled += self.size(self.exchange(k - 1));
                k -= 1;
            }
            if starts[k] == end {
                // The exchange before this chunk cannot fit a request even bounded.
                return Err(self.too_big(k - 1));
            }
            chunks.push(starts[k]..end);
        }
        chunks.reverse();
        Ok((chunks, k))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{Part, Role};
    use crate::note::checkpoint_message;

    fn call(id: &str) -> Message {
        Message::new(Role::Assistant, vec![Part::tool_use(id, "shell", json!({"command": id}))])
    }
    fn result(id: &str, bytes: usize) -> Message {
        Message::new(Role::User, vec![Part::tool_result(id, "x".repeat(bytes))])
    }
    /// One long turn: a question, then `n` exchanges with `bytes` of output each.
    fn long_turn(n: usize, bytes: usize) -> Vec<Message> {
        let mut m = vec![Message::user("do the whole job")];
        for k in 0..n {
            m.push(call(&format!("c{k}")));
            m.push(result(&format!("c{k}"), bytes));
        }
        m
    }
    /// Tokens at four bytes each.
    fn tokens(m: &[Message]) -> Vec<u64> {
        m.iter().map(|m| (bound::message_bytes(m) / 4).max(5)).collect()
    }
    fn budget(tokens: u64) -> InputBudget {
        InputBudget { tokens, fixed: 1_000, note: 3_000, max_requests: u32::MAX }
    }

    #[test]
    fn a_view_that_fits_is_sent_whole() {
        let m = long_turn(10, 400);
        let plan = plan(&m, &tokens(&m), &budget(100_000)).unwrap();
        assert!(plan.is_whole());
    }

    #[test]
    fn bounding_comes_before_chunking() {
        // Ten outputs of 40 KB (10k tokens each) in a 40k budget: bounded, not chunked.
        let m = long_turn(10, 40_000);
        let t = tokens(&m);
        let plan = plan(&m, &t, &budget(40_000)).unwrap();
        assert!(plan.chunks.is_empty() && plan.final_from == 0);
        assert_eq!(plan.bounds.len(), 10, "every output is cut to the same level");
        let after: u64 = (0..m.len())
            .map(|i| match plan.bounds.iter().find(|(j, _)| *j == i) {
                Some(&(_, cap)) => t[i] * cap / bound::message_bytes(&m[i]),
                None => t[i],
            })
            .sum();
        assert!(after <= 39_000, "{after}");
    }

    #[test]
    fn a_turn_of_two_hundred_calls_is_chunked_by_exchange() {
        let m = long_turn(200, 1_500);
        let t = tokens(&m);
        let b = budget(8_000);
        let plan = plan(&m, &t, &b).unwrap();
        assert!(plan.chunks.len() > 3, "{:?}", plan.chunks);
        let starts = round::exchange_starts(&m);
        let room = b.tokens - b.fixed - b.note;
        let mut expected_start = 0;
        assert_eq!(plan.unread, 0, "no request limit: everything is read");
        for chunk in &plan.chunks {
            assert_eq!(chunk.start, expected_start, "chunks are contiguous");
            assert!(starts.contains(&chunk.start) && starts.contains(&chunk.end));
            assert!(t[chunk.clone()].iter().sum::<u64>() <= room);
            expected_start = chunk.end;
        }
        assert_eq!(plan.final_from, expected_start);
        assert!(starts.contains(&plan.final_from));
        assert!(t[plan.final_from..].iter().sum::<u64>() <= room);
        assert!(plan.final_from < m.len(), "the final request keeps the newest exchanges");
    }

    #[test]
    fn a_pass_sends_at_most_its_request_limit_and_reads_the_newest_part() {
        let m = long_turn(2_000, 1_500);
        let t = tokens(&m);
        let b = InputBudget { max_requests: 2, ..budget(8_000) };
        let plan = plan(&m, &t, &b).unwrap();
        assert_eq!(plan.chunks.len(), 1, "one chunk and the final request");
        let chunk = &plan.chunks[0];
        assert_eq!(chunk.start, plan.unread);
        assert_eq!(chunk.end, plan.final_from);
        let room = b.tokens - b.fixed - b.note;
        let read: u64 = t[plan.unread..].iter().sum();
        assert!(read <= 2 * room, "at most two requests' worth is read: {read}");
        assert!(plan.unread > m.len() / 2, "the oldest part is left to the extract");
        assert!(plan.bounds.iter().all(|&(i, _)| i >= plan.unread));
        // One request: the final one alone.
        let one = super::plan(&m, &t, &InputBudget { max_requests: 1, ..b }).unwrap();
        assert!(one.chunks.is_empty() && one.unread == one.final_from);
    }

    #[test]
    fn a_previous_note_goes_into_the_first_chunk_whole() {
        let mut m =
            vec![checkpoint_message(format!("Codewhale handoff note. {}", "n".repeat(4_000)))];
        m.extend(long_turn(100, 2_000));
        let t = tokens(&m);
        let plan = plan(&m, &t, &budget(9_000)).unwrap();
        assert_eq!(plan.chunks[0].start, 0);
        assert!(plan.bounds.iter().all(|(i, _)| *i != 0), "the note is never bounded");
    }

    #[test]
    fn one_exchange_that_cannot_fit_even_bounded_fails() {
        // A parallel batch of 60 calls: 121 messages in one exchange, each at least 1 KiB.
        let calls: Vec<Part> =
            (0..60).map(|k| Part::tool_use(format!("p{k}"), "shell", json!({"k": k}))).collect();
        let mut m = vec![Message::user("go"), Message::new(Role::Assistant, calls)];
        for k in 0..60 {
            m.push(result(&format!("p{k}"), 8_000));
        }
        let t = tokens(&m);
        let err = plan(&m, &t, &budget(8_000)).unwrap_err();
        assert!(matches!(err, InputError::ExchangeTooBig { index: 1, .. }), "{err}");
    }
}
