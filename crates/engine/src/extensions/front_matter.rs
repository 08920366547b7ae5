//! Front matter: the `---`-fenced `key: value` block that opens a custom command's or a
//! skill's Markdown file, as Claude Code writes it.
//!
//! Only the flat subset those files use is read: one `key: value` per line, a value bare or in
//! single or double quotes, `#` comments and blank lines. Keys Codewhale does not use
//! (`allowed-tools`, say) are kept and ignored, so a file written for another tool works here.
//! Invariant: a line that is not `key: value` is an error naming the file's line (1-based),
//! never a silent guess.

/// A file split into its front matter and its body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// The keys and values, in file order.
    pub fields: Vec<(String, String)>,
    /// Everything after the closing `---` (or the whole file when it has no front matter).
    pub body: String,
}

impl Parsed {
    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// What is wrong with a front matter, and on which line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub reason: String,
}

/// Splits `text` into front matter and body.
pub fn parse(text: &str) -> Result<Parsed, BadLine> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else { return Ok(Parsed::default()) };
    if first.trim_end() != "---" {
        return Ok(Parsed { fields: Vec::new(), body: text.to_owned() });
    }
    let mut fields = Vec::new();
    let mut consumed = first.len();
    for (i, raw) in lines.enumerate() {
        let line_no = i + 2;
        consumed += raw.len();
        let line = raw.trim_end();
        if line == "---" {
            let body = text[consumed..].trim_start_matches(['\n', '\r']).to_owned();
            return Ok(Parsed { fields, body });
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(BadLine {
                line: line_no,
                reason: format!("`{trimmed}` is not `key: value`"),
            });
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(BadLine { line: line_no, reason: format!("`{key}` is not a key") });
        }
        let value = unquote(value.trim()).map_err(|reason| BadLine { line: line_no, reason })?;
        fields.push((key.to_owned(), value));
    }
    Err(BadLine {
        line: 1,
        reason: "the front matter opened with `---` is never closed by a `---` line".to_owned(),
    })
}

fn unquote(value: &str) -> Result<String, String> {
    for q in ['"', '\''] {
        if let Some(rest) = value.strip_prefix(q) {
            return match rest.strip_suffix(q) {
                Some(inner) if q == '"' => Ok(inner.replace("\\\"", "\"").replace("\\\\", "\\")),
                Some(inner) => Ok(inner.replace("''", "'")),
                None => Err(format!("the quote that opens {value} is never closed")),
            };
        }
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_body_are_split() {
        let p = parse(
            "---\ndescription: Review a PR\nargument-hint: \"[pr] [focus]\"\n# note\n\
             allowed-tools: Bash(git:*)\nmodel: 'gpt-x'\n---\n\nBody $ARGUMENTS\n",
        )
        .unwrap();
        assert_eq!(p.get("description"), Some("Review a PR"));
        assert_eq!(p.get("argument-hint"), Some("[pr] [focus]"));
        assert_eq!(p.get("model"), Some("gpt-x"));
        assert_eq!(p.get("allowed-tools"), Some("Bash(git:*)"));
        assert_eq!(p.body, "Body $ARGUMENTS\n");
    }

    #[test]
    fn no_front_matter_is_all_body() {
        assert_eq!(parse("Just do it.\n").unwrap().body, "Just do it.\n");
        assert_eq!(parse("").unwrap(), Parsed::default());
    }

    #[test]
    fn a_broken_front_matter_names_its_line() {
        let e = parse("---\ndescription: ok\nthis line is wrong\n---\nbody").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.reason.contains("not `key: value`"), "{}", e.reason);
        assert_eq!(parse("---\ndescription: \"open\n---\n").unwrap_err().line, 2);
        assert_eq!(parse("---\ndescription: x\n").unwrap_err().line, 1);
    }
}
