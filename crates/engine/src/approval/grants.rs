//! "Always" grants: what the user allowed for the rest of the session, and exactly what each
//! grant covers.
//!
//! A grant covers one exact shell command, the shell commands that start with one program and
//! subcommand (`cargo test …`), or writes and edits inside the workspace. A shell command made
//! of several parts (`;`, `&&`, `||`, pipes) is covered only if every part is; one with a
//! redirection, a command substitution, a subshell or a heredoc is covered only by an exact
//! grant of that very command, since what it writes or runs cannot be read from its words. No
//! grant covers a command that names Codewhale's own configuration or trust files. Pure
//! functions: command text in, verdict out.

pub use codewhale_protocol::Grant;

/// Programs that run other commands given as arguments: a prefix of them would cover anything.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "su", "env", "eval", "exec", "xargs", "nohup", "time", "timeout", "nice",
    "watch", "command", "builtin", "bash", "sh", "zsh", "fish", "dash", "ksh", "busybox", "ssh",
];

/// Programs whose arguments are files or text, never subcommands: a prefix of them means
/// nothing (`echo one …`), so only the exact command is offered.
const NO_SUBCOMMANDS: &[&str] = &[
    "echo", "printf", "cat", "touch", "rm", "rmdir", "cp", "mv", "ln", "ls", "mkdir", "chmod",
    "chown", "head", "tail", "grep", "rg", "sed", "awk", "find", "wc", "sort", "uniq", "diff",
    "tee", "curl", "wget", "cd", "test", "true", "false", "sleep", "kill", "less", "more",
];

/// The grant "commands like this one" would be: the program and its subcommand (`cargo test`,
/// `git commit`, `npm run`), when the command is one simple command, the second word is a
/// subcommand (a lowercase word — not a flag, a file, an assignment or a quoted string) and the
/// program neither runs other commands nor takes files.
pub fn prefix_of(command: &str) -> Option<Vec<String>> {
    let parts = split(command)?;
    let [words] = parts.as_slice() else { return None };
    let (program, sub) = (words.first()?, words.get(1)?);
    let is_program = !program.is_empty()
        && program.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    let is_subcommand = sub.starts_with(|c: char| c.is_ascii_lowercase())
        && sub.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let excluded =
        WRAPPERS.contains(&program.as_str()) || NO_SUBCOMMANDS.contains(&program.as_str());
    (is_program && is_subcommand && !excluded).then(|| vec![program.clone(), sub.clone()])
}

/// Whether `grants` cover the shell command `command`.
pub fn covers_command(grants: &[Grant], command: &str) -> bool {
    let command = command.trim();
    if grants.iter().any(|g| matches!(g, Grant::Command(c) if c.trim() == command)) {
        return true;
    }
    let Some(parts) = split(command) else { return false };
    !parts.is_empty()
        && parts.iter().all(|words| {
            grants.iter().any(|g| match g {
                Grant::Command(c) => split(c).is_some_and(|p| p.len() == 1 && p[0] == *words),
                Grant::Prefix(prefix) => words.starts_with(prefix),
                Grant::Edits | Grant::Tool { .. } | Grant::Host(_) => false,
            })
        })
}

/// The simple commands of `command`, each as its words (quotes removed); `None` when the
/// command has a redirection, a substitution, a subshell, a heredoc, a background `&` or an
/// unclosed quote — anything whose effect its words do not show.
pub fn split(command: &str) -> Option<Vec<Vec<String>>> {
    let mut parts: Vec<Vec<String>> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    let end_part = |words: &mut Vec<String>, parts: &mut Vec<Vec<String>>| {
        if !words.is_empty() {
            parts.push(std::mem::take(words));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => word.push(other),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        '`' => return None,
                        '$' if chars.peek() == Some(&'(') => return None,
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next()? {
                    '\n' => {}
                    other => word.push(other),
                }
            }
            '`' | '<' | '>' | '(' | ')' | '{' | '}' => return None,
            '$' if chars.peek() == Some(&'(') => return None,
            ';' | '\n' => {
                end_word(&mut word, &mut in_word, &mut words);
                end_part(&mut words, &mut parts);
            }
            '|' => {
                end_word(&mut word, &mut in_word, &mut words);
                end_part(&mut words, &mut parts);
                if matches!(chars.peek(), Some('|') | Some('&')) {
                    chars.next();
                }
            }
            '&' => {
                if chars.peek() != Some(&'&') {
                    return None;
                }
                chars.next();
                end_word(&mut word, &mut in_word, &mut words);
                end_part(&mut words, &mut parts);
            }
            c if c.is_whitespace() => end_word(&mut word, &mut in_word, &mut words),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words);
    end_part(&mut words, &mut parts);
    Some(parts)
}

