//! Reasoning inlined in the content as `<think>…</think>`, split back out as thinking.
//!
//! R1-style models served without a reasoning parser (vLLM without `--reasoning-parser`, older
//! Ollama and LM Studio builds, llama.cpp with `--reasoning-format none`) stream their
//! reasoning as ordinary content wrapped in `<think>` tags. Shown as text it floods the
//! transcript, and replayed as text it costs context on every later request.
//!
//! Invariants: only a reply whose content *begins* with `<think>` (after whitespace) is split,
//! so a model that merely mentions the tag later is left alone; tags split across chunks are
//! recognised; no byte of content is lost — everything is emitted as either thinking or text,
//! the tags themselves excepted.

use crate::event::StreamEvent;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

#[derive(Debug, Default)]
enum State {
    /// Not yet known whether the content opens with the tag; holds what arrived so far.
    #[default]
    Undecided,
    Inside,
    Outside,
}

/// Splits content deltas into thinking and text.
#[derive(Debug, Default)]
pub struct ThinkTags {
    state: State,
    pending: String,
    /// Just after `</think>`: the blank lines separating reasoning from answer are dropped,
    /// even when they arrive in later chunks.
    after_close: bool,
}

impl ThinkTags {
    /// Content will not be split (the server reports reasoning in its own field).
    pub fn disable(&mut self) {
        if matches!(self.state, State::Undecided) {
            self.state = State::Outside;
        }
    }

    /// Feed one content delta.
    pub fn push(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        self.pending.push_str(text);
        loop {
            match self.state {
                State::Outside => {
                    if self.after_close {
                        let rest = self.pending.trim_start_matches('\n');
                        if rest.is_empty() {
                            self.pending.clear();
                            return;
                        }
                        self.pending = rest.to_owned();
                        self.after_close = false;
                    }
                    emit_text(std::mem::take(&mut self.pending), out);
                    return;
                }
                State::Undecided => {
                    let trimmed = self.pending.trim_start();
                    if let Some(after) = trimmed.strip_prefix(OPEN) {
                        self.pending = after.to_owned();
                        self.state = State::Inside;
                    } else if OPEN.starts_with(trimmed) {
                        return; // Could still become the tag.
                    } else {
                        self.state = State::Outside;
                    }
                }
                State::Inside => match self.pending.find(CLOSE) {
                    Some(at) => {
                        let rest = self.pending.split_off(at);
                        emit_thinking(std::mem::take(&mut self.pending), out);
                        self.pending = rest[CLOSE.len()..].to_owned();
                        self.state = State::Outside;
                        self.after_close = true;
                    }
                    None => {
                        // Keep back a tail that could be the start of the closing tag.
                        let keep = partial_suffix(&self.pending, CLOSE);
                        let cut = self.pending.len() - keep;
                        let rest = self.pending.split_off(cut);
                        emit_thinking(std::mem::replace(&mut self.pending, rest), out);
                        return;
                    }
                },
            }
        }
    }

    /// The content ended: release whatever is held back.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        let pending = std::mem::take(&mut self.pending);
        match self.state {
            State::Inside => emit_thinking(pending, out),
            State::Undecided | State::Outside => emit_text(pending, out),
        }
        self.state = State::Outside;
    }
}

fn emit_text(text: String, out: &mut Vec<StreamEvent>) {
    if !text.is_empty() {
        out.push(StreamEvent::TextDelta { text });
    }
}

fn emit_thinking(text: String, out: &mut Vec<StreamEvent>) {
    if !text.is_empty() {
        out.push(StreamEvent::ThinkingDelta { text });
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len()).rev().find(|&n| text.ends_with(&tag[..n])).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&str]) -> (String, String) {
        let mut tags = ThinkTags::default();
        let mut out = Vec::new();
        for chunk in chunks {
            tags.push(chunk, &mut out);
        }
        tags.finish(&mut out);
        let (mut thinking, mut text) = (String::new(), String::new());
        for event in out {
            match event {
                StreamEvent::ThinkingDelta { text: t } => thinking.push_str(&t),
                StreamEvent::TextDelta { text: t } => text.push_str(&t),
                other => panic!("{other:?}"),
            }
        }
        (thinking, text)
    }

    #[test]
    fn leading_think_tags_become_thinking_at_any_split() {
        let body = "<think>\nweigh options</think>\n\nThe answer.";
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(
                split(&[a, b]),
                ("\nweigh options".into(), "The answer.".into()),
                "split at {at}"
            );
        }
    }

    #[test]
    fn content_not_opening_with_the_tag_is_text() {
        assert_eq!(split(&["Use <think>", " tags"]), (String::new(), "Use <think> tags".into()));
        assert_eq!(split(&["<thi", "s is text"]), (String::new(), "<this is text".into()));
        assert_eq!(split(&["<th"]), (String::new(), "<th".into()));
    }

    #[test]
    fn unclosed_thinking_is_kept_as_thinking() {
        assert_eq!(
            split(&["<think>still going </thi"]),
            ("still going </thi".into(), String::new())
        );
    }

    #[test]
    fn disabled_splitter_passes_text_through() {
        let mut tags = ThinkTags::default();
        tags.disable();
        let mut out = Vec::new();
        tags.push("<think>x</think>", &mut out);
        assert_eq!(out, vec![StreamEvent::TextDelta { text: "<think>x</think>".into() }]);
    }
}
