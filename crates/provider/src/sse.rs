//! A small, strict-enough Server-Sent Events parser for streamed HTTP bodies.
//!
//! Owns the byte-level framing only: lines end with LF, CRLF or CR (a CR at the end of one
//! chunk and an LF at the start of the next are one terminator); `:` lines are comments
//! (keep-alives such as `: OPENROUTER PROCESSING`); `data` lines of one event are joined with
//! `\n`; a blank line dispatches. What the data means is the wire decoders' business.
//!
//! Invariants: input may be split anywhere, including inside a UTF-8 sequence or a CRLF, and
//! the events are the same as for the unsplit body. A line longer than [`MAX_LINE`], or an
//! event whose `data` lines together pass [`MAX_EVENT_DATA`], is a protocol error rather than
//! unbounded memory (DESIGN §4, *Every read is bounded*): a server that sends one event forever
//! costs at most about twice the bound.

use crate::error::ProviderError;

/// Longest line accepted (tool arguments with whole files inside can be large).
pub const MAX_LINE: usize = 32 * 1024 * 1024;

/// The most one event's data may hold, all its `data:` lines together (32 MiB).
pub const MAX_EVENT_DATA: usize = 32 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event (Anthropic always does).
    pub event: Option<String>,
    pub data: String,
}

/// Incremental parser: feed chunks, collect events.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended in CR, so an LF starting this one is part of that terminator.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Parse one chunk, appending every completed event to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            self.check_len()?;
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
        }
        self.line.extend_from_slice(rest);
        self.check_len()
    }

    /// End of body: a final event that lacked its blank line is still dispatched, because
    /// several servers end the body right after `data: [DONE]`.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn check_len(&self) -> Result<(), ProviderError> {
        if self.line.len() > MAX_LINE {
            return Err(ProviderError::protocol(format!(
                "the server sent an event line longer than {MAX_LINE} bytes"
            )));
        }
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| {
            ProviderError::protocol("the server sent an event line that is not UTF-8")
        })?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                let joined = usize::from(self.has_data) + value.len();
                if self.data.len() + joined > MAX_EVENT_DATA {
                    return Err(ProviderError::protocol(format!(
                        "the server sent a stream event whose data passed {} MiB without ending; \
                         the reply was cut there",
                        MAX_EVENT_DATA >> 20
                    )));
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            // `id` and `retry` steer browser reconnection; a model stream is never resumed.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent { event: self.event.take(), data: std::mem::take(&mut self.data) });
        }
        self.event = None;
        self.data.clear();
        self.has_data = false;
    }
}

/// The JSON of one stream event's `data`, or the protocol error that says it is not JSON.
pub(crate) fn json_event(data: &str) -> Result<serde_json::Value, crate::error::ProviderError> {
    serde_json::from_str(data).map_err(|err| {
        crate::error::ProviderError::protocol(format!(
            "the server sent a stream event that is not JSON: {err}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out).unwrap();
        }
        parser.finish(&mut out).unwrap();
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn parses_named_events_comments_and_multiline_data() {
        let body = b": keep-alive\n\nevent: ping\ndata: {}\n\ndata: a\ndata:b\n\ndata: [DONE]\n\n";
        assert_eq!(
            parse_chunks(&[body]),
            vec![ev(Some("ping"), "{}"), ev(None, "a\nb"), ev(None, "[DONE]")]
        );
    }

    #[test]
    fn every_split_point_and_line_ending_gives_the_same_events() {
        let body =
            "event: message_start\r\ndata: {\"t\":\"héllo ✓\"}\r\n\r\n: c\rdata: x\r\rdata: y\n\n";
        let expected =
            vec![ev(Some("message_start"), "{\"t\":\"héllo ✓\"}"), ev(None, "x"), ev(None, "y")];
        let bytes = body.as_bytes();
        for split in 0..=bytes.len() {
            let (a, b) = bytes.split_at(split);
            assert_eq!(parse_chunks(&[a, b]), expected, "split at {split}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_chunks(&singles), expected);
    }

    #[test]
    fn a_final_event_without_blank_line_is_dispatched() {
        assert_eq!(parse_chunks(&[b"data: [DONE]"]), vec![ev(None, "[DONE]")]);
    }

    #[test]
    fn events_without_data_are_ignored() {
        assert_eq!(parse_chunks(&[b"event: ping\n\nid: 3\n\n"]), vec![]);
    }

    /// Bytes that make SSE lines, JSON and a split UTF-8 sequence.
    const ALPHABET: &[u8] = b"data: event:{}[]\"\r\n:,0123456789type\xc3\xa9";

    /// The events of `body` fed in pieces cut at `cuts`, and whether the parser refused it.
    fn parse_cut(body: &[u8], cuts: &[usize]) -> (Vec<SseEvent>, bool) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
        cuts.sort_unstable();
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([body.len()]) {
            if parser.feed(&body[from..cut], &mut out).is_err() {
                return (out, true);
            }
            from = cut;
        }
        let refused = parser.finish(&mut out).is_err();
        (out, refused)
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic_the_parser_or_decoders(
            body in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..200),
            cut in proptest::num::usize::ANY,
        ) {
            let (events, _) = parse_cut(&body, &[cut]);
            let mut openai = crate::openai::decode::Decoder::new();
            let mut anthropic = crate::anthropic::decode::Decoder::new();
            for event in &events {
                let _ = openai.on_data(&event.data, &mut Vec::new());
                let _ = anthropic.on_data(&event.data, &mut Vec::new());
            }
        }

        #[test]
        fn any_chunking_gives_the_events_of_the_whole_body(
            body in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..200),
            cuts in proptest::collection::vec(proptest::num::usize::ANY, 0..8),
        ) {
            proptest::prop_assert_eq!(parse_cut(&body, &cuts), parse_cut(&body, &[]));
        }
    }

    #[test]
    fn an_event_whose_data_lines_never_end_is_refused_at_the_bound() {
        let mut parser = SseParser::new();
        let line = format!("data: {}\n", "x".repeat(1 << 20));
        let mut refused = None;
        for sent in 0..64 {
            if let Err(err) = parser.feed(line.as_bytes(), &mut Vec::new()) {
                refused = Some((sent, err));
                break;
            }
        }
        let (sent, err) = refused.expect("the event is refused");
        assert_eq!(sent, 31, "refused at the 32nd line of 1 MiB (the newlines count)");
        assert_eq!(err.kind, crate::ErrorKind::Protocol);
        assert!(err.message.contains("passed 32 MiB"), "{}", err.message);
        assert!(parser.data.capacity() <= 2 * MAX_EVENT_DATA);
    }

    #[test]
    fn invalid_utf8_is_a_protocol_error() {
        let mut parser = SseParser::new();
        let err = parser.feed(b"data: \xff\xfe\n\n", &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Protocol);
    }
}
