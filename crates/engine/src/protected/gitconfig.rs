//! Git's config files, as far as the guard needs them: which keys a file sets, the value of
//! `core.hooksPath`, and a copy of the file with every key outside the allow-list of inert keys
//! removed ([`scrub`]).
//!
//! Git runs code from dozens of keys (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`,
//! `core.pager`, `alias.*`, `filter.*`, `diff.*.textconv`, `include.path`, …) and every git
//! release may add one, so the guard keeps what is known to be inert instead of removing what
//! is known to be dangerous. Invariant: a line the parser does not understand is removed, never
//! kept — an unknown syntax must not carry a key past the allow-list.

/// The keys a `.git` a command created may keep (docs/security.md): lower-case section and
/// name; `*` stands for any subsection (or, alone, any key of the section).
const ALLOWED: &[(&str, Option<&str>, &str)] = &[
    ("core", None, "repositoryformatversion"),
    ("core", None, "filemode"),
    ("core", None, "bare"),
    ("core", None, "logallrefupdates"),
    ("core", None, "ignorecase"),
    ("core", None, "precomposeunicode"),
    ("core", None, "symlinks"),
    ("remote", Some("*"), "url"),
    ("remote", Some("*"), "fetch"),
    ("branch", Some("*"), "*"),
    ("branch", None, "*"),
    ("user", None, "*"),
    ("init", None, "defaultbranch"),
    ("extensions", None, "*"),
];

/// Whether `key` (`section`, optional subsection, name) is one of the inert keys.
pub fn allowed(section: &str, subsection: Option<&str>, name: &str) -> bool {
    let (section, name) = (section.to_ascii_lowercase(), name.to_ascii_lowercase());
    ALLOWED.iter().any(|(s, sub, n)| {
        *s == section && sub.is_some() == subsection.is_some() && (*n == "*" || *n == name)
    })
}

/// One key a config file sets, as `section[.subsection].name`.
fn dotted(section: &str, subsection: Option<&str>, name: &str) -> String {
    match subsection {
        Some(sub) => format!("{section}.{sub}.{name}"),
        None => format!("{section}.{name}"),
    }
}

/// A section header: `[core]`, `[remote "origin"]`, the old `[branch.main]`; and whatever
/// follows the `]` on the same line.
fn header(line: &str) -> Option<(String, Option<String>, &str)> {
    let rest = line.trim_start().strip_prefix('[')?;
    // A subsection is quoted and may hold `]`; the header ends at the first `]` outside quotes.
    let mut in_quotes = false;
    let mut escaped = false;
    let mut end = None;
    for (i, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            ']' if !in_quotes => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let end = end?;
    let inside = rest[..end].trim();
    let after = &rest[end + 1..];
    if let Some((section, quoted)) = inside.split_once(char::is_whitespace) {
        let quoted = quoted.trim();
        let sub = quoted.strip_prefix('"')?.strip_suffix('"')?;
        let sub = sub.replace("\\\"", "\"").replace("\\\\", "\\");
        return valid_name(section).then(|| (section.to_ascii_lowercase(), Some(sub), after));
    }
    match inside.split_once('.') {
        // `[branch.main]`: the old form; the subsection is lower-cased by git.
        Some((section, sub)) => valid_name(section)
            .then(|| (section.to_ascii_lowercase(), Some(sub.to_ascii_lowercase()), after)),
        None => valid_name(inside).then(|| (inside.to_ascii_lowercase(), None, after)),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The key name of a variable line (`name = value` or a bare `name`), or `None` for a line
/// that is not one.
fn variable(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).unwrap_or(line.len());
    let name = &line[..end];
    let rest = line[end..].trim_start();
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && (rest.is_empty() || rest.starts_with('=') || rest.starts_with(['#', ';']));
    ok.then_some(name)
}

/// Whether a value line continues on the next one (an odd run of trailing backslashes outside
/// a comment).
fn continues(line: &str) -> bool {
    let trimmed = line.trim_end_matches(['\r', '\n']);
    let backslashes = trimmed.chars().rev().take_while(|c| *c == '\\').count();
    backslashes % 2 == 1
}

/// What [`scrub`] did: the text to keep and the keys it removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scrubbed {
    pub text: String,
    /// `section[.subsection].name` of each removed key (or `an unreadable line`).
    pub removed: Vec<String>,
}

/// `text` without the keys outside the allow-list (and without lines the parser does not
/// understand). Comments, blank lines and section headers stay.
pub fn scrub(text: &str) -> Scrubbed {
    let mut out = Scrubbed::default();
    let mut section: Option<(String, Option<String>)> = None;
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            out.text.push_str(line);
            continue;
        }
        let (key_part, keep_header) = match header(line) {
            Some((name, sub, after)) => {
                section = Some((name, sub));
                let after_trimmed = after.trim();
                if after_trimmed.is_empty()
                    || after_trimmed.starts_with('#')
                    || after_trimmed.starts_with(';')
                {
                    out.text.push_str(line);
                    continue;
                }
                // `[core] fsmonitor = x`: the header stays, the key is judged like any other.
                (after, true)
            }
            None => (line, false),
        };
        let name = variable(key_part);
        let keep = match (&section, name) {
            (Some((s, sub)), Some(name)) => allowed(s, sub.as_deref(), name),
            _ => false,
        };
        if keep_header {
            let (s, sub) = section.clone().unwrap_or_default();
            out.text.push_str(&match &sub {
                Some(sub) => {
                    format!("[{s} \"{}\"]\n", sub.replace('\\', "\\\\").replace('"', "\\\""))
                }
                None => format!("[{s}]\n"),
            });
        }
        let removed_name = match (&section, name) {
            (Some((s, sub)), Some(name)) => dotted(s, sub.as_deref(), &name.to_ascii_lowercase()),
            _ => "an unreadable line".to_owned(),
        };
        if keep && keep_header {
            out.text.push('\t');
            out.text.push_str(key_part.trim_start());
        } else if keep {
            out.text.push_str(key_part);
        } else if !out.removed.contains(&removed_name) {
            out.removed.push(removed_name);
        }
        // A value continued with a trailing backslash goes (or stays) with its key.
        let mut last = key_part;
        while continues(last) {
            let Some(next) = lines.next() else { break };
            if keep {
                out.text.push_str(next);
            }
            last = next;
        }
        if keep && !out.text.ends_with('\n') && !out.text.is_empty() {
            out.text.push('\n');
        }
    }
    out
}

