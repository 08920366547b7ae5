//! History pages: the newest one replaces what is shown (a session opened, HEAD moved), an
//! older one goes above it. A page is replayed into cells by `page_cells`, through the builders
//! the live events use, so what a resume shows is what the user saw.

use codewhale_protocol::HistoryPage;

use super::app::{App, Pending};
use super::cells::NoticeKind;
use super::page_cells;

impl App {
    pub(super) fn on_history(&mut self, page: HistoryPage, pending: Option<Pending>) {
        if pending == Some(Pending::KeepTranscript) {
            // HEAD did not move: what the user saw stays, footers, diffs and notices included;
            // the restore's notice follows.
            return;
        }
        if pending == Some(Pending::HeadBack) && page.reset && self.back_to(&page) {
            return;
        }
        let earlier = page_cells::transcript_of(&page);
        if page.reset {
            self.transcript = earlier;
            if let Some(text) = self.paging.reset_notice.take() {
                self.notice(NoticeKind::Info, text);
            }
            if let Some(text) = self.paging.carried_notice.take() {
                self.notice(NoticeKind::Info, text);
            }
            self.paging.older = page.older;
        } else if pending == Some(Pending::OlderHistory) {
            self.transcript.prepend(earlier);
            self.paging.older = page.older;
        }
    }

    /// HEAD went back to before an earlier message (a rewind, a fork, Esc Esc): when the
    /// transcript shows the whole conversation, it keeps what came before that point — turn
    /// footers, diffs and notices, as the user saw them — and drops only what followed; the
    /// move's notice comes next. `false` when the transcript cannot be matched (a resumed
    /// session shows only its newest page): the page then replaces it.
    fn back_to(&mut self, page: &HistoryPage) -> bool {
        if page.older.is_some() || self.paging.older.is_some() {
            return false;
        }
        let kept: Vec<&str> = page
            .items
            .iter()
            .filter_map(|i| match i {
                codewhale_protocol::HistoryItem::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        self.transcript.cut_after_user_messages(&kept)
    }
}
