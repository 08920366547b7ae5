//! `search`: a regex over the files of the workspace, honouring `.gitignore` (the `ignore` and
//! `grep` crates, the engine of ripgrep).
//!
//! Invariants: results are capped (matches, line length, bytes) and the cap is stated;
//! binary files are skipped; a bad regex or glob is an error sentence, never a panic.

use std::fmt::Write as _;
use std::path::Path;

use codewhale_journal::cut;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::WalkBuilder;

/// Most matching lines reported.
pub const MAX_MATCHES: usize = 200;
/// Longest matching line shown whole.
pub const MAX_MATCH_LINE: usize = 300;

/// Runs the search from `root`; paths in the output are relative to `workspace`.
pub fn search(
    workspace: &Path,
    root: &Path,
    pattern: &str,
    glob: Option<&str>,
) -> Result<String, String> {
    let matcher = RegexMatcherBuilder::new()
        .build(pattern)
        .map_err(|e| format!("the pattern is not a valid regular expression: {e}"))?;
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false).filter_entry(|e| e.file_name() != ".git");
    if let Some(glob) = glob.filter(|g| !g.trim().is_empty()) {
        let mut ob = OverrideBuilder::new(root);
        ob.add(glob).map_err(|e| format!("the glob {glob:?} is not valid: {e}"))?;
        let overrides = ob.build().map_err(|e| format!("the glob {glob:?} is not valid: {e}"))?;
        walk.overrides(overrides);
    }
    let mut searcher =
        SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
    let mut out = String::new();
    let mut count = 0usize;
    let mut truncated = false;
    for entry in walk.build().filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let shown = crate::paths::display(workspace, entry.path());
        let result = searcher.search_path(
            &matcher,
            entry.path(),
            UTF8(|line_no, line| {
                if count >= MAX_MATCHES {
                    truncated = true;
                    return Ok(false);
                }
                let line = line.trim_end_matches(['\n', '\r']);
                // A long line keeps its start, the marker on the same line.
                let end = cut::prefix_end(line, cut::char_budget(line, MAX_MATCH_LINE));
                let line = if end < line.len() {
                    let (len, left_out) = (line.len() as u64, (line.len() - end) as u64);
                    format!("{} {}", &line[..end], cut::marker(left_out, len, cut::Whole::Nowhere))
                } else {
                    line.to_owned()
                };
                let _ = writeln!(out, "{shown}:{line_no}:{line}");
                count += 1;
                Ok(true)
            }),
        );
        if let Err(err) = result {
            tracing::debug!("search skipped {shown}: {err}");
        }
        if truncated {
            break;
        }
    }
    if count == 0 {
        return Ok(format!("no matches for {pattern:?}"));
    }
    if truncated {
        let _ = write!(out, "[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_matches_and_honours_gitignore_and_glob() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/x.rs"), "fn needle() {}\n").unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "// nothing\nfn needle() {}\n").unwrap();
        std::fs::write(root.join("src/b.txt"), "needle\n").unwrap();
        let out = search(root, root, "needle", None).unwrap();
        assert!(out.contains("src/a.rs:2:fn needle() {}"), "{out}");
        assert!(out.contains("src/b.txt:1:needle"));
        assert!(!out.contains("ignored"));
        let only_rs = search(root, root, "needle", Some("*.rs")).unwrap();
        assert!(!only_rs.contains("b.txt"), "{only_rs}");
        assert!(search(root, root, "(", None).unwrap_err().contains("not a valid regular"));
        assert!(search(root, root, "zzz", None).unwrap().starts_with("no matches"));
    }

    #[test]
    fn results_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("many.txt"), "hit\n".repeat(500)).unwrap();
        let out = search(dir.path(), dir.path(), "hit", None).unwrap();
        assert_eq!(out.lines().filter(|l| l.contains(":hit")).count(), MAX_MATCHES);
        assert!(out.ends_with("narrow the pattern, path or glob]"));
    }

    #[test]
    fn a_long_line_keeps_its_start_and_says_how_much_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("long.txt"), format!("needle {}\n", "é".repeat(500)))
            .unwrap();
        let out = search(dir.path(), dir.path(), "needle", None).unwrap();
        let line = out.lines().find(|l| l.contains("needle")).unwrap();
        assert!(line.ends_with(" [… 414 of 1007 bytes cut …]"), "{line}");
    }
}