/// The last value `text` sets for `section.name` (no subsection), unquoted; `Some("")` for a
/// bare key.
pub fn value_of(text: &str, section: &str, name: &str) -> Option<String> {
    let mut current: Option<(String, Option<String>)> = None;
    let mut found = None;
    for line in text.lines() {
        let line = match header(line) {
            Some((s, sub, after)) => {
                current = Some((s, sub));
                after
            }
            None => line,
        };
        let Some(key) = variable(line) else { continue };
        let in_section = matches!(&current, Some((s, None)) if s.eq_ignore_ascii_case(section));
        if in_section && key.eq_ignore_ascii_case(name) {
            let value = line.trim_start()[key.len()..].trim_start();
            let value = value.strip_prefix('=').unwrap_or("").trim();
            found = Some(unquote(value));
        }
    }
    found
}

/// A value without its comment and quotes (the common forms; escapes beyond `\"` and `\\` are
/// kept as written).
fn unquote(value: &str) -> String {
    let mut out = String::new();
    let mut in_quotes = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => in_quotes = !in_quotes,
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(match next {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
            }
            '#' | ';' if !in_quotes => break,
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_inert_keys_survive_a_scrub() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tfsmonitor = \"touch ~/canary; false\"\n\thooksPath = .evil\n\
                    [remote \"origin\"]\n\turl = https://example.com/r.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n\tuploadpack = evil\n\
                    [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\
                    [alias]\n\tst = !sh -c 'touch x'\n[include]\n\tpath = ../evil\n\
                    [user]\n\temail = a@b.c\n[filter \"x\"]\n\tclean = evil\n";
        let s = scrub(text);
        assert_eq!(
            s.removed,
            [
                "core.fsmonitor",
                "core.hookspath",
                "remote.origin.uploadpack",
                "alias.st",
                "include.path",
                "filter.x.clean"
            ]
        );
        assert!(s.text.contains("repositoryformatversion = 0"));
        assert!(s.text.contains("url = https://example.com/r.git"));
        assert!(s.text.contains("merge = refs/heads/main"));
        assert!(s.text.contains("email = a@b.c"));
        assert!(!s.text.contains("fsmonitor") && !s.text.contains("evil"), "{}", s.text);
        // Scrubbing again changes nothing.
        assert_eq!(scrub(&s.text).text, s.text);
        assert!(scrub(&s.text).removed.is_empty());
    }

    #[test]
    fn tricky_syntax_never_carries_a_key_through() {
        // A key on the header's line, upper case, a continued value, an old-style header,
        // a bare boolean, and a line of garbage.
        let text =
            "[core] fsmonitor = evil\n[CORE]\n\tFsMonitor = evil2\n[core]\n\tsshCommand = a \\\n\
                    b\n\tbare\n[core.x]\n\tpager = less\ngarbage line here\n";
        let s = scrub(text);
        assert!(s.removed.contains(&"core.fsmonitor".to_owned()), "{:?}", s.removed);
        assert!(s.removed.contains(&"core.sshcommand".to_owned()), "{:?}", s.removed);
        assert!(s.removed.contains(&"core.x.pager".to_owned()), "{:?}", s.removed);
        assert!(s.removed.contains(&"an unreadable line".to_owned()), "{:?}", s.removed);
        assert!(!s.text.to_lowercase().contains("evil"), "{}", s.text);
        assert!(!s.text.contains("garbage") && !s.text.contains("\nb\n"), "{}", s.text);
        assert!(s.text.contains("\tbare\n"), "{}", s.text);
    }

    #[test]
    fn hooks_path_is_read_from_its_section() {
        let text = "[core]\n\tbare = false\n\thooksPath = \".husky/_\" # husky\n[other]\n\
                    hooksPath = no\n";
        assert_eq!(value_of(text, "core", "hookspath").as_deref(), Some(".husky/_"));
        assert_eq!(value_of("[core]\n", "core", "hooksPath"), None);
        assert_eq!(value_of("[remote \"core\"]\nhooksPath = x\n", "core", "hooksPath"), None);
    }
}
