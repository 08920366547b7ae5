//! The composer's popups: the slash command completion and the `@` file picker, with the
//! files it picks from and the paths chosen for the message being typed.
//!
//! Invariant: the popups follow the composer's text; every edit resets the completion and
//! reopens a dismissed popup (`App::after_edit`).

use std::sync::Arc;

use crate::tui::mentions::Picker;

/// The state of the popups over the composer.
#[derive(Debug, Clone, Default)]
pub struct Popups {
    /// Which completion the popup highlights.
    pub completion: usize,
    /// Esc closed the slash popup; it stays closed until the text changes.
    pub popup_dismissed: bool,
    /// The `@` picker while a mention is typed.
    pub mention: Option<Picker>,
    /// The workspace's files, once indexed (`None` before the first `@`).
    pub files: Option<Arc<Vec<String>>>,
    /// Paths chosen in the picker for the message being typed.
    pub mentions: Vec<String>,
}
