//! Ctrl+G: the draft in the user's own editor (`$VISUAL`, else `$EDITOR`, else `vi`).
//!
//! The draft goes to a temporary file, the editor runs on it with the terminal handed over
//! (through `sh`, so an editor setting with arguments such as `code --wait` works), and the
//! file's text comes back as the new draft. An editor that cannot start or exits with an error
//! leaves the draft as it was, with a message saying why.
//!
//! The temporary file is private: created new (never opened through an existing name, so a
//! symlink planted in the shared temp directory is not followed), under a random name, readable
//! by the user alone, and removed afterwards.

use std::io::Write as _;
use std::process::Command;

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
    let mut file =
        tempfile::Builder::new().prefix("codewhale-draft-").suffix(".md").tempfile().map_err(
            |e| format!("cannot create a file for the draft in the temp directory: {e}"),
        )?;
    let path = file.path().to_path_buf();
    file.write_all(draft.as_bytes())
        .and_then(|()| file.flush())
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
    // Dropping the file removes it (whatever name the editor left at that path).
    drop(file);
    result
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

    #[test]
    fn the_draft_file_is_private_and_never_a_planted_link() {
        // The old predictable name, planted as a link to a file the user owns.
        let victim = tempfile::NamedTempFile::new().unwrap();
        for n in 0..4 {
            let planted =
                std::env::temp_dir().join(format!("codewhale-draft-{}-{n}.md", std::process::id()));
            let _ = std::os::unix::fs::symlink(victim.path(), &planted);
        }
        let seen = edit("sh -c 'stat -c %a%F \"$0\" >> \"$0\"'", "secret draft\n").unwrap();
        assert!(seen.starts_with("secret draft\n600regular file"), "{seen}");
        assert_eq!(
            std::fs::read_to_string(victim.path()).unwrap(),
            "",
            "the link was not followed"
        );
        for n in 0..4 {
            let planted =
                std::env::temp_dir().join(format!("codewhale-draft-{}-{n}.md", std::process::id()));
            let _ = std::fs::remove_file(planted);
        }
    }
}
