//! Custom slash commands (docs/extending.md, *Custom slash commands*): Markdown files under a
//! `commands/` folder, one command each, named by their path (`git/pr.md` is `/git:pr`).
//!
//! Owns finding them ([`scan`]) and filling in a body's placeholders ([`expand`]).
//! Invariants: a file is read through a bound ([`crate::bounded`]), so a repository's FIFO or
//! huge file costs nothing; a file that cannot be used (broken front matter, not a regular
//! file, too large, a name with a space) is one sentence naming it, and the others are still
//! found; arguments are split as a shell would split them but never expanded.

use std::path::{Path, PathBuf};

use codewhale_protocol::ExtensionSource;

use super::front_matter;
use crate::bounded::Bounded;

/// The largest command file read: a prompt, not a document.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// How deep subfolders are followed (`a/b/c/name.md`).
const MAX_DEPTH: usize = 4;
/// The most files one folder tree yields; the rest are named once.
const MAX_FILES: usize = 500;

/// One custom command, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// The name typed after `/`.
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    /// The model the one turn it starts runs on.
    pub model: Option<String>,
    /// The prompt, placeholders unfilled.
    pub body: String,
    pub path: PathBuf,
    pub source: ExtensionSource,
}

/// Every command under `dir` (a missing folder has none), sorted by name; what cannot be
/// used is said in `problems`.
pub fn scan(dir: &Path, source: ExtensionSource, problems: &mut Vec<String>) -> Vec<CustomCommand> {
    let mut files = Vec::new();
    walk(dir, Vec::new(), &mut files, problems);
    if files.len() > MAX_FILES {
        problems.push(format!(
            "{} holds more than {MAX_FILES} command files; only the first {MAX_FILES} are read",
            dir.display()
        ));
        files.truncate(MAX_FILES);
    }
    let mut found: Vec<CustomCommand> =
        files.into_iter().filter_map(|(name, path)| read(name, path, source, problems)).collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn walk(
    dir: &Path,
    prefix: Vec<String>,
    out: &mut Vec<(String, PathBuf)>,
    problems: &mut Vec<String>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() > MAX_FILES {
            return;
        }
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        // A link is followed to a regular file only (the bounded read checks); a folder is
        // entered only when it is one, so a link loop cannot trap the walk.
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            if prefix.len() + 1 < MAX_DEPTH {
                let mut deeper = prefix.clone();
                deeper.push(file_name);
                walk(&path, deeper, out, problems);
            }
            continue;
        }
        let Some(stem) = file_name.strip_suffix(".md") else { continue };
        if stem.is_empty() || stem.contains(char::is_whitespace) || stem.contains(':') {
            problems.push(format!(
                "{}: a command's file name cannot hold a space or a colon, so it cannot be typed \
                 after `/`; rename the file",
                path.display()
            ));
            continue;
        }
        let mut parts = prefix.clone();
        parts.push(stem.to_owned());
        out.push((parts.join(":"), path));
    }
}

fn read(
    name: String,
    path: PathBuf,
    source: ExtensionSource,
    problems: &mut Vec<String>,
) -> Option<CustomCommand> {
    let text = match crate::bounded::read(&path, MAX_COMMAND_BYTES) {
        Ok(Bounded::Read { cut: false, bytes }) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                problems.push(format!(
                    "{}: it is not UTF-8 text, so the command is not offered; save it as UTF-8",
                    path.display()
                ));
                return None;
            }
        },
        Ok(Bounded::Read { cut: true, .. }) => {
            problems.push(format!(
                "{}: it is larger than 64 KiB, too large for a command, so it is not offered; \
                 shorten it",
                path.display()
            ));
            return None;
        }
        Ok(Bounded::NotRegular(kind)) => {
            problems.push(crate::bounded::skipped_notice(&path, kind));
            return None;
        }
        Ok(Bounded::Missing) => return None,
        Err(e) => {
            problems.push(format!("cannot read {}: {e}; check its permissions", path.display()));
            return None;
        }
    };
    match front_matter::parse(&text) {
        Ok(parsed) => {
            let field = |k: &str| parsed.get(k).unwrap_or_default().to_owned();
            Some(CustomCommand {
                name,
                description: field("description"),
                argument_hint: field("argument-hint"),
                model: parsed.get("model").filter(|m| !m.is_empty()).map(str::to_owned),
                body: parsed.body,
                path,
                source,
            })
        }
        Err(bad) => {
            problems.push(format!(
                "{}:{}: bad front matter: {}; fix that line, so the command /{name} is offered",
                path.display(),
                bad.line,
                bad.reason
            ));
            None
        }
    }
}

