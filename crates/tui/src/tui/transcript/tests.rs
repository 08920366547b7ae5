use super::*;
use crate::tui::cells::{NoticeCell, NoticeKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

fn notice(text: &str) -> NoticeCell {
    NoticeCell { kind: NoticeKind::Info, text: text.into() }
}

fn screen(t: &Transcript, w: u16, h: u16) -> Vec<String> {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    t.render(area, &mut buf);
    (0..h)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect()
}

#[test]
fn heights_are_cached_per_width() {
    let mut t = Transcript::default();
    for i in 0..100 {
        t.push(notice(&format!("line {i}")));
    }
    assert_eq!(t.total_height(40), 100);
    assert_eq!(t.measured(), 100);
    t.total_height(40);
    screen(&t, 40, 10);
    assert_eq!(t.measured(), 100, "a second pass at the same width reads the cache");
    t.total_height(20);
    assert_eq!(t.measured(), 200, "a new width measures again");
}

#[test]
fn the_viewport_follows_the_tail_and_scrolls() {
    let mut t = Transcript::default();
    for i in 0..30 {
        t.push(notice(&format!("n{i}")));
    }
    let rows = screen(&t, 20, 5);
    assert_eq!(rows[4], "· n29");
    t.scroll_up(10, 20, 5);
    assert!(!t.follows_tail());
    assert_eq!(screen(&t, 20, 5)[4], "· n19");
    t.scroll_up(1000, 20, 5);
    assert_eq!(screen(&t, 20, 5)[0], "· n0");
    t.scroll_down(1000);
    assert!(t.follows_tail());
    assert_eq!(screen(&t, 20, 5)[4], "· n29");
}

#[test]
fn rows_being_read_stay_put_while_output_arrives() {
    let mut t = Transcript::default();
    for i in 0..30 {
        t.push(notice(&format!("n{i}")));
    }
    screen(&t, 20, 5);
    t.scroll_up(10, 20, 5);
    assert_eq!(screen(&t, 20, 5)[4], "· n19");
    t.push_delta("new\noutput\nbelow");
    assert_eq!(screen(&t, 20, 5)[4], "· n19", "the rows being read did not move");
    t.scroll_down(usize::MAX);
    assert!(screen(&t, 20, 5).iter().any(|r| r.contains("below")));
}

/// A cell that counts how often it is drawn.
#[derive(Debug)]
struct Counting(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Cell for Counting {
    fn lines(&self, _width: u16) -> Vec<Line<'static>> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        vec![Line::from("x"), Line::from("y")]
    }
}

#[test]
fn a_frame_draws_only_the_cells_in_the_viewport() {
    let drawn = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut t = Transcript::default();
    for _ in 0..5_000 {
        t.push(Counting(drawn.clone()));
    }
    screen(&t, 40, 10);
    let first = drawn.swap(0, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(first, 5_000 + 5, "measured once each, then the 5 visible cells drawn");
    screen(&t, 40, 10);
    let again = drawn.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(again, 0, "the next frame reuses the drawn lines");
}

#[test]
fn a_cell_taller_than_the_screen_shows_its_tail() {
    let mut t = Transcript::default();
    let text: Vec<String> = (0..20).map(|i| format!("row {i}")).collect();
    t.push(notice(&text.join("\n")));
    let rows = screen(&t, 20, 3);
    assert_eq!(rows, ["  row 17", "  row 18", "  row 19"]);
}

#[test]
fn streaming_text_is_committed_in_order() {
    let mut t = Transcript::default();
    t.push_delta("hel");
    t.push_delta("lo");
    assert!(t.has_active());
    t.push(notice("after"));
    assert!(!t.has_active());
    let rows = screen(&t, 20, 4);
    assert_eq!(rows[..3], ["• hello", "", "· after"]);
}

#[test]
fn a_notice_during_a_reply_goes_above_it_and_the_reply_stays_one_cell() {
    let mut t = Transcript::default();
    t.push_delta("first half, ");
    t.push_beside(notice("context report"));
    t.push_delta("second half");
    t.finish_active(false);
    assert_eq!(t.len(), 2, "one notice and one reply");
    assert_eq!(t.last_reply().as_deref(), Some("first half, second half"));
    let rows = screen(&t, 40, 4);
    assert_eq!(rows[..2], ["· context report", "• first half, second half"]);
}
