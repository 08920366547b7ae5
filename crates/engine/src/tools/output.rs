//! Bounding tool output: what the model reads is capped, with a marker saying what was cut.
//!
//! Every cut is the journal's one cutter (`codewhale_journal::cut`): head + marker + tail, each
//! end on a UTF-8 boundary and, when one is near, a line boundary. The result is journaled cut,
//! so no entry holds the whole output: the marker states the bytes left out and the output's
//! size, so the model knows to narrow its request.

use codewhale_journal::cut::{self, Whole};

/// Most bytes of one tool result the model reads.
pub const MAX_OUTPUT_BYTES: usize = 30 * 1024;

/// `text` cut to `max` bytes as head + marker + tail, or unchanged when it fits.
pub fn cap(text: &str, max: usize) -> String {
    cut::head_tail(text, max, Whole::Nowhere).unwrap_or_else(|| text.to_owned())
}

/// Collects a stream's bytes keeping only a bounded head and tail, so memory stays bounded
/// whatever a command prints. The cut falls where [`cap`] would cut the whole stream.
#[derive(Debug, Default)]
pub struct HeadTail {
    /// The stream's first bytes: one more than the head's budget, so the cut can tell whether
    /// the budget ends on a character boundary.
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
    max: usize,
}

impl HeadTail {
    /// Keeps what a cut of the whole stream to `max` bytes keeps.
    pub fn new(max: usize) -> HeadTail {
        HeadTail { max, ..HeadTail::default() }
    }

    fn head_room(&self) -> usize {
        self.max / 2 + 1
    }

    fn tail_budget(&self) -> usize {
        self.max - self.max / 2
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_room();
        if self.head.len() < room {
            let take = (room - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend_from_slice(bytes);
        // One byte more than the tail's budget: the cut looks at the byte before the tail.
        let keep = self.tail_budget() + 1;
        if self.tail.len() > 2 * keep {
            let drop = self.tail.len() - keep;
            self.tail.drain(..drop);
        }
    }

    /// How many bytes were pushed in all, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The collected text with a marker where bytes were dropped.
    pub fn finish(self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        if self.total == kept {
            let mut all = self.head;
            all.extend_from_slice(&self.tail);
            return cap(&String::from_utf8_lossy(&all), self.max);
        }
        let end = cut::head_end_in(&self.head, self.max / 2);
        let start = cut::tail_start_in(&self.tail, self.tail_budget());
        let tail = &self.tail[start..];
        let left_out = self.total - end as u64 - tail.len() as u64;
        cut::join(
            &String::from_utf8_lossy(&self.head[..end]),
            left_out,
            self.total,
            &String::from_utf8_lossy(tail),
            Whole::Nowhere,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail() {
        let text = format!("{}{}", "a".repeat(100), "b".repeat(100));
        let out = cap(&text, 20);
        assert_eq!(out, "aaaaaaaaaa\n[… 180 of 200 bytes cut …]\nbbbbbbbbbb");
        assert_eq!(cap("short", 20), "short");
        let wide = "é".repeat(50);
        assert!(cap(&wide, 15).contains("[… 86 of 100 bytes cut …]"), "{}", cap(&wide, 15));
    }

    #[test]
    fn head_tail_is_bounded_and_honest() {
        let mut h = HeadTail::new(10);
        for _ in 0..1000 {
            h.push(b"0123456789");
        }
        let out = h.finish();
        assert_eq!(out, "01234\n[… 9990 of 10000 bytes cut …]\n56789");
        let mut small = HeadTail::new(100);
        small.push(b"hello");
        assert_eq!(small.finish(), "hello");
    }

    #[test]
    fn a_stream_is_cut_where_the_whole_text_would_be() {
        let lines: String = (0..5000).map(|i| format!("line {i} é🐋\n")).collect();
        for max in [0, 1, 7, 100, 1000, 4096] {
            for chunk in [1, 3, 64, 4096] {
                let mut h = HeadTail::new(max);
                for piece in lines.as_bytes().chunks(chunk) {
                    h.push(piece);
                }
                assert_eq!(h.finish(), cap(&lines, max), "max {max}, chunks of {chunk}");
            }
        }
    }
}
