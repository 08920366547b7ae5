//! The engine's side of the plain view: the pure core's [`PlainView`] counted with the
//! session's tokenizer.
//!
//! The core never counts a token; it is handed [`Counts`]. Here an item's count is the one the
//! caller knows (stored on its line, or settled by the session), else counted now, and an
//! image costs what the provider's rule says.

pub use codewhale_compaction::plain::{Counts, PlainView};
use codewhale_journal::{Block, View, ViewItem};

use crate::session::counts;

/// Counts from `known`, else counted exactly now.
struct Known<F>(F);

impl<F: Fn(&ViewItem) -> Option<u32>> Counts for Known<F> {
    fn tokens(&self, item: &ViewItem) -> u32 {
        (self.0)(item).unwrap_or_else(|| counts::Counted::of_item(&item.content).exact())
    }

    fn image_tokens(&self, blocks: &[Block]) -> u32 {
        counts::image_tokens(blocks)
    }
}

/// `view` as plain messages; `known` supplies the counts the caller already has for items
/// without a stored one (the rest are counted here).
pub fn of(view: &View, known: impl Fn(&ViewItem) -> Option<u32>) -> PlainView {
    PlainView::new(view, &Known(known))
}

/// Like [`of`], with the tool calls' inputs moved out of `view` ([`PlainView::taking_inputs`]).
pub fn taking_inputs(view: &mut View, known: impl Fn(&ViewItem) -> Option<u32>) -> PlainView {
    PlainView::taking_inputs(view, &Known(known))
}
