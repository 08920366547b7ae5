use super::*;
use crate::tui::markdown::{highlight, render_at};

/// A reply of a few KB with every construct the renderer knows, written so that block
/// boundaries are tested where they are easy to get wrong: a paragraph that a later line turns
/// into a heading, a list interrupting a paragraph, a heading right before a fence, a loose list
/// continued after blank lines, a table ended by a blank line, a quote with a lazy line, an HTML
/// block, a fence whose closing line arrives in pieces.
const DOC: &str = r#"Here is the plan for the change, in **three** steps, with *some* `inline code`
that wraps across a few rows at a narrow width — and a little non-ASCII text: größer, 東京.

Setext title
============

A paragraph directly followed by a list:
- first item with **bold** text
- second item that is long enough to wrap at the narrow width we test at
  - a nested item
  - another nested item

1. loose ordered item

2. second loose item

   with a continuation paragraph
3. third

# A heading right before a fence
```rust
fn main() {
    let answer = 42; // the answer
    println!("{answer}");
}
```

| name | size | note |
|:-----|-----:|:----:|
| a.rs | 10 | *small* |
| main.rs | 1200 | big `file` |

> A quote that starts here
and continues lazily on this line.
>
> - a list in the quote

<div class="note">
an HTML block
</div>

---

```python
def f(x):
    return x * 2
```

```
plain fenced text without a language
```

    indented code
    more indented code

Subtitle
--------

A closing paragraph with a [link](https://example.com) and ~~struck~~ words, then
a hard break  
after it, and a final sentence without a trailing newline"#;

/// Cut points: pseudo-random steps of 1–23 bytes plus a cut right after every character that
/// opens or closes a construct, always on a character boundary.
fn cuts(text: &str, seed: u64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut state = seed;
    let mut at = 0;
    while at < text.len() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        at = text.ceil_char_boundary(at + 1 + (state >> 33) as usize % 23);
        out.push(at.min(text.len()));
    }
    for (i, c) in text.char_indices() {
        if matches!(c, '`' | '|' | '*' | '\n' | '-' | '=' | '>' | '<' | '#') {
            out.push(i + c.len_utf8());
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Streams `text` cut at `cuts`, checking after every delta that the incremental rendering is
/// the full one at the width `width_at(step)` chooses.
fn stream_and_check(text: &str, cuts: &[usize], width_at: impl Fn(usize) -> usize) {
    highlight::ready_for_tests();
    let mut md = StreamedMarkdown::default();
    let mut from = 0;
    for (step, &to) in cuts.iter().enumerate() {
        md.push_str(&text[from..to]);
        from = to;
        let width = width_at(step);
        let full = render_at(md.source(), width);
        assert_eq!(md.lines(width), full, "step {step}, {to} bytes, width {width}");
        assert_eq!(md.height(width), full.len(), "step {step}: height");
        let skip = full.len() / 3;
        assert_eq!(md.rows(width, skip, 5), full[skip..(skip + 5).min(full.len())]);
    }
    assert_eq!(md.source(), text);
}

#[test]
fn the_incremental_render_is_the_full_render_at_every_step() {
    for seed in [1, 7, 42] {
        stream_and_check(DOC, &cuts(DOC, seed), |_| 72);
    }
}

#[test]
fn the_incremental_render_holds_across_resizes() {
    // The width changes mid-stream, back and forth: cached lines are laid out again, never
    // mixed from two widths.
    stream_and_check(DOC, &cuts(DOC, 3), |step| [72, 24, 72, 111, 9][(step / 17) % 5]);
}

#[test]
fn every_byte_is_an_awkward_point() {
    let small = "Para one\nstill one\n\n- a\n- b\n\n```rs\nlet x = 1;\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n\ntext\n===\n";
    let cuts: Vec<usize> = (1..=small.len()).collect();
    stream_and_check(small, &cuts, |_| 30);
}

#[test]
fn a_late_reference_definition_still_renders_earlier_links() {
    let text = "See [the docs] for more.\n\nAnother paragraph.\n\n[the docs]: https://example.com/docs\n\nAfter.\n";
    let cuts: Vec<usize> = (1..=text.len()).collect();
    stream_and_check(text, &cuts, |_| 40);
    let md = StreamedMarkdown::new(text);
    let joined: String = md.lines(80).iter().map(|l| l.to_string()).collect();
    assert!(joined.contains("https://example.com/docs"), "{joined}");
}

#[test]
fn only_the_open_tail_is_rendered_again() {
    highlight::ready_for_tests();
    let mut md = StreamedMarkdown::default();
    let longest_block = DOC.split("\n\n").map(str::len).max().unwrap_or_default() + "\n\n".len();
    let mut from = 0;
    for to in cuts(DOC, 5) {
        md.push_str(&DOC[from..to]);
        from = to;
        md.height(72);
        let state = md.state.borrow();
        let open = md.source().len() - state.done;
        assert!(open <= 2 * longest_block, "{open} bytes re-rendered at {to}");
    }
    let state = md.state.borrow();
    assert!(state.blocks.len() >= 12, "{} finished blocks", state.blocks.len());
    assert!(!state.whole);
}

#[test]
fn finished_blocks_are_kept_and_laid_out_again_only_on_a_new_width() {
    highlight::ready_for_tests();
    let mut md = StreamedMarkdown::new("first paragraph\n\nsecond paragraph\n\n");
    md.height(40);
    md.push_str("third");
    md.height(40);
    let first = md.state.borrow().blocks[0].laid.as_ref().map(|l| l.lines.as_ptr());
    md.push_str(" grows");
    md.height(40);
    let again = md.state.borrow().blocks[0].laid.as_ref().map(|l| l.lines.as_ptr());
    assert_eq!(first, again, "a finished block is not laid out again for a delta");
    md.height(20);
    assert_eq!(md.state.borrow().blocks[0].laid.as_ref().map(|l| l.width), Some(20));
}
