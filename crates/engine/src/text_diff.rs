//! Unified diffs of text, cut to a size: what an approval shows of a write or an edit
//! (`tools::diff`) and what `/diff` shows of the workspace (`checkpoint::workspace_diff`).
//! Pure: text in, text out.

/// How long the line diff may search for the smallest diff before it settles for one.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);

/// The unified diff of `shown` from `before` to `after` (`None`: the file is absent on that
/// side, shown as `/dev/null`); empty when they are equal.
pub fn unified(shown: &str, before: Option<&str>, after: Option<&str>) -> String {
    let from = before.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{shown}"));
    let to = after.map_or_else(|| "/dev/null".to_owned(), |_| format!("b/{shown}"));
    // A large rewrite could keep the diff busy for seconds; past the deadline it is
    // approximated (still a correct diff, only less minimal), so nobody waits on it.
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before.unwrap_or(""), after.unwrap_or(""));
    diff.unified_diff().context_radius(3).header(&from, &to).to_string()
}

/// `text` cut to `max` bytes with a line saying how much of the diff was left out.
pub fn cap(mut text: String, max: usize) -> String {
    if text.len() > max {
        let end = text.floor_char_boundary(max);
        let left = text[end..].lines().count();
        text.truncate(end);
        text.push_str(&format!("\n[... {left} more lines of the diff not shown ...]\n"));
    }
    text
}
