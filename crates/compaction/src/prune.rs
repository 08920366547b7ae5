//! Prune first (docs/compaction.md, *Prune first*): the cheap path that replaces old tool output
//! with a stub.
//!
//! Candidates lie outside the protected part and past the newest 40,000 tokens of tool output
//! (kept whole: the model is most likely still using them); a candidate is large (> 2 KiB) or
//! superseded (the same tool with the same arguments was called later). Pruning starts at the
//! newest candidate and moves back, so the oldest prefix — and the provider's prompt cache —
//! stays intact as long as possible, and stops as soon as calibrated pressure is below the
//! target. Files the user attached with `@` are candidates like tool output (superseded by a
//! later attachment of the same file). Pure: indices in, indices out.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::message::{Message, Part, Role};
use super::round;

/// Newest tool output kept whole, in estimated tokens.
pub const KEEP_RECENT_OUTPUT_TOKENS: u64 = 40_000;
/// A tool result larger than this is a prune candidate.
pub const LARGE_RESULT_BYTES: u64 = 2 * 1024;
/// The prune-only target as a fraction of the threshold.
pub const PRUNE_TARGET_FRACTION: f64 = 0.8;
/// What a pruned result still costs in the view (its one-line stub), in estimated tokens.
pub const STUB_TOKENS: u64 = 24;

/// What the prune is measured against, in provider tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrunePolicy {
    /// Current pressure (provider tokens).
    pub pressure: u64,
    /// The pressure to get below (80 % of the threshold, or a reactive limit).
    pub target: u64,
    /// Calibration ratio `c`, in [1, 2].
    pub calibration: f64,
    /// The kept-tail target that tells a long discussion (estimated tokens), as the cut reads
    /// it; `None`: the count of user turns alone.
    pub long_tail_target: Option<u64>,
}

/// The outcome of a prune.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunePlan {
    /// Indices of the tool result messages to prune, ascending.
    pub pruned: Vec<usize>,
    /// Estimated provider tokens saved.
    pub savings: u64,
    /// True when pressure after the prune is below the target: a prune-only pass suffices.
    pub sufficient: bool,
}

/// Chooses what to prune in `messages` (`tokens[i]` estimates `messages[i]`); `already` marks
/// results an earlier pass pruned (they are neither candidates nor counted as recent output).
pub fn plan(
    messages: &[Message],
    tokens: &[u64],
    already: &HashSet<usize>,
    policy: &PrunePolicy,
) -> PrunePlan {
    let tok = |i: usize| tokens.get(i).copied().unwrap_or(0);
    let measure = policy.long_tail_target.map(|target| round::TailMeasure { tokens, target });
    let round = round::last_round(messages, measure);
    let calls = call_signatures(messages);

    let mut seen_later: HashSet<(&str, String)> = HashSet::new();
    let mut recent_output: u64 = 0;
    let mut pruned = Vec::new();
    let mut savings: u64 = 0;
    let mut pressure = policy.pressure;
    for i in (0..messages.len()).rev() {
        let message = &messages[i];
        let ids: Vec<&str> = message.tool_result_ids().collect();
        if ids.is_empty() && !message.attachment {
            continue;
        }
        // An attached file is superseded by a later attachment of the same file.
        let signatures: Vec<(&str, String)> = if message.attachment {
            vec![("@attachment", attachment_path(message))]
        } else {
            ids.iter().filter_map(|id| calls.get(id).cloned()).collect()
        };
        let superseded = signatures.iter().any(|s| seen_later.contains(s));
        seen_later.extend(signatures);
        if already.contains(&i) {
            continue;
        }
        if recent_output < KEEP_RECENT_OUTPUT_TOKENS || round.as_ref().is_none_or(|r| r.protects(i))
        {
            recent_output += tok(i);
            continue;
        }
        if pressure < policy.target {
            break;
        }
        let large = content_bytes(message) > LARGE_RESULT_BYTES;
        let saved = tok(i).saturating_sub(STUB_TOKENS);
        if (large || superseded) && saved > 0 {
            let provider_saved = crate::budget::to_provider(saved, policy.calibration);
            pruned.push(i);
            savings += provider_saved;
            pressure = pressure.saturating_sub(provider_saved);
        }
    }
    pruned.sort_unstable();
    PrunePlan { pruned, savings, sufficient: pressure < policy.target }
}

/// The bytes a prune would replace: the tool output, or an attachment's text.
fn content_bytes(message: &Message) -> u64 {
    if message.attachment {
        return message.content.iter().filter_map(Part::as_text).map(|t| t.len() as u64).sum();
    }
    super::cut::result_bytes(message)
}

/// The first line of an attachment (it names the file), for the superseded test.
fn attachment_path(message: &Message) -> String {
    message
        .content
        .iter()
        .find_map(Part::as_text)
        .and_then(|t| t.lines().next())
        .unwrap_or_default()
        .to_owned()
}

