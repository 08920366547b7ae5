//! Ctrl+G: the draft in the user's own editor (`$VISUAL`, else `$EDITOR`, else `vi`).
//!
//! The draft goes to a temporary file, the editor runs on it with the terminal handed over
//! (through `sh`, so an editor setting with arguments such as `code --wait` works), and the
//! file's text comes back as the new draft. An editor that cannot start or exits with an error
//! leaves the draft as it was, with a message saying why.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The editor command the user configured.
pub fn command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// Edits `draft` with `editor` (a shell command line) and returns the edited text.
pub fn edit(editor: &str, draft: &str) -> Result<String, String> {
    let path = temp_file();
    std::fs::write(&path, draft)
        .map_err(|e| format!("cannot write the draft to {}: {e}", path.display()))?;
    let status =
        Command::new("sh").arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(&path).status();
    let result = match status {
        Ok(s) if s.success() => std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the edited draft back: {e}")),
        Ok(s) => Err(format!(
            "the editor `{editor}` exited with {s}; the draft is unchanged (set $VISUAL or \
             $EDITOR to choose another)"
        )),
        Err(e) => Err(format!(
            "cannot start the editor `{editor}`: {e}; set $VISUAL or $EDITOR to one that exists"
        )),
    };
    let _ = std::fs::remove_file(&path);
    result
}

fn temp_file() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("codewhale-draft-{}-{n}.md", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edited_text_comes_back_and_a_failing_editor_changes_nothing() {
        // A stand-in editor: appends a line to the file it is given.
        let edited = edit("printf 'and more\\n' >>", "first line\n").unwrap();
        assert_eq!(edited, "first line\nand more\n");
        let err = edit("false", "draft").unwrap_err();
        assert!(err.contains("exited with"), "{err}");
        let err = edit("/no/such/editor", "draft").unwrap_err();
        assert!(err.contains("exited with") || err.contains("cannot start"), "{err}");
    }
}
