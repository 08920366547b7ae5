//! The view function over random journals: branches, HEAD moves, compaction records naming
//! any entries (covers, retained, pruned, bounded), repairs. Rendering never panics, is a pure
//! function of the entries, and never shows more than one checkpoint.
#![no_main]

use codewhale_journal::{
    render, AssistantPayload, Block, Bounded, CompactionPath, CompactionPayload, Covers, Entry,
    EntryId, HeadPayload, HeadReason, HeaderPayload, ItemKind, Journal, ToolResultPayload, Trigger,
    UserPayload,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let header = Entry::new(None, HeaderPayload::new("s", "/w"));
    let mut j = Journal::new(header).expect("a header makes a journal");
    let mut ids: Vec<EntryId> = vec![j.head_id().clone()];
    let pick = |ids: &[EntryId], b: u8| ids[usize::from(b) % ids.len()].clone();
    for op in data.chunks(4) {
        let [kind, a, b, c] =
            [op[0], *op.get(1).unwrap_or(&0), *op.get(2).unwrap_or(&0), *op.get(3).unwrap_or(&0)];
        let head = j.head_id().clone();
        let call = format!("c{}", a % 8);
        let entry = match kind % 8 {
            0 => Entry::new(Some(head), UserPayload::text("x".repeat(usize::from(b) * 40))),
            1 => {
                let calls = (0..c % 3).map(|k| {
                    Block::tool_use(
                        format!("c{}", a.wrapping_add(k) % 8),
                        "shell",
                        serde_json::json!({}),
                    )
                });
                let mut blocks: Vec<Block> = vec![Block::text("y".repeat(usize::from(b) * 30))];
                blocks.extend(calls);
                Entry::new(Some(head), AssistantPayload::new(blocks))
            }
            2 => {
                let mut r = ToolResultPayload::new(call, "z".repeat(usize::from(b) * 50), false);
                r.repairs = c % 2 == 0;
                Entry::new(Some(head), r)
            }
            3 => {
                let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Auto);
                if a % 2 == 0 {
                    record.covers = Some(Covers::new(pick(&ids, b), pick(&ids, c), 1));
                    record.note = "Codewhale handoff note. x".into();
                } else {
                    record.path = CompactionPath::PruneOnly;
                }
                record.retained_ids = vec![pick(&ids, c)];
                record.pruned_ids = if a % 3 == 0 { vec![pick(&ids, b ^ c)] } else { vec![] };
                record.bounded =
                    vec![Bounded::new(pick(&ids, b.wrapping_add(c)), u64::from(c) * 16)];
                Entry::new(Some(pick(&ids, a)), record)
            }
            4 => Entry::new(Some(head), HeadPayload::new(pick(&ids, b), HeadReason::Checkout)),
            5 => Entry::new(Some(head), UserPayload::anchor("pinned")),
            6 => Entry::new(Some(pick(&ids, b)), UserPayload::text("side")),
            _ => {
                Entry::new(Some(pick(&ids, a)), AssistantPayload::new(vec![Block::text("branch")]))
            }
        };
        ids.push(entry.id.clone());
        j.push(entry);
    }
    let head = j.head_id().clone();
    let view = render(&j, head.as_str());
    assert_eq!(view, render(&j, head.as_str()), "rendering is a pure function");
    let checkpoints = view.items.iter().filter(|i| i.kind == ItemKind::Checkpoint).count();
    assert!(checkpoints <= 1, "{checkpoints} checkpoints");
    let _ = codewhale_journal::check_view(&view);
});
