//! A stdio server's output, bounded per line: [`BoundedLines`] passes every line of at most
//! [`MAX_LINE`] bytes through unchanged and turns a longer one into an immediate error
//! response for the request it answers, so the call fails at once instead of waiting out its
//! timeout.
//!
//! Invariants: at most `limit` bytes of one line ever reach the reader (rmcp's line buffer),
//! the rest of an oversized line is read in fixed-size chunks and dropped, so memory stays
//! bounded however long the line is; the cut prefix is ended with a byte that is never valid
//! UTF-8 or JSON (`0xFF`) and a newline, so the reader discards it as unparsable; the error
//! response is written only for a message that carries a top-level `id` and no `method` (a
//! response, never a request from the server); the stream is in step again after the
//! oversized line's newline; a line that runs past `give_up` bytes is a read error, which
//! closes the connection and fails every pending call at once.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use super::scan::IdScanner;

/// The largest message (one line) a stdio server may send: rmcp's own limit, and the largest
/// SSE event its HTTP client accepts.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// An oversized line longer than this is not waited out: the connection is closed.
pub const GIVE_UP: u64 = 1 << 30;

/// The JSON-RPC error code of the response made up for an oversized result (in the range
/// JSON-RPC leaves to implementations).
pub const OVERSIZED_CODE: i32 = -32_050;

const CHUNK: usize = 64 * 1024;

/// Where the current line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Within the limit: bytes pass through.
    Passing,
    /// Over it: bytes are dropped until the newline. `answered`: the error response was
    /// already queued.
    Dropping { answered: bool },
}

/// See the module documentation.
#[derive(Debug)]
pub struct BoundedLines<R> {
    inner: R,
    limit: usize,
    give_up: u64,
    /// Bytes read from `inner`, not yet handled: `buf[start..end]`.
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Made-up bytes to hand out before anything else: `queued[sent..]`.
    queued: Vec<u8>,
    sent: usize,
    line: Line,
    /// Bytes of the current line seen so far (newline excluded).
    length: u64,
    scan: IdScanner,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// Lines of at most [`MAX_LINE`] bytes; `GIVE_UP` ends the connection.
    pub fn new(inner: R) -> BoundedLines<R> {
        BoundedLines::with_limits(inner, MAX_LINE, GIVE_UP)
    }

    /// Lines of at most `limit` bytes; a line longer than `give_up` is a read error.
    pub fn with_limits(inner: R, limit: usize, give_up: u64) -> BoundedLines<R> {
        BoundedLines {
            inner,
            limit,
            give_up,
            buf: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            queued: Vec::new(),
            sent: 0,
            line: Line::Passing,
            length: 0,
            scan: IdScanner::default(),
        }
    }