/// `body` with `args` filled in: `$ARGUMENTS` is the text as typed, `$1`…`$9` its words split
/// as a shell would (quotes group, a backslash escapes; nothing is expanded), a missing one
/// empty. A body with no placeholder gets the arguments appended after a blank line.
pub fn expand(body: &str, args: &str) -> String {
    let args = args.trim();
    let has_placeholder =
        body.contains("$ARGUMENTS") || (1..=9).any(|i| body.contains(&format!("${i}")));
    if !has_placeholder {
        if args.is_empty() {
            return body.to_owned();
        }
        return format!("{}\n\n{args}", body.trim_end());
    }
    let words = split(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            rest = tail;
        } else if let Some(d) =
            after.chars().next().and_then(|c| c.to_digit(10)).filter(|d| *d >= 1)
        {
            out.push_str(words.get(d as usize - 1).map_or("", String::as_str));
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The words of `args` as a POSIX shell splits them, without any expansion: single quotes
/// keep everything, double quotes keep all but `\"` and `\\`, a backslash outside quotes
/// escapes the next character. An unclosed quote runs to the end.
pub fn split(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(n @ ('"' | '\\')) => word.push(n),
                            Some(n) => {
                                word.push('\\');
                                word.push(n);
                            }
                            None => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_fill_their_placeholders_once() {
        let body = "Fix issue #$1 ($2) — all: $ARGUMENTS; none: [$3] cost $ 5 $0";
        assert_eq!(
            expand(body, r#"123 "the login bug""#),
            r#"Fix issue #123 (the login bug) — all: 123 "the login bug"; none: [] cost $ 5 $0"#
        );
        // An argument holding a placeholder is not filled in again.
        assert_eq!(expand("say $1 and $2", "$2 x"), "say $2 and x");
    }

    #[test]
    fn a_body_without_placeholders_gets_the_arguments_after_a_blank_line() {
        assert_eq!(
            expand("Review the diff.\n", "focus on errors"),
            "Review the diff.\n\nfocus on errors"
        );
        assert_eq!(expand("Review the diff.\n", "  "), "Review the diff.\n");
    }

    #[test]
    fn words_split_as_a_shell_would_without_expansion() {
        assert_eq!(
            split(r#"a "b c" 'd $HOME' e\ f "g\"h""#),
            ["a", "b c", "d $HOME", "e f", "g\"h"]
        );
        assert_eq!(split("  "), Vec::<String>::new());
        assert_eq!(split("''"), [""]);
        assert_eq!(split("'open"), ["open"]);
    }

    #[test]
    fn folders_give_colon_names_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("git")).unwrap();
        std::fs::write(
            d.join("review.md"),
            "---\ndescription: Review\nargument-hint: [pr]\nmodel: m2\n---\nReview $1",
        )
        .unwrap();
        std::fs::write(d.join("git/pr.md"), "Open a PR").unwrap();
        std::fs::write(d.join("broken.md"), "---\nnot a field\n---\nx").unwrap();
        std::fs::write(d.join("two words.md"), "x").unwrap();
        std::fs::write(d.join("notes.txt"), "x").unwrap();
        let mut problems = Vec::new();
        let found = scan(d, ExtensionSource::Home, &mut problems);
        let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:pr", "review"]);
        assert_eq!(found[1].description, "Review");
        assert_eq!(found[1].argument_hint, "[pr]");
        assert_eq!(found[1].model.as_deref(), Some("m2"));
        assert_eq!(found[1].body, "Review $1");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("broken.md:2: bad front matter")),
            "{problems:?}"
        );
        assert!(problems.iter().any(|p| p.contains("two words.md")), "{problems:?}");
        assert!(scan(&d.join("missing"), ExtensionSource::Home, &mut problems).is_empty());
    }
}
