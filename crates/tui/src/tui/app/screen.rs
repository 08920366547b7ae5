//! The terminal as the app sees it: the transcript's size at the last frame, what the
//! terminal can report, whether the mouse is captured, and the search over the transcript.

/// The transcript search (Ctrl+F).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Search {
    pub query: String,
    /// The cell shown as the current match.
    pub hit: Option<usize>,
    /// Cells holding the query.
    pub count: usize,
}

/// The terminal's state.
#[derive(Debug, Clone)]
pub struct Screen {
    /// The last known size of the transcript area, for page-sized scrolling.
    pub viewport: (u16, u16),
    /// The terminal reports Shift+Enter (keyboard enhancement is on).
    pub keyboard_enhanced: bool,
    /// Whether the mouse is captured (wheel scrolls the transcript; terminal selection off).
    pub mouse_capture: bool,
    /// The transcript search, while open.
    pub search: Option<Search>,
    /// Whether the terminal has the focus, as its focus reports last said (true until one
    /// says otherwise: a terminal that never reports is never notified).
    pub focused: bool,
    /// How the user is called back while the terminal is not focused (`None`: never).
    pub notify: Option<super::super::notify::Method>,
}

impl Default for Screen {
    fn default() -> Screen {
        Screen {
            viewport: (80, 20),
            keyboard_enhanced: false,
            mouse_capture: false,
            search: None,
            focused: true,
            notify: None,
        }
    }
}
