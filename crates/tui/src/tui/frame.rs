//! The coalescing frame requester: anything may ask for a redraw, any number of times; the
//! event loop gets at most one draw per [`MIN_FRAME_INTERVAL`] (about 60 per second), and none
//! at all while nothing asks. There is no fixed-rate redraw clock.
//!
//! Invariant: a request is never lost — a request that arrives while a draw is being
//! throttled is served by that draw or the next one.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

/// The shortest time between two draws.
pub const MIN_FRAME_INTERVAL: Duration = Duration::from_micros(16_667);

/// Asks for a redraw. Cheap to clone; requests are coalesced.
#[derive(Debug, Clone)]
pub struct FrameRequester {
    tx: mpsc::UnboundedSender<()>,
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

    /// Requests a redraw as soon as the frame budget allows.
    pub fn request(&self) {
        let _ = self.tx.send(());
    }
}

async fn schedule(mut requests: mpsc::UnboundedReceiver<()>, draws: mpsc::UnboundedSender<()>) {
    let mut last: Option<Instant> = None;
    while requests.recv().await.is_some() {
        if let Some(at) = last.map(|l| l + MIN_FRAME_INTERVAL) {
            tokio::time::sleep_until(at).await;
        }
        // Everything asked for until now is served by this one draw.
        while requests.try_recv().is_ok() {}
        if draws.send(()).is_err() {
            break;
        }
        last = Some(Instant::now());
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
        assert!(start.elapsed() >= MIN_FRAME_INTERVAL - Duration::from_millis(1));
        assert!(draws.try_recv().is_err(), "one draw for many requests");
        // No request, no draw, however long we wait.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(draws.try_recv().is_err());
    }
}
