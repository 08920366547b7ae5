//! The stack of modal views over the composer, found by what they are.
//!
//! Invariant: only the top view gets keys and is drawn; [`ViewStack::close`] removes every
//! view of a kind wherever it is, so a view that is replaced (the `/mcp` list) or no longer
//! waited for (an approval) never lingers under another.

use super::View;

/// What a view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// A tool call waiting for the user's answer.
    Approval,
    /// A scrollable text (`/context`, `/help`, `/status`).
    Text,
    /// A list to choose from (branch points, models, what to copy).
    Choice,
    /// The `/approval` list of grants, replaced when the grants change.
    Grants,
    /// The `/mcp` list of servers, replaced by a newer one.
    McpServers,
    /// The session picker.
    Sessions,
    /// The trust prompt for a workspace's config.
    Trust,
    /// The search through sent messages (Ctrl+R).
    HistorySearch,
    /// "Send this although it is larger than the window?"
    ConfirmSend,
    /// What a rewind, fork or undo would take back.
    Restore,
}

/// The modal views, the top one last.
#[derive(Debug, Default)]
pub struct ViewStack {
    views: Vec<Box<dyn View>>,
}

impl ViewStack {
    /// Puts `view` on top.
    pub fn push(&mut self, view: impl View + 'static) {
        self.views.push(Box::new(view));
    }

    /// Removes the top view.
    pub fn pop(&mut self) {
        self.views.pop();
    }

    /// The view that gets keys and is drawn.
    pub fn top(&self) -> Option<&dyn View> {
        self.views.last().map(|view| &**view)
    }

    /// The top view, to give it a key.
    pub fn top_mut(&mut self) -> Option<&mut Box<dyn View>> {
        self.views.last_mut()
    }

    /// Removes every view of `kind`.
    pub fn close(&mut self, kind: ViewKind) {
        self.views.retain(|view| view.kind() != kind);
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::TextView;
    use super::*;

    #[test]
    fn close_removes_every_view_of_a_kind_and_only_those() {
        let mut stack = ViewStack::default();
        stack.push(TextView::new("help", "a"));
        stack.push(crate::tui::views::TrustView::new("f".into(), vec![]));
        stack.push(TextView::new("context", "b"));
        assert_eq!(stack.top().map(|v| v.kind()), Some(ViewKind::Text));
        stack.close(ViewKind::Text);
        assert_eq!(stack.len(), 1);
        assert_eq!(stack.top().map(|v| v.kind()), Some(ViewKind::Trust));
        stack.pop();
        assert!(stack.is_empty());
        assert!(stack.top().is_none());
    }
}
