//! Redaction: secrets never reach the journal, a summary request or the log (docs/configuration.md,
//! *Workspace trust*, Trust).
//!
//! A [`Redactor`] replaces every secret it recognizes with a marker naming its kind and a short
//! fingerprint — `[REDACTED:openai-key:3f2a9c]` — so two different secrets stay
//! distinguishable and the same one always reads the same. It runs when text is written:
//! [`Redactor::redact_payload`] on every entry the session appends (user text, assistant text
//! and tool call arguments, tool output), on anchors when they are pinned, and on the debug
//! form of every event before it is logged. Requests are built from the journal, so the model
//! only ever reads the markers.
//!
//! What is caught: provider keys (OpenAI, Anthropic, DeepSeek, OpenRouter, Google), AWS access
//! and secret keys, private-key PEM blocks (GCP service-account keys among them), GitHub,
//! GitLab and Slack tokens, JWTs, `Authorization: Bearer` values, `NAME=value` lines whose name
//! says key, token, secret or password, the session's own API key wherever it appears — also
//! reversed and base64-encoded, as `rev` and `base64` print it — and the user's own patterns
//! from config. `docs/security.md` lists the rules and what is not caught.
//!
//! Invariants: bytes that must replay exactly are never edited — a signed thinking block that
//! holds a secret is dropped whole, and tool call ids and provider-opaque blocks are left
//! alone; redacting redacted text changes nothing.

use std::borrow::Cow;

use codewhale_journal::{Block, Payload, Text};
use regex::{Regex, RegexSet};
use sha2::{Digest, Sha256};

/// How a marker starts; `write_file`/`edit_file` refuse content holding one.
pub const MARKER_PREFIX: &str = "[REDACTED:";

/// One recognized kind of secret. Its own regex (which finds where the secret is) is compiled
/// on first use: the set of all rules decides whether a text holds any secret at all, and most
/// texts of a session hold none, so most rules are never compiled a second time.
struct Rule {
    kind: String,
    pattern: String,
    regex: std::sync::OnceLock<Option<Regex>>,
    /// The capture group holding the secret (0: the whole match).
    group: usize,
}

impl Rule {
    fn new(kind: &str, pattern: String, group: usize) -> Rule {
        Rule { kind: kind.to_owned(), pattern, regex: std::sync::OnceLock::new(), group }
    }

    /// A rule whose regex is compiled already (a configured pattern, checked when it is read).
    fn compiled(kind: &str, regex: Regex) -> Rule {
        let rule = Rule::new(kind, regex.as_str().to_owned(), 0);
        let _ = rule.regex.set(Some(regex));
        rule
    }