/// Tool call id → (tool name, canonical arguments), for the superseded test.
fn call_signatures(messages: &[Message]) -> HashMap<&str, (&str, String)> {
    let mut out = HashMap::new();
    for message in messages.iter().filter(|m| m.role == Role::Assistant) {
        for part in &message.content {
            if let Part::ToolUse { id, name, input } = part {
                out.insert(id.as_str(), (name.as_str(), canonical(input)));
            }
        }
    }
    out
}

/// serde_json's map is ordered by key, so re-serializing gives one text per argument set.
fn canonical(input: &Value) -> String {
    serde_json::to_string(input).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str, path: &str) -> Message {
        Message::new(Role::Assistant, vec![Part::tool_use(id, "read_file", json!({"path": path}))])
    }
    fn result(id: &str, bytes: usize) -> Message {
        Message::new(Role::User, vec![Part::tool_result(id, "x".repeat(bytes))])
    }

    /// user, then `n` reads of distinct files, each result `bytes` long, then a final round.
    fn session(n: usize, bytes: usize) -> Vec<Message> {
        let mut m = vec![Message::user("look around")];
        for k in 0..n {
            m.push(call(&format!("r{k}"), &format!("f{k}.rs")));
            m.push(result(&format!("r{k}"), bytes));
        }
        m.push(Message::assistant("seen"));
        m.push(Message::user("now fix it"));
        m.push(call("z", "main.rs"));
        m.push(result("z", 10));
        m
    }

    fn tokens(m: &[Message]) -> Vec<u64> {
        m.iter().map(|m| if m.has_tool_result() { 20_000 } else { 10 }).collect()
    }

    #[test]
    fn newest_output_is_kept_and_pruning_moves_back_from_the_newest_candidate() {
        let m = session(5, 4096);
        let t = tokens(&m);
        // Results at 2,4,6,8,10 (20k each) and 14 (protected). The newest 40k: 14 and 10.
        let policy = PrunePolicy {
            pressure: 130_000,
            target: 100_000,
            calibration: 1.0,
            long_tail_target: None,
        };
        let plan = plan(&m, &t, &HashSet::new(), &policy);
        assert_eq!(plan.pruned, vec![6, 8], "newest candidates first, stop when below target");
        assert!(plan.sufficient);
        assert_eq!(plan.savings, 2 * (20_000 - STUB_TOKENS));
    }

    #[test]
    fn small_unique_results_are_not_candidates() {
        let m = session(5, 100);
        let t = tokens(&m);
        let policy = PrunePolicy {
            pressure: 130_000,
            target: 100_000,
            calibration: 1.0,
            long_tail_target: None,
        };
        let plan = plan(&m, &t, &HashSet::new(), &policy);
        assert_eq!(plan.pruned, Vec::<usize>::new());
        assert!(!plan.sufficient);
    }

    #[test]
    fn superseded_small_results_are_candidates() {
        let mut m = session(5, 100);
        m[3] = call("r1", "f4.rs"); // the same read as r4, earlier
        let t = tokens(&m);
        let policy = PrunePolicy {
            pressure: 125_000,
            target: 100_000,
            calibration: 1.5,
            long_tail_target: None,
        };
        let plan = plan(&m, &t, &HashSet::new(), &policy);
        assert_eq!(plan.pruned, vec![4]);
        assert_eq!(plan.savings, ((20_000 - STUB_TOKENS) as f64 * 1.5).ceil() as u64);
        assert!(plan.sufficient);
    }

    #[test]
    fn already_pruned_results_are_skipped() {
        let m = session(5, 4096);
        let t = tokens(&m);
        let policy = PrunePolicy {
            pressure: 130_000,
            target: 100_000,
            calibration: 1.0,
            long_tail_target: None,
        };
        let plan = plan(&m, &t, &HashSet::from([6]), &policy);
        assert_eq!(plan.pruned, vec![4, 8]);
    }

    #[test]
    fn attached_files_are_pruned_like_tool_output() {
        let attachment = |text: &str| {
            let mut m = Message::new(Role::User, vec![Part::text(text)]);
            m.synthetic = true;
            m.attachment = true;
            m
        };
        // An old large attachment, then enough recent output to pass the kept window.
        let mut m = vec![
            Message::user("read this"),
            attachment(&format!("The user attached the file a.rs:\n{}", "x".repeat(8_000))),
            Message::assistant("ok"),
        ];
        m.extend(session(3, 4096));
        let mut t = tokens(&m);
        t[1] = 30_000;
        let plan = plan(
            &m,
            &t,
            &HashSet::new(),
            &PrunePolicy {
                pressure: 100_000,
                target: 60_000,
                calibration: 1.0,
                long_tail_target: None,
            },
        );
        assert!(plan.pruned.contains(&1), "{plan:?}");
        assert!(plan.sufficient);
    }
}
