//! The rules that recognize secrets: the built-in ones (compiled once per process, on first
//! use or by [`warm_up`]), a configured pattern's check before it is used, and each rule's own
//! regex, compiled when a text first needs it.
//!
//! Invariants: the built-in patterns use ASCII word boundaries (a Unicode `\b` makes the
//! matcher ~50x slower on non-ASCII text); a configured pattern that matches empty text or
//! much of an ordinary paragraph is refused, never used.

use regex::{Regex, RegexSet};

use super::BadPattern;

/// One recognized kind of secret. Its own regex (which finds where the secret is) is compiled
/// on first use: the set of all rules decides whether a text holds any secret at all, and most
/// texts of a session hold none, so most rules are never compiled a second time.
pub(super) struct Rule {
    pub(super) kind: String,
    pub(super) pattern: String,
    regex: std::sync::OnceLock<Option<Regex>>,
    /// The capture group holding the secret (0: the whole match).
    pub(super) group: usize,
}

impl Rule {
    pub(super) fn new(kind: &str, pattern: String, group: usize) -> Rule {
        Rule { kind: kind.to_owned(), pattern, regex: std::sync::OnceLock::new(), group }
    }

    /// A rule whose regex is compiled already (a configured pattern, checked when it is read).
    pub(super) fn compiled(kind: &str, regex: Regex) -> Rule {
        let rule = Rule::new(kind, regex.as_str().to_owned(), 0);
        let _ = rule.regex.set(Some(regex));
        rule
    }

    /// The rule's regex. `None` only if a pattern the set accepted does not compile alone,
    /// which the tests rule out for the built-in ones; such a rule then finds nothing.
    pub(super) fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| match Regex::new(&self.pattern) {
                Ok(regex) => Some(regex),
                Err(e) => {
                    tracing::warn!(kind = %self.kind, "a redaction rule does not compile: {e}");
                    None
                }
            })
            .as_ref()
    }
}

/// The built-in rules: (kind, pattern, capture group of the secret). More specific patterns
/// come first, so an Anthropic key is named as one rather than as an OpenAI-style key.
///
/// The line rules (`secret`) look at a line's content after the prefix a tool puts before
/// each line of a file: `read_file`'s (and `cat -n`'s) gutter of right-aligned numbers and a
/// tab (`    12\t`, `  3.2\t` for a piece of a long line), and `search`'s (and `grep -n`'s)
/// `path:line:`. Without that, a `.env` read through a tool would pass where `cat` is caught.
pub(super) const BUILT_IN: &[(&str, &str, usize)] = &[
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)-----END [A-Z0-9 ]*PRIVATE KEY-----",
        0,
    ),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
    ("openrouter-key", r"\bsk-or-(?:v1-)?[A-Za-z0-9]{32,}", 0),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
    ("google-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    ("aws-access-key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b", 0),
    (
        "aws-secret-key",
        r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        1,
    ),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b", 0),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}", 0),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),
    ("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{16,})", 1),
    (
        "secret",
        r#"(?m)^(?:[ \t]*[0-9]+(?:\.[0-9]+)?\t|[^\n]*?:[0-9]+:)?[ \t]*(?:export[ \t]+)?["']?[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)[A-Z0-9_]*["']?[ \t]*[=:][ \t]*["']?([^\s"'$<{%()][^\s"'()]{5,})["']?[ \t]*,?[ \t]*$"#,
        1,
    ),
    (
        "secret",
        r#"(?m)^(?:[ \t]*[0-9]+(?:\.[0-9]+)?\t|[^\n]*?:[0-9]+:)?[ \t]*["']?(?:[a-z0-9]+[_.\-])*(?:password|passwd|passphrase|secret|api[_\-]?key|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|client[_\-]?secret|secret[_\-]?key|private[_\-]?key)["']?[ \t]*[=:][ \t]*["']?([^\s"'$<{%()][^\s"'()]{5,})["']?[ \t]*,?[ \t]*$"#,
        1,
    ),
];

