//! Images in the view: a message before the checkpoint (one a compaction retained) reads each
//! of its images as one line (docs/images.md, *Images and compaction*); the round still open keeps
//! its images.

use super::{ItemContent, ItemKind, Shortened, ViewItem};
use crate::block::Block;
use crate::shorten::blocks_bytes;

/// Replaces each image of the messages before the checkpoint (those a compaction retained) by
/// its one-line placeholder. The last round keeps its images: the messages after the
/// checkpoint, and — while no user message follows the checkpoint (a pass in the middle of a
/// long turn) — the retained user message that started the round.
pub(super) fn cover(items: &mut [ViewItem]) {
    let Some(at) = items.iter().position(|i| i.kind == ItemKind::Checkpoint) else { return };
    let round_open = !items[at..].iter().any(|i| i.kind == ItemKind::User);
    let keep = round_open.then(|| items[..at].iter().rposition(|i| i.kind == ItemKind::User));
    for (index, item) in items[..at].iter_mut().enumerate() {
        if keep.flatten() == Some(index) {
            continue;
        }
        let ItemContent::Blocks(blocks) = &mut item.content else { continue };
        if !blocks.iter().any(|b| b.as_image().is_some()) {
            continue;
        }
        let original_bytes = blocks_bytes(blocks);
        for block in blocks.iter_mut() {
            if let Block::Image(image) = block {
                *block = Block::text(image.covered());
            }
        }
        item.tokens = None;
        item.shortened.get_or_insert(Shortened::ImagesCovered { original_bytes });
    }
}
