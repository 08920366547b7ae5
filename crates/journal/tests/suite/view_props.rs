//! Property tests for the view function: any journal of random appends, forks and (legal)
//! compaction records renders without orphaned tool results, with at most one checkpoint, the
//! same way twice and after a reload.

use codewhale_journal::{
    check_view, render, AssistantPayload, Block, Bounded, CompactionPath, CompactionPayload,
    Covers, Entry, EntryId, ItemKind, Journal, Payload, Role, ToolResultPayload, Trigger,
    UserPayload, ViewError,
};
use proptest::prelude::*;
use serde_json::json;

use super::support::{journal, Sink};

#[derive(Clone, Debug)]
pub(super) enum Op {
    User,
    Assistant,
    /// An assistant entry with `calls` tool calls, then the first `results` of their results.
    Tools {
        calls: u8,
        results: u8,
    },
    /// Fork from the n-th conversation entry (modulo).
    Fork(u16),
    /// A summary record covering the current spine up to a legal cut point (chosen by n).
    Compact(u16),
    /// A prune-only record over some of the tool results on the spine.
    Prune(u16),
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::User),
        3 => Just(Op::Assistant),
        3 => (1u8..4, 0u8..4).prop_map(|(calls, r)| Op::Tools { calls, results: r.min(calls) }),
        1 => any::<u16>().prop_map(Op::Fork),
        1 => any::<u16>().prop_map(Op::Compact),
        1 => any::<u16>().prop_map(Op::Prune),
    ]
}

/// The model-visible entries of HEAD's spine.
fn spine(j: &Journal) -> Vec<Entry> {
    j.spine(j.head_id().as_str())
        .into_iter()
        .filter(|e| e.payload.is_model_visible())
        .cloned()
        .collect()
}

fn last_role(j: &Journal) -> Option<Role> {
    spine(j).last().map(|e| match e.payload {
        Payload::Assistant(_) => Role::Assistant,
        _ => Role::User,
    })
}

/// Positions in `spine` after which no call is pending: a legal place to end a covered segment.
fn legal_cuts(spine: &[Entry]) -> Vec<usize> {
    let mut pending: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (i, e) in spine.iter().enumerate() {
        match &e.payload {
            Payload::Assistant(a) => pending = a.tool_uses().map(|t| t.id.clone()).collect(),
            Payload::ToolResult(r) => pending.retain(|id| *id != r.tool_use_id),
            _ => pending.clear(),
        }
        let next_is_result =
            matches!(spine.get(i + 1).map(|e| &e.payload), Some(Payload::ToolResult(_)));
        if pending.is_empty() && !next_is_result {
            out.push(i);
        }
    }
    out
}

pub(super) fn apply(j: &mut Journal, op: &Op, calls: &mut u32) {
    match op {
        Op::User => {
            j.user("u");
        }
        Op::Assistant => {
            if last_role(j) == Some(Role::User) {
                j.assistant("a");
            }
        }
        Op::Tools { calls: n, results } => {
            if last_role(j) != Some(Role::User) {
                return;
            }
            let ids: Vec<String> = (0..*n)
                .map(|_| {
                    *calls += 1;
                    format!("call-{calls}")
                })
                .collect();
            let blocks =
                ids.iter().map(|id| Block::tool_use(id.clone(), "shell", json!({}))).collect();
            j.on_head(AssistantPayload::new(blocks));
            for id in ids.iter().take(*results as usize) {
                j.on_head(ToolResultPayload::new(id.clone(), "x".repeat(300), false));
            }
        }
        Op::Fork(n) => {
            let convo: Vec<EntryId> = j
                .entries()
                .iter()
                .filter(|e| e.payload.is_model_visible() || matches!(e.payload, Payload::Header(_)))
                .map(|e| e.id.clone())
                .collect();
            let target = &convo[*n as usize % convo.len()];
            let fork = j.fork(target.as_str()).unwrap();
            j.move_head(fork);
        }
        Op::Compact(n) => {
            let spine = spine(j);
            let cuts = legal_cuts(&spine);
            if spine.is_empty() || cuts.is_empty() {
                return;
            }
            let last = cuts[*n as usize % cuts.len()];
            let mut c = CompactionPayload::new(CompactionPath::Summary, Trigger::Auto);
            c.note = "Codewhale handoff note.".into();
            c.covers =
                Some(Covers::new(spine[0].id.clone(), spine[last].id.clone(), last as u64 + 1));
            c.retained_ids = spine[..=last]
                .iter()
                .filter(|e| matches!(&e.payload, Payload::User(u) if u.is_plain()))
                .step_by(2)
                .map(|e| e.id.clone())
                .collect();
            let root = j.header_entry().id.clone();
            j.record(&root, c);
        }
        Op::Prune(n) => {
            let results: Vec<EntryId> = spine(j)
                .iter()
                .filter(|e| matches!(e.payload, Payload::ToolResult(_)))
                .map(|e| e.id.clone())
                .collect();
            if results.is_empty() {
                return;
            }
            let mut c = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
            c.pruned_ids = results.iter().step_by(2).cloned().collect();
            c.bounded = results
                .iter()
                .skip(1)
                .step_by(2)
                .map(|id| Bounded::new(id.clone(), u64::from(*n % 400)))
                .collect();
            let head = j.head_id().clone();
            j.record(&head, c);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn views_never_orphan_results_nor_stack_checkpoints(ops in proptest::collection::vec(op(), 1..60)) {
        let mut j = journal();
        j.user("start");
        let mut calls = 0;
        for op in &ops {
            apply(&mut j, op, &mut calls);
        }
        // Reload: the same lines parsed again.
        let reloaded = Journal::from_entries(
            j.entries().iter().map(|e| Entry::parse_line(&e.to_line().unwrap()).unwrap()).collect(),
        ).unwrap();
        prop_assert_eq!(reloaded.head_id(), j.head_id());

        // Every head, not only the current one.
        for head in j.entries().iter().filter(|e| e.payload.is_model_visible()) {
            let v = render(&j, head.id.as_str());
            prop_assert!(v.items.iter().filter(|i| i.kind == ItemKind::Checkpoint).count() <= 1);
            match check_view(&v) {
                Ok(()) | Err(ViewError::MissingResult { .. }) => {}
                Err(e) => prop_assert!(false, "{e}"),
            }
            // No result without its call earlier in the view.
            for (i, item) in v.items.iter().enumerate() {
                if let Some(r) = item.tool_result() {
                    let called = v.items[..i].iter().any(|p| {
                        p.blocks().iter().any(|b| b.as_tool_use().is_some_and(|t| t.id == r.tool_use_id))
                    });
                    prop_assert!(called, "orphan result {}", item.source);
                }
            }
            prop_assert_eq!(&render(&j, head.id.as_str()), &v);
            prop_assert_eq!(&render(&reloaded, head.id.as_str()), &v);
        }
    }
}

#[test]
fn user_text_is_never_lost_by_a_plain_journal() {
    let mut j = journal();
    j.on_head(UserPayload::text("hello"));
    let v = render(&j, j.head_id().as_str());
    assert_eq!(v.items.len(), 1);
}
