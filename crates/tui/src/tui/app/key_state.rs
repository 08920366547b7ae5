//! Keys that take a second press, and leaving.
//!
//! Invariant: an armed key is disarmed by any other key, so a second press means "the same
//! key again, now"; once leaving has started, another quit leaves at once.

/// Presses waiting for their second one, and whether the app is leaving.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyState {
    /// A first Ctrl+C on an idle, empty composer; the second one quits.
    pub quit_armed: bool,
    /// A first Esc on an idle draft; the second one clears it.
    pub esc_armed: bool,
    /// Shutdown was sent; waiting for the engine to confirm.
    pub quitting: bool,
}