    /// Queues the error response for the oversized line's request, once its id is known.
    fn answer(&mut self, at_end: bool) {
        let Line::Dropping { answered: false } = self.line else { return };
        let Some(id) = self.scan.response_id(at_end) else { return };
        let response = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": OVERSIZED_CODE,
                "message": format!(
                    "the result is larger than {} MiB, the limit for one MCP message",
                    self.limit / (1024 * 1024)
                ),
                "data": { "limit": self.limit },
            },
        });
        self.queued.extend_from_slice(response.to_string().as_bytes());
        self.queued.push(b'\n');
        self.line = Line::Dropping { answered: true };
    }

    /// Handles `buf[start..end]` up to what `out` can take. Returns an error once an
    /// oversized line passes `give_up`.
    fn handle(&mut self, out: &mut ReadBuf<'_>) -> std::io::Result<()> {
        while self.start < self.end && self.queued.len() == self.sent && out.remaining() > 0 {
            let chunk = &self.buf[self.start..self.end];
            let newline = chunk.iter().position(|b| *b == b'\n');
            let content = newline.unwrap_or(chunk.len());
            match self.line {
                Line::Passing => {
                    let room = (self.limit as u64).saturating_sub(self.length);
                    if content as u64 > room {
                        // Pass what fits, then the line is cut.
                        let fits = usize::try_from(room).unwrap_or(usize::MAX).min(out.remaining());
                        let part = &chunk[..fits];
                        self.scan.feed(part);
                        out.put_slice(part);
                        self.start += fits;
                        self.length += fits as u64;
                        if self.length == self.limit as u64 {
                            self.line = Line::Dropping { answered: false };
                            self.queued.extend_from_slice(&[0xFF, b'\n']);
                            self.answer(false);
                        }
                    } else {
                        let whole = newline.map_or(content, |n| n + 1);
                        let take = whole.min(out.remaining());
                        let part = &chunk[..take];
                        self.scan.feed(part);
                        out.put_slice(part);
                        self.start += take;
                        if newline.is_some() && take == whole {
                            self.length = 0;
                            self.scan = IdScanner::default();
                        } else {
                            self.length += take as u64;
                        }
                    }
                }
                Line::Dropping { .. } => {
                    self.scan.feed(&chunk[..content]);
                    self.length += content as u64;
                    self.start += newline.map_or(content, |n| n + 1);
                    self.answer(newline.is_some());
                    if newline.is_some() {
                        tracing::warn!(
                            bytes = self.length,
                            limit = self.limit,
                            "an MCP server sent a message over the limit; it was dropped"
                        );
                        self.line = Line::Passing;
                        self.length = 0;
                        self.scan = IdScanner::default();
                    } else if self.length > self.give_up {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!(
                                "the server sent a message of more than {} MiB without ending \
                                 it",
                                self.give_up / (1024 * 1024)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn hand_out_queued(&mut self, out: &mut ReadBuf<'_>) {
        let rest = &self.queued[self.sent..];
        let n = rest.len().min(out.remaining());
        out.put_slice(&rest[..n]);
        self.sent += n;
        if self.sent == self.queued.len() {
            self.queued.clear();
            self.sent = 0;
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = out.filled().len();
        loop {
            if this.sent < this.queued.len() {
                this.hand_out_queued(out);
            }
            if let Err(e) = this.handle(out) {
                return Poll::Ready(Err(e));
            }
            if this.sent < this.queued.len() && out.remaining() > 0 {
                continue;
            }
            // Something was handed out, or the caller has no room: done for now. (An empty
            // read would mean end of stream to the caller.)
            if out.filled().len() > before || out.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            let mut fill = ReadBuf::new(&mut this.buf);
            match Pin::new(&mut this.inner).poll_read(cx, &mut fill) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = fill.filled().len();
                    if n == 0 {
                        // End of stream: an answer still owed for a cut line goes first.
                        this.answer(true);
                        if this.sent < this.queued.len() {
                            continue;
                        }
                        return Poll::Ready(Ok(()));
                    }
                    this.start = 0;
                    this.end = n;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// Every line the reader gets from `input` through a [`BoundedLines`] of `limit` bytes.
    async fn lines(input: Vec<u8>, limit: usize, give_up: u64) -> (Vec<Vec<u8>>, Option<String>) {
        let (mut tx, rx) = tokio::io::duplex(1000);
        tokio::spawn(async move {
            // Small writes, so lines are cut across reads.
            for part in input.chunks(333) {
                if tx.write_all(part).await.is_err() {
                    return;
                }
            }
        });
        let mut reader = BufReader::new(BoundedLines::with_limits(rx, limit, give_up));
        let mut out = Vec::new();
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) => return (out, None),
                Ok(_) => out.push(line),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    fn big_result(id: &str, size: usize, id_first: bool) -> Vec<u8> {
        let text = "x".repeat(size);
        let body = format!(r#""result":{{"content":[{{"type":"text","text":"{text}"}}]}}"#);
        let line = if id_first {
            format!(r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#)
        } else {
            format!(r#"{{{body},"jsonrpc":"2.0","id":{id}}}"#)
        };
        format!("{line}\n").into_bytes()
    }

    fn error_id(line: &[u8]) -> Option<serde_json::Value> {
        let value: serde_json::Value = serde_json::from_slice(line).ok()?;
        (value["error"]["code"] == OVERSIZED_CODE).then(|| value["id"].clone())
    }

    #[tokio::test]
    async fn short_lines_pass_unchanged() {
        let input = b"{\"id\":1,\"result\":{}}\n\n{\"method\":\"x\"}\nno newline".to_vec();
        let (out, err) = lines(input.clone(), 100, 1000).await;
        assert_eq!(out.concat(), input);
        assert!(err.is_none());
    }

    #[tokio::test]
    async fn an_oversized_result_becomes_an_error_for_its_id_and_the_next_line_passes() {
        for id_first in [true, false] {
            let mut input = big_result("7", 5000, id_first);
            input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n");
            let (out, err) = lines(input, 1000, 1 << 20).await;
            assert!(err.is_none(), "{err:?}");
            assert_eq!(out.len(), 3, "{out:?}");
            // The cut prefix: never more than the limit, and never parsable.
            assert_eq!(out[0].len(), 1000 + 2);
            assert!(serde_json::from_slice::<serde_json::Value>(&out[0]).is_err());
            assert_eq!(error_id(&out[1]), Some(serde_json::json!(7)), "id first: {id_first}");
            assert_eq!(out[2], b"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n");
        }
    }

    #[tokio::test]
    async fn a_string_id_is_kept_and_an_oversized_request_gets_no_answer() {
        let (out, _) = lines(big_result("\"a\\\"b\"", 3000, true), 500, 1 << 20).await;
        assert_eq!(error_id(&out[1]), Some(serde_json::json!("a\"b")));
        // A request from the server (it has a method) is dropped without an answer: an id of
        // its own numbering must never complete one of ours.
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\",\"params\":\"{}\"}}\n",
            "y".repeat(3000)
        );
        let (out, _) = lines(request.into_bytes(), 500, 1 << 20).await;
        assert_eq!(out.len(), 1, "{out:?}");
    }

    #[tokio::test]
    async fn a_line_that_never_ends_closes_the_stream() {
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'z', 20_000));
        let (out, err) = lines(input, 1000, 10_000).await;
        // The call is answered at once; then the stream gives up.
        assert_eq!(error_id(&out[1]), Some(serde_json::json!(3)));
        assert!(err.unwrap().contains("without ending it"));
    }
}