/// Whether the command text names one of Codewhale's own settings files: no grant covers it.
pub fn names_protected(command: &str, home: Option<&std::path::Path>) -> bool {
    let names_home = home
        .map(|h| h.display().to_string())
        .filter(|h| !h.is_empty())
        .is_some_and(|h| command.contains(&h));
    names_home
        || command.contains(".codewhale/config.toml")
        || command.contains("trust.json")
        || command.contains(".codewhale/")
            && (command.contains("config") || command.contains("trust"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(parts: &[&[&str]]) -> Vec<Vec<String>> {
        parts.iter().map(|p| p.iter().map(|w| (*w).to_owned()).collect()).collect()
    }

    #[test]
    fn commands_split_into_parts_and_opaque_ones_are_refused() {
        assert_eq!(split("echo one"), Some(words(&[&["echo", "one"]])));
        assert_eq!(
            split("cargo test && cargo clippy -q; ls | wc -l"),
            Some(words(&[&["cargo", "test"], &["cargo", "clippy", "-q"], &["ls"], &["wc", "-l"]]))
        );
        assert_eq!(split("git commit -m 'a; b'"), Some(words(&[&["git", "commit", "-m", "a; b"]])));
        for opaque in [
            "echo hi > out.txt",
            "cat < in",
            "echo $(whoami)",
            "echo `id`",
            "(cd x && ls)",
            "sleep 1 &",
            "echo \"$(id)\"",
            "echo 'unclosed",
            "cat <<EOF",
        ] {
            assert_eq!(split(opaque), None, "{opaque}");
        }
    }

    #[test]
    fn an_exact_grant_covers_only_that_command() {
        let grants = [Grant::Command("echo one".into())];
        assert!(covers_command(&grants, "echo one"));
        assert!(covers_command(&grants, "  echo one "));
        assert!(!covers_command(&grants, "echo two"));
        assert!(!covers_command(&grants, "echo one; touch x"));
        assert!(!covers_command(&grants, "echo one > x"));
        // Whatever it is, the very command the user allowed is allowed again.
        let odd = [Grant::Command("echo $(date) > log".into())];
        assert!(covers_command(&odd, "echo $(date) > log"));
    }

    #[test]
    fn a_prefix_grant_covers_every_part_or_nothing() {
        let grants = [Grant::Prefix(vec!["cargo".into(), "test".into()])];
        assert!(covers_command(&grants, "cargo test --all"));
        assert!(covers_command(&grants, "cargo test -p a && cargo test -p b"));
        assert!(!covers_command(&grants, "cargo test && rm -rf target"));
        assert!(!covers_command(&grants, "cargo test > log.txt"));
        assert!(!covers_command(&grants, "cargo testing"));
        assert!(!covers_command(&grants, "cargo"));
        let both = [grants[0].clone(), Grant::Command("rm -rf target".into())];
        assert!(covers_command(&both, "cargo test && rm -rf target"));
    }

    #[test]
    fn prefixes_are_a_program_and_a_subcommand() {
        assert_eq!(prefix_of("cargo test --all"), Some(vec!["cargo".into(), "test".into()]));
        assert_eq!(prefix_of("git commit -m 'x'"), Some(vec!["git".into(), "commit".into()]));
        for none in [
            "ls -la",
            "echo",
            "bash -c 'rm -rf /'",
            "sudo apt install x",
            "env FOO=1 make",
            "FOO=1 make test",
            "./run.sh test",
            "echo one",
            "touch allowed.txt",
            "python script.py",
            "cargo test && cargo build",
            "make \"$TARGET\"",
        ] {
            assert_eq!(prefix_of(none), None, "{none}");
        }
    }

    #[test]
    fn codewhale_settings_are_never_covered() {
        let home = std::path::Path::new("/home/u/.codewhale");
        assert!(names_protected("echo x >> /home/u/.codewhale/config.toml", Some(home)));
        assert!(names_protected("cp x .codewhale/config.toml", None));
        assert!(names_protected("rm ~/.codewhale/trust.json", None));
        assert!(!names_protected("cargo test", Some(home)));
    }
}