    /// The rule's regex. `None` only if a pattern the set accepted does not compile alone,
    /// which the tests rule out for the built-in ones; such a rule then finds nothing.
    fn regex(&self) -> Option<&Regex> {
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
const BUILT_IN: &[(&str, &str, usize)] = &[
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

/// A pattern from the user's configuration that is not a valid regular expression.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the redaction pattern {pattern:?} is not a valid regular expression: {reason}")]
pub struct BadPattern {
    pub pattern: String,
    pub reason: String,
}

/// Replaces secrets with markers.
#[derive(Debug, Clone)]
pub struct Redactor {
    rules: std::sync::Arc<Vec<Rule>>,
    any: std::sync::Arc<RegexSet>,
    /// Secrets known exactly (the session's own API key), matched literally.
    literals: Vec<String>,
    /// Other spellings of those secrets a command can print them in — reversed, base64 (at
    /// each of the three alignments, standard and URL-safe, of the key and of the reversed
    /// key) — each with the secret it stands for.
    forms: Vec<(String, String)>,
}

/// The spellings of `secret` a command can produce without knowing it (`rev`, `base64`, and
/// both): each matched literally, like the secret.
fn spellings(secret: &str) -> Vec<String> {
    use base64::Engine as _;
    let reversed: String = secret.chars().rev().collect();
    let mut out = vec![reversed.clone()];
    for text in [secret, reversed.as_str()] {
        let bytes = text.as_bytes();
        for offset in 0..3usize {
            // The characters that encode only bytes of `text`, whatever comes before or after.
            let start = (8 * offset).div_ceil(6);
            let end = 8 * (offset + bytes.len()) / 6;
            if end < start + 8 {
                continue;
            }
            let mut padded = vec![0u8; offset];
            padded.extend_from_slice(bytes);
            for engine in [
                base64::engine::general_purpose::STANDARD_NO_PAD,
                base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                let encoded = engine.encode(&padded);
                if let Some(core) = encoded.get(start..end) {
                    out.push(core.to_owned());
                    out.push(core.chars().rev().collect());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out.retain(|f| f != secret && f.len() >= 8);
    out
}

/// Whether `line` could be one line of wrapped base64 output (`base64` wraps at 76).
fn base64_line(line: &str) -> bool {
    line.len() >= 4
        && line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// The built-in rules and their set, compiled once per process: every redactor (the
/// session's, the event sink's, an import's) shares them instead of compiling ~2 ms of regexes
/// again.
type Compiled = (std::sync::Arc<Vec<Rule>>, std::sync::Arc<RegexSet>);

static COMPILED: std::sync::OnceLock<Result<Compiled, BadPattern>> = std::sync::OnceLock::new();

fn built_in() -> Result<&'static Compiled, BadPattern> {
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

/// Whether `text` holds something the built-in patterns take for a secret (an API key, a
/// token, a private key): front ends keep such text out of files of their own, such as the
/// prompt history.
pub fn holds_secret(text: &str) -> bool {
    matches!(Redactor::default().redact(text), Cow::Owned(_))
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(&[], &[]).unwrap_or_else(|_| Redactor {
            rules: Default::default(),
            any: std::sync::Arc::new(RegexSet::empty()),
            literals: Vec::new(),
            forms: Vec::new(),
        })
    }
}

impl Redactor {
    /// The built-in rules, `patterns` from the configuration (kind `custom`), and `literals`
    /// (exact secrets such as the API key in use; shorter than 8 bytes are ignored).
    pub fn new(patterns: &[String], literals: &[String]) -> Result<Redactor, BadPattern> {
        let (built_in, built_in_set) = built_in()?;
        let literals: Vec<String> =
            literals.iter().map(|l| l.trim().to_owned()).filter(|l| l.len() >= 8).collect();
        let forms = literals
            .iter()
            .flat_map(|l| spellings(l).into_iter().map(move |f| (f, l.clone())))
            .collect();
        if patterns.is_empty() {
            return Ok(Redactor {
                rules: built_in.clone(),
                any: built_in_set.clone(),
                literals,
                forms,
            });
        }
        let mut rules = Vec::with_capacity(BUILT_IN.len() + patterns.len());
        rules.extend(built_in.iter().map(|r| Rule::new(&r.kind, r.pattern.clone(), r.group)));
        for pattern in patterns {
            let regex = Regex::new(pattern)
                .map_err(|e| BadPattern { pattern: pattern.clone(), reason: e.to_string() })?;
            rules.push(Rule::compiled("custom", regex));
        }
        let any = RegexSet::new(rules.iter().map(|r| r.pattern.as_str()))
            .map_err(|e| BadPattern { pattern: patterns.join(" | "), reason: e.to_string() })?;
        Ok(Redactor {
            rules: std::sync::Arc::new(rules),
            any: std::sync::Arc::new(any),
            literals,
            forms,
        })
    }

    /// `text` with every secret replaced by its marker; borrowed when nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for literal in &self.literals {
            if out.contains(literal.as_str()) {
                let marker = marker("api-key", literal);
                out = Cow::Owned(out.replace(literal.as_str(), &marker));
            }
        }
        for (form, literal) in &self.forms {
            if out.contains(form.as_str()) {
                let marker = marker("api-key", literal);
                out = Cow::Owned(out.replace(form.as_str(), &marker));
            }
        }
        if !self.forms.is_empty() && out.contains('\n') {
            if let Some(unwrapped) = self.redact_wrapped(&out) {
                out = Cow::Owned(unwrapped);
            }
        }
        let matched: Vec<usize> = self.any.matches(&out).into_iter().collect();
        for i in matched {
            let rule = &self.rules[i];
            let Some(regex) = rule.regex() else { continue };
            let replaced = replace_group(regex, &out, rule.group, &rule.kind);
            if let Cow::Owned(s) = replaced {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// Base64 output wrapped over several lines (`base64` wraps at 76 columns) that holds the
    /// key once its lines are joined: the whole run of lines is replaced by the marker. Nothing
    /// is allocated unless such a run is found.
    fn redact_wrapped(&self, text: &str) -> Option<String> {
        // Byte ranges of runs of two or more whole lines that could be base64, and the key
        // each holds.
        let mut hits: Vec<(usize, usize, &str)> = Vec::new();
        let mut run: Option<(usize, usize, usize)> = None; // start, end, lines
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let bare = line.trim_end_matches(['\n', '\r']);
            let end = offset + bare.len();
            if base64_line(bare) {
                run = Some(match run {
                    Some((start, _, n)) => (start, end, n + 1),
                    None => (offset, end, 1),
                });
            } else if let Some(found) = run.take() {
                self.wrapped_hit(text, found, &mut hits);
            }
            offset += line.len();
        }
        if let Some(found) = run.take() {
            self.wrapped_hit(text, found, &mut hits);
        }
        if hits.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (start, end, literal) in hits {
            out.push_str(&text[last..start]);
            out.push_str(&marker("api-key", literal));
            last = end;
        }
        out.push_str(&text[last..]);
        Some(out)
    }

    /// Records the run `(start, end, lines)` of `text` when its lines, joined, hold a key.
    fn wrapped_hit<'a>(
        &'a self,
        text: &str,
        (start, end, lines): (usize, usize, usize),
        hits: &mut Vec<(usize, usize, &'a str)>,
    ) {
        if lines < 2 {
            return;
        }
        let joined: String =
            text[start..end].chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
        if let Some((_, literal)) = self.forms.iter().find(|(f, _)| joined.contains(f.as_str())) {
            hits.push((start, end, literal.as_str()));
        }
    }

    /// Whether `text` holds a secret.
    pub fn finds_secret(&self, text: &str) -> bool {
        matches!(self.redact(text), Cow::Owned(_))
    }

    /// Redacts every text of a payload about to be journaled. Signed thinking that holds a
    /// secret is dropped whole (its bytes must replay exactly or not at all); call ids and
    /// opaque blocks are left alone.
    pub fn redact_payload(&self, payload: &mut Payload) {
        match payload {
            Payload::User(u) => self.redact_blocks(&mut u.content),
            Payload::Assistant(a) => self.redact_blocks(&mut a.content),
            Payload::ToolResult(r) => {
                if let Cow::Owned(s) = self.redact(&r.content) {
                    r.content = Text::from(s);
                }
                if let Some(blocks) = &mut r.content_blocks {
                    self.redact_blocks(blocks);
                }
                if let Some(reason) = &mut r.reason {
                    if let Cow::Owned(t) = self.redact(reason) {
                        *reason = t;
                    }
                }
            }
            Payload::System(s) => {
                if let Cow::Owned(t) = self.redact(&s.text) {
                    s.text = t;
                }
            }
            Payload::Side(s) => {
                for text in [&mut s.question, &mut s.answer] {
                    if let Cow::Owned(t) = self.redact(text) {
                        *text = t;
                    }
                }
            }
            Payload::Compaction(c) => {
                for text in [Some(&mut c.note), c.summary.as_mut(), c.anchors.as_mut()]
                    .into_iter()
                    .flatten()
                {
                    if let Cow::Owned(t) = self.redact(text) {
                        *text = t;
                    }
                }
            }
            _ => {}
        }
    }

    fn redact_blocks(&self, blocks: &mut Vec<Block>) {
        blocks.retain_mut(|block| match block {
            Block::Text(t) => {
                if let Cow::Owned(s) = self.redact(&t.text) {
                    t.text = s;
                }
                true
            }
            Block::ToolUse(call) => {
                self.redact_json(&mut call.input);
                true
            }
            Block::Thinking(t) if t.signature.is_some() => !self.finds_secret(&t.thinking),
            Block::Thinking(t) => {
                if let Cow::Owned(s) = self.redact(&t.thinking) {
                    t.thinking = s;
                }
                true
            }
            Block::Image(image) => {
                if let Cow::Owned(s) = self.redact(&image.name) {
                    image.name = s;
                }
                true
            }
            Block::Opaque(_) => true,
        });
    }

    fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

/// `pattern` with every `\b` made an ASCII word boundary.
fn ascii_word_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

/// Whether `text` holds a redaction marker (content a tool must not write over a real file).
pub fn holds_marker(text: &str) -> bool {
    text.match_indices(MARKER_PREFIX).any(|(i, _)| {
        let rest = &text[i + MARKER_PREFIX.len()..];
        let Some(end) = rest.find(']') else { return false };
        let inner = &rest[..end];
        let Some((kind, fp)) = inner.rsplit_once(':') else { return false };
        !kind.is_empty()
            && kind.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && fp.len() == 6
            && fp.chars().all(|c| c.is_ascii_hexdigit())
    })
}

/// The marker of `secret`: its kind and the first six hex digits of its SHA-256.
fn marker(kind: &str, secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    let fp: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
    format!("{MARKER_PREFIX}{kind}:{fp}]")
}

/// Replaces capture `group` of every match with the marker of what it captured.
fn replace_group<'a>(regex: &Regex, text: &'a str, group: usize, kind: &str) -> Cow<'a, str> {
    let mut out = String::new();
    let mut last = 0;
    for caps in regex.captures_iter(text) {
        let Some(m) = caps.get(group) else { continue };
        if text[m.start()..].starts_with(MARKER_PREFIX) {
            continue;
        }
        out.push_str(&text[last..m.start()]);
        out.push_str(&marker(kind, m.as_str()));
        last = m.end();
    }
    if last == 0 && out.is_empty() {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests;
