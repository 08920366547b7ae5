//! The diff an approval shows for `write_file` and `edit_file`: the change the call would make,
//! as a unified diff against the file as it is now (a new file diffs against nothing).
//!
//! Read-only: nothing is written. `None` when the call is not a write or an edit, its
//! arguments are unusable, or the edit is one the tool would refuse (`files::apply_edit`, the
//! one rule both use; the call fails anyway and says why), or the file is not a regular one or
//! over [`MAX_BEFORE_BYTES`] (a FIFO is never opened for a read: the tool refuses it). A very
//! large diff is cut with a line saying how much was left out.

use serde_json::Value;

use crate::paths;
use crate::text_diff::{cap, unified};

/// The most of a diff an approval shows.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;
/// The largest file a diff is made against.
pub const MAX_BEFORE_BYTES: u64 = 16 * 1024 * 1024;

/// The unified diff of the change `name` with `input` would make in `workspace`.
pub fn preview(workspace: &std::path::Path, name: &str, input: &Value) -> Option<String> {
    let raw = input.get("path")?.as_str()?;
    let resolved = paths::resolve(workspace, raw).ok()?;
    let shown = paths::display(workspace, &resolved.path);
    let before = match crate::bounded::read_regular(&resolved.path, MAX_BEFORE_BYTES) {
        Ok(None) => None,
        Ok(Some((bytes, false))) => String::from_utf8(bytes).ok(),
        Ok(Some((_, true))) | Err(_) => return None,
    };
    let after = match name {
        "write_file" => input.get("content")?.as_str()?.to_owned(),
        "edit_file" => {
            let old = input.get("old_string")?.as_str()?;
            let new = input.get("new_string")?.as_str()?;
            let all = input.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
            // The tool's own rule: an edit it would refuse shows no diff.
            super::files::apply_edit(before.as_deref()?, old, new, all).ok()?.0
        }
        _ => return None,
    };
    let mut text = unified(&shown, before.as_deref(), Some(&after));
    if text.is_empty() {
        text = format!("{shown}: no change\n");
    }
    Some(cap(text, MAX_DIFF_BYTES))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn writes_and_edits_diff_against_the_file_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(ws.join("a.rs"), "fn one() {}\nfn two() {}\n").unwrap();
        let edit =
            json!({"path": "a.rs", "old_string": "fn two() {}", "new_string": "fn three() {}"});
        let diff = preview(&ws, "edit_file", &edit).unwrap();
        assert!(diff.starts_with("--- a/a.rs\n+++ b/a.rs\n"), "{diff}");
        assert!(diff.contains("-fn two() {}\n+fn three() {}\n"), "{diff}");
        let new = json!({"path": "new.txt", "content": "hello\n"});
        let diff = preview(&ws, "write_file", &new).unwrap();
        assert!(diff.starts_with("--- /dev/null\n+++ b/new.txt\n"), "{diff}");
        assert!(diff.contains("+hello"), "{diff}");
        assert_eq!(
            preview(
                &ws,
                "edit_file",
                &json!({"path": "a.rs", "old_string": "nope", "new_string": "x"})
            ),
            None
        );
        assert_eq!(preview(&ws, "shell", &json!({"command": "ls"})), None);
    }

    /// A diff shown is the edit applied: for every kind of edit, the approval shows a diff
    /// exactly when the tool makes the change, and the diff's new side is the file after it.
    #[test]
    fn a_diff_shown_is_the_edit_applied() {
        let cases = [
            ("fn two() {}", "fn three() {}", false),
            ("fn", "pub fn", false),
            ("fn", "pub fn", true),
            ("nope", "x", false),
            ("", "x", false),
            ("fn one() {}", "fn one() {}", false),
        ];
        for (old, new, all) in cases {
            let dir = tempfile::tempdir().unwrap();
            let ws = std::fs::canonicalize(dir.path()).unwrap();
            let before = "fn one() {}\nfn two() {}\n";
            std::fs::write(ws.join("a.rs"), before).unwrap();
            let input =
                json!({"path": "a.rs", "old_string": old, "new_string": new, "replace_all": all});
            let shown = preview(&ws, "edit_file", &input);
            let applied = super::super::files::edit_file(&ws.join("a.rs"), "a.rs", old, new, all);
            assert_eq!(shown.is_some(), applied.is_ok(), "{old:?} → {new:?} ({all}): {applied:?}");
            let after = std::fs::read_to_string(ws.join("a.rs")).unwrap();
            if let Some(diff) = shown {
                assert_eq!(diff, unified("a.rs", Some(before), Some(&after)), "{old:?} ({all})");
            } else {
                assert_eq!(after, before, "a refused edit changes nothing");
            }
        }
    }
}
