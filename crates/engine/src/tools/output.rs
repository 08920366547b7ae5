//! Bounding tool output: what the model reads is capped, with a marker saying what was cut.
//!
//! Invariant: a cut never splits a UTF-8 character, and the marker states how many bytes were
//! left out so the model knows to narrow its request.

/// Most bytes of one tool result the model reads.
pub const MAX_OUTPUT_BYTES: usize = 30 * 1024;

/// `text` cut to `max` bytes as head + marker + tail, or unchanged when it fits.
pub fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let half = max / 2;
    let head_end = text.floor_char_boundary(half);
    let tail_start = text.ceil_char_boundary(text.len() - half);
    format!(
        "{}\n[... {} bytes omitted ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

/// Collects a stream's bytes keeping only a bounded head and tail, so memory stays bounded
/// whatever a command prints.
#[derive(Debug, Default)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
    half: usize,
}

impl HeadTail {
    /// Keeps up to `max / 2` bytes at each end.
    pub fn new(max: usize) -> HeadTail {
        HeadTail { half: max / 2, ..HeadTail::default() }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.half {
            let take = (self.half - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * self.half {
            let drop = self.tail.len() - self.half;
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
            return cap(&String::from_utf8_lossy(&all), 2 * self.half.max(1));
        }
        let tail_keep = self.tail.len().min(self.half);
        let tail = &self.tail[self.tail.len() - tail_keep..];
        format!(
            "{}\n[... {} bytes omitted ...]\n{}",
            String::from_utf8_lossy(&self.head),
            self.total - self.head.len() as u64 - tail_keep as u64,
            String::from_utf8_lossy(tail)
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
        assert!(out.starts_with("aaaaaaaaaa\n[... 180 bytes omitted ...]\nbbbbbbbbbb"));
        assert_eq!(cap("short", 20), "short");
        let wide = "é".repeat(50);
        assert!(cap(&wide, 15).contains("omitted"));
    }

    #[test]
    fn head_tail_is_bounded_and_honest() {
        let mut h = HeadTail::new(10);
        for _ in 0..1000 {
            h.push(b"0123456789");
        }
        let out = h.finish();
        assert!(out.starts_with("01234\n[... 9990 bytes omitted ...]\n56789"), "{out}");
        let mut small = HeadTail::new(100);
        small.push(b"hello");
        assert_eq!(small.finish(), "hello");
    }
}
