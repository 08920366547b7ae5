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
//!
//! Here: the redactor and its markers, and the session key's other spellings; the rules that
//! recognize secrets are in `rules`, which texts of a payload are redacted in `payload`.

use std::borrow::Cow;

use regex::{Regex, RegexSet};
use sha2::{Digest, Sha256};

mod payload;
mod rules;

use rules::{built_in, Rule, BUILT_IN};
pub use rules::{check_pattern, warm_up};

/// How a marker starts; `write_file`/`edit_file` refuse content holding one.
pub const MARKER_PREFIX: &str = "[REDACTED:";

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
