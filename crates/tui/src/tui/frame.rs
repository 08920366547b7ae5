//! The coalescing frame requester: anything may ask for a redraw, any number of times; the
//! event loop gets one draw for all the requests made until then, and none at all while
//! nothing asks. There is no fixed-rate redraw clock.
//!
//! Requests come in two kinds with their own budgets (docs/commands.md): what the user did (a key,
//! a resize, a command's result) is drawn at once, at most one such frame per
//! [`KEY_FRAME_INTERVAL`] (about 60 per second); streamed output waits until
//! [`STREAM_FRAME_INTERVAL`] (about 30 per second) has passed since the last frame of any kind. So
//! a key typed while a reply streams is on screen in the next draw, not behind the stream's budget,
//! and a fast stream costs at most 30 frames a second.
//!
//! Invariant: a request is never lost — a request that arrives while a draw waits for its
//! budget is served by that draw or the next one — and a key request never waits for a
//! stream request's budget.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

/// The shortest time between two frames drawn for the user's input.
pub const KEY_FRAME_INTERVAL: Duration = Duration::from_micros(16_667);
/// The shortest time between a frame and one drawn for streamed output.
pub const STREAM_FRAME_INTERVAL: Duration = Duration::from_micros(33_333);

/// Why a frame is wanted, which decides how soon it may be drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// The user did something (or the UI itself changed): drawn as soon as the key budget allows.
    Input,
    /// Output arrived from the engine: drawn within the stream budget.
    Stream,
}

/// Asks for a redraw. Cheap to clone; requests are coalesced.
#[derive(Debug, Clone)]
pub struct FrameRequester {
    tx: mpsc::UnboundedSender<FrameKind>,
}

impl FrameRequester {
    /// Starts the scheduler task; the receiver yields one `()` per frame to draw. Must be
    /// called inside a tokio runtime.
    pub fn spawn() -> (FrameRequester, mpsc::UnboundedReceiver<()>) {
        let (tx, requests) = mpsc::unbounded_channel();
        let (draw_tx, draws) = mpsc::unbounded_channel();
        tokio::spawn(schedule(requests, draw_tx));
        (FrameRequester { tx }, draws)
    }

    /// Requests a redraw for the user's input, as soon as the key budget allows.
    pub fn request(&self) {
        self.request_kind(FrameKind::Input);
    }

    /// Requests a redraw of a kind.
    pub fn request_kind(&self, kind: FrameKind) {
        let _ = self.tx.send(kind);
    }
}

/// When the last frames were drawn.
#[derive(Debug, Default)]
struct Budget {
    last: Option<Instant>,
    last_input: Option<Instant>,
}

impl Budget {
    /// The earliest moment a frame of `kind` may be drawn.
    fn due(&self, kind: FrameKind) -> Instant {
        let now = Instant::now();
        let at = match kind {
            FrameKind::Input => self.last_input.map(|l| l + KEY_FRAME_INTERVAL),
            FrameKind::Stream => self.last.map(|l| l + STREAM_FRAME_INTERVAL),
        };
        at.map_or(now, |at| at.max(now))
    }
}

async fn schedule(
    mut requests: mpsc::UnboundedReceiver<FrameKind>,
    draws: mpsc::UnboundedSender<()>,
) {
    let mut budget = Budget::default();
    while let Some(first) = requests.recv().await {
        let mut due = budget.due(first);
        let mut input = first == FrameKind::Input;
        // Wait for the budget; a key asked for meanwhile may bring the frame forward.
        loop {
            tokio::select! {
                biased;
                more = requests.recv() => match more {
                    Some(kind) => {
                        input |= kind == FrameKind::Input;
                        due = due.min(budget.due(kind));
                    }
                    None => return,
                },
                () = tokio::time::sleep_until(due) => break,
            }
        }
        // Everything asked for until now is served by this one draw.
        while let Ok(kind) = requests.try_recv() {
            input |= kind == FrameKind::Input;
        }
        if draws.send(()).is_err() {
            break;
        }
        let now = Instant::now();
        budget.last = Some(now);
        if input {
            budget.last_input = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_coalesce_and_are_rate_limited() {
        let (frames, mut draws) = FrameRequester::spawn();
        for _ in 0..100 {
            frames.request();
        }
        tokio::task::yield_now().await;
        assert!(draws.recv().await.is_some());
        let start = Instant::now();
        frames.request();
        frames.request();
        assert!(draws.recv().await.is_some());
        assert!(start.elapsed() >= KEY_FRAME_INTERVAL - Duration::from_millis(1));
        assert!(draws.try_recv().is_err(), "one draw for many requests");
        // No request, no draw, however long we wait.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(draws.try_recv().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn streamed_output_is_drawn_at_most_30_times_a_second() {
        let (frames, mut draws) = FrameRequester::spawn();
        let start = Instant::now();
        let mut drawn = 0;
        // A delta every 5 ms for one second.
        for _ in 0..200 {
            frames.request_kind(FrameKind::Stream);
            tokio::time::sleep(Duration::from_millis(5)).await;
            while draws.try_recv().is_ok() {
                drawn += 1;
            }
        }
        assert!(start.elapsed() >= Duration::from_secs(1));
        assert!((25..=31).contains(&drawn), "{drawn} frames for one second of deltas");
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_drawn_at_once_while_a_stream_waits_for_its_budget() {
        let (frames, mut draws) = FrameRequester::spawn();
        frames.request_kind(FrameKind::Stream);
        assert!(draws.recv().await.is_some());
        // 5 ms later a delta arrives: it waits for the stream budget (33 ms)...
        tokio::time::sleep(Duration::from_millis(5)).await;
        frames.request_kind(FrameKind::Stream);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(draws.try_recv().is_err(), "the delta waits");
        // ...but a key typed now is drawn now, and that frame serves the delta too.
        let typed = Instant::now();
        frames.request();
        assert!(draws.recv().await.is_some());
        assert_eq!(typed.elapsed(), Duration::ZERO, "the key did not wait");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(draws.try_recv().is_err(), "the delta was drawn with the key");
    }
}
