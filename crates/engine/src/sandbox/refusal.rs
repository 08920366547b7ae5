//! Which writes the sandbox refused, read from a failed command's output, so the model (and
//! the user, when offered to rerun the command unconfined) learns what it was kept from.
//!
//! Landlock itself reports nothing to the program's caller: a refused write is an `EACCES`
//! ("Permission denied"), and a link or rename it refuses an `EXDEV` ("Invalid cross-device
//! link"), which the program prints in its own words. So this is a careful reading, not a
//! record: lines that name one of those errors, the paths they mention (quoted, or words
//! starting with `/` or `~/`), resolved through symlinks, kept only when the path lies outside
//! every writable root *and* the user could write it without the sandbox (so a file the user
//! may not write anyway is never blamed on it). Pure apart from looking at the file system.

use std::path::{Component, Path, PathBuf};

use super::Rules;

/// How the errors a refused write causes are printed (C library strings, Rust's io::Error).
const SIGNS: [&str; 5] = [
    "Permission denied",
    "permission denied",
    "Invalid cross-device link",
    "os error 13",
    "os error 18",
];

/// At most this many paths are reported (a build that failed on one refused write can print
/// the same error for every file after it).
const MAX_PATHS: usize = 5;

/// The paths `output` says could not be written that the sandbox kept the command from:
/// outside every writable root of `rules` and writable for the user. `cwd` resolves relative
/// paths.
pub fn refused_writes(output: &str, cwd: &Path, rules: &Rules) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for line in output.lines().filter(|l| SIGNS.iter().any(|s| l.contains(s))) {
        for candidate in candidates(line) {
            let Some(real) = resolve(&candidate, cwd) else { continue };
            if rules.allows_write(&real) || !writable_unconfined(&real) || found.contains(&real) {
                continue;
            }
            found.push(real);
            if found.len() == MAX_PATHS {
                return found;
            }
        }
    }
    found
}

/// Whether `output` shows signs of a refused access even when no path could be read from it.
pub fn mentions_refusal(output: &str) -> bool {
    SIGNS.iter().any(|s| output.contains(s))
}

/// Whether `output` shows a write refused under a read-only `.git` of the command's
/// namespace: git (or anything else) saying "Read-only file system" (`EROFS`, "os error 30")
/// on a line that names a `.git`.
pub fn read_only_refusal(output: &str) -> bool {
    output.lines().any(|l| {
        (l.contains("Read-only file system") || l.contains("os error 30")) && l.contains(".git")
    })
}

/// Path-like pieces of one error line: quoted text, and words that start like a path.
fn candidates(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('‘', '’'), ('`', '\''), ('`', '`'), ('"', '"')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = &after[..end];
            if !quoted.is_empty() && !quoted.contains('\n') {
                out.push(quoted.to_owned());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    for word in line.split(|c: char| c.is_whitespace() || matches!(c, ':' | ',' | '(' | ')')) {
        let word = word.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | '‘' | '’' | '.'));
        let relative = word.contains('/') && !word.contains("://");
        if word.starts_with('/') || word.starts_with("~/") || relative {
            out.push(word.to_owned());
        }
    }
    out.retain(|c| c.starts_with('/') || c.starts_with("~/") || looks_relative(c));
    out
}

/// A quoted relative path (`'out/x.txt'`), not a sentence in quotes.
fn looks_relative(text: &str) -> bool {
    !text.contains(' ') && (text.contains('/') || text.contains('.'))
}

/// `candidate` made absolute and real: symlinks resolved as far as the path exists, so a link
/// out of the workspace is judged by where it leads.
fn resolve(candidate: &str, cwd: &Path) -> Option<PathBuf> {
    let path = match candidate.strip_prefix("~/") {
        Some(rest) => dirs::home_dir()?.join(rest),
        None if Path::new(candidate).is_absolute() => PathBuf::from(candidate),
        None => cwd.join(candidate),
    };
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    // The longest prefix that exists, made real, with the rest appended.
    let mut existing = normal.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut full = real;
            full.extend(rest.iter().rev());
            return Some(full);
        }
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
}

/// Whether the user could write `path` (or create it in its nearest existing directory)
/// without the sandbox: the kernel's own permission check, from this unconfined process.
fn writable_unconfined(path: &Path) -> bool {
    let mut probe = path;
    while !probe.exists() {
        match probe.parent() {
            Some(parent) => probe = parent,
            None => return false,
        }
    }
    rustix::fs::access(probe, rustix::fs::Access::WRITE_OK).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_git_write_is_told_from_other_read_only_file_systems() {
        let git = "fatal: Unable to create '/w/.git/index.lock': Read-only file system\n";
        assert!(read_only_refusal(git));
        assert!(read_only_refusal(
            "error: could not lock config file .git/config: Read-only file system"
        ));
        assert!(!read_only_refusal(
            "cp: cannot create regular file '/usr/x': Read-only file system"
        ));
        assert!(!read_only_refusal("nothing wrong"));
    }

    fn rules_for(dir: &Path) -> Rules {
        Rules { writable: vec![std::fs::canonicalize(dir).unwrap()], network: true }
    }

    #[test]
    fn paths_outside_the_writable_roots_are_read_from_common_error_lines() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let out = std::fs::canonicalize(outside.path()).unwrap();
        let rules = rules_for(ws.path());
        let lines = [
            format!("bash: line 1: {}/a.txt: Permission denied", out.display()),
            format!("touch: cannot touch '{}/b.txt': Permission denied", out.display()),
            format!("mkdir: cannot create directory ‘{}/c’: Permission denied", out.display()),
            format!("PermissionError: [Errno 13] Permission denied: '{}/d'", out.display()),
            format!("error: failed to open `{}/e` (os error 13)", out.display()),
        ];
        let found = refused_writes(&lines.join("\n"), ws.path(), &rules);
        let names: Vec<_> =
            found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["a.txt", "b.txt", "c", "d", "e"], "{found:?}");
    }

    #[test]
    fn writes_the_sandbox_allows_and_lines_without_an_error_are_not_blamed() {
        let ws = tempfile::tempdir().unwrap();
        let rules = rules_for(ws.path());
        let inside = format!("touch: cannot touch '{}/x': Permission denied", ws.path().display());
        assert!(refused_writes(&inside, ws.path(), &rules).is_empty());
        assert!(refused_writes("cp /etc/hosts /tmp/x: done", ws.path(), &rules).is_empty());
        assert!(mentions_refusal("ln: failed to create hard link 'x': Invalid cross-device link"));
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_judged_by_where_it_leads() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        let line = "bash: out/f.txt: Permission denied";
        let found = refused_writes(line, ws.path(), &rules_for(ws.path()));
        let expected = std::fs::canonicalize(outside.path()).unwrap().join("f.txt");
        assert_eq!(found, [expected]);
    }
}