/// An ordinary paragraph of a coding session (prose, code, a command, a path, numbers), holding
/// no secret: a configured pattern that matches much of it would redact the conversation
/// itself.
const ORDINARY_TEXT: &str = "The build failed because the test in src/parser.rs expects 42 \
tokens but the lexer now returns 43. I changed `fn next_token(&mut self) -> Option<Token>` to \
skip the trailing newline, then ran `cargo test -p parser -- --nocapture` again; all 118 tests \
pass. Next, update the README (section \"Usage\") and bump the version to 1.4.2 on Monday, \
2024-05-06. See https://example.com/docs/lexer.html for the grammar.";

/// The largest share of [`ORDINARY_TEXT`] a configured pattern may match (one fifth).
const MAX_ORDINARY_SHARE: f64 = 0.2;

/// Checks a pattern from a config file before it is used: it must be a regular expression,
/// never match empty text (a marker would be put between every two characters) and match at
/// most a fifth of an ordinary paragraph. The error is a phrase naming the pattern.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    let regex = Regex::new(pattern).map_err(|e| {
        format!("the redaction pattern {pattern:?} is not a valid regular expression: {e}")
    })?;
    if regex.find_iter(ORDINARY_TEXT).any(|m| m.is_empty()) || regex.is_match("") {
        return Err(format!(
            "the redaction pattern {pattern:?} matches empty text, so it would put a marker \
             between every two characters of the conversation; make it match the secret itself"
        ));
    }
    let matched: usize = regex.find_iter(ORDINARY_TEXT).map(|m| m.as_str().chars().count()).sum();
    let share = matched as f64 / ORDINARY_TEXT.chars().count() as f64;
    if share > MAX_ORDINARY_SHARE {
        return Err(format!(
            "the redaction pattern {pattern:?} matches {:.0}% of an ordinary paragraph, so it \
             would redact the conversation itself; make it match only the shape of the secret",
            share * 100.0
        ));
    }
    Ok(())
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// The built-in rules and their set, compiled once per process: every redactor (the
/// session's, the event sink's, an import's) shares them instead of compiling ~2 ms of regexes
/// again.
pub(super) type Compiled = (std::sync::Arc<Vec<Rule>>, std::sync::Arc<RegexSet>);

static COMPILED: std::sync::OnceLock<Result<Compiled, BadPattern>> = std::sync::OnceLock::new();

pub(super) fn built_in() -> Result<&'static Compiled, BadPattern> {
    COMPILED.get_or_init(compile_built_in).as_ref().map_err(Clone::clone)
}

/// Starts compiling the built-in rules on a background thread, so a command that redacts its
/// first text a few milliseconds later (every session does, on its first append) finds them
/// ready instead of compiling them then. Cheap and idempotent.
pub fn warm_up() {
    if COMPILED.get().is_some() {
        return;
    }
    let spawned = std::thread::Builder::new().name("redaction-warm-up".into()).spawn(|| {
        let _ = built_in();
    });
    if let Err(err) = spawned {
        tracing::debug!("could not start the redaction warm-up thread: {err}");
    }
}

fn compile_built_in() -> Result<Compiled, BadPattern> {
    // Word boundaries in ASCII: every secret these rules know is ASCII, and a Unicode `\b`
    // makes the lazy DFA give up on any non-ASCII text, leaving a matcher that is ~50x slower
    // (100 MB of tool output took 20 s instead of well under one).
    let rules: Vec<Rule> = BUILT_IN
        .iter()
        .map(|(kind, pattern, group)| Rule::new(kind, ascii_word_boundaries(pattern), *group))
        .collect();
    let any = RegexSet::new(rules.iter().map(|r| r.pattern.as_str())).map_err(|e| BadPattern {
        pattern: "(built-in rules)".to_owned(),
        reason: e.to_string(),
    })?;
    Ok((std::sync::Arc::new(rules), std::sync::Arc::new(any)))
}

/// `pattern` with every `\b` made an ASCII word boundary.
fn ascii_word_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}
