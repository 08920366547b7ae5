//! Finding the sessions Claude Code and Codex stored for a workspace (`import --from`).
//!
//! - Claude Code: `<root>/projects/<encoded workspace>/*.jsonl`, where the root is
//!   `$CLAUDE_CONFIG_DIR` or `~/.claude`, and also `~/.config/claude`. The directory name is the
//!   workspace path with every character outside `[A-Za-z0-9]` replaced by `-` (one per UTF-16
//!   unit, as Claude Code's JavaScript does), cut to 200 characters plus a hash suffix when
//!   longer. That encoding is lossy, so a file is listed only when the `cwd` its lines record
//!   (if any) is the workspace. Sub-agent files (`agent-*.jsonl`) are not sessions.
//! - Codex: `<root>/sessions/**/rollout-*.jsonl` and `<root>/archived_sessions/*.jsonl`, where
//!   the root is `$CODEX_HOME` or `~/.codex`; a file is listed when its `session_meta` (or
//!   first `turn_context`) names the workspace as `cwd`.
//!
//! Only the first lines of each file are read (at most [`PEEK_BYTES`]). Candidates are newest
//! first by modification time.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::codex::is_injected;
use crate::report::Tool;

/// How much of a file is read to find its workspace and first prompt.
pub const PEEK_BYTES: u64 = 1 << 20;

/// Longest first prompt shown.
const PROMPT_CHARS: usize = 100;

/// One session another tool stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub tool: Tool,
    pub path: PathBuf,
    pub size: u64,
    pub modified: SystemTime,
    /// The first line of the first prompt typed, shortened, when one was found early enough.
    pub first_prompt: Option<String>,
}

/// Where to look: the roots the environment names.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    pub claude: Vec<PathBuf>,
    pub codex: Option<PathBuf>,
}

impl Roots {
    /// The roots of this process's environment (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, home).
    pub fn from_env() -> Roots {
        let home = dirs::home_dir();
        let mut claude = Vec::new();
        match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => claude.push(PathBuf::from(dir)),
            None => claude.extend(home.as_ref().map(|h| h.join(".claude"))),
        }
        claude.extend(home.as_ref().map(|h| h.join(".config").join("claude")));
        claude.dedup();
        let codex = std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".codex")));
        Roots { claude, codex }
    }
}

/// Claude Code's project directory name for `workspace`.
pub fn claude_dir_name(workspace: &str) -> String {
    let mut out = String::with_capacity(workspace.len());
    for c in workspace.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    out
}

/// The sessions `tool` stored for `workspace`, newest first.
pub fn candidates(tool: Tool, roots: &Roots, workspace: &Path) -> Vec<Candidate> {
    let wanted = workspace_names(workspace);
    let mut found = match tool {
        Tool::Claude => claude_files(roots, &wanted),
        Tool::Codex => codex_files(roots),
    };
    found.retain_mut(|c| {
        let (cwd, prompt) = peek(tool, &c.path);
        c.first_prompt = prompt;
        match cwd {
            Some(cwd) => wanted.contains(&cwd),
            // A Claude file in the workspace's own directory that names no cwd is kept.
            None => tool == Tool::Claude,
        }
    });
    found.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    found
}

/// The workspace as given and canonicalized.
fn workspace_names(workspace: &Path) -> Vec<String> {
    let mut names = vec![workspace.display().to_string()];
    if let Ok(canonical) = fs::canonicalize(workspace) {
        names.push(canonical.display().to_string());
    }
    names.dedup();
    names
}

fn candidate(tool: Tool, path: PathBuf) -> Option<Candidate> {
    let meta = fs::metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    Some(Candidate {
        tool,
        path,
        size: meta.len(),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        first_prompt: None,
    })
}

fn claude_files(roots: &Roots, wanted: &[String]) -> Vec<Candidate> {
    let names: Vec<String> = wanted.iter().map(|w| claude_dir_name(w)).collect();
    let mut out = Vec::new();
    for root in &roots.claude {
        let Ok(dirs) = fs::read_dir(root.join("projects")) else { continue };
        for dir in dirs.filter_map(Result::ok) {
            let name = dir.file_name().to_string_lossy().into_owned();
            let matches = names.iter().any(|n| {
                *n == name || (n.len() > 200 && name.starts_with(&format!("{}-", &n[..200])))
            });
            if !matches {
                continue;
            }
            let Ok(files) = fs::read_dir(dir.path()) else { continue };
            for file in files.filter_map(Result::ok) {
                let path = file.path();
                let fname = file.file_name().to_string_lossy().into_owned();
                if fname.ends_with(".jsonl") && !fname.starts_with("agent-") {
                    out.extend(candidate(Tool::Claude, path));
                }
            }
        }
    }
    out
}

fn codex_files(roots: &Roots) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Some(root) = &roots.codex else { return out };
    walk(&root.join("sessions"), 4, &mut out);
    walk(&root.join("archived_sessions"), 0, &mut out);
    out
}

fn walk(dir: &Path, depth: u32, out: &mut Vec<Candidate>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && depth > 0 {
            walk(&path, depth - 1, out);
        } else if !is_dir {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("rollout-") && name.ends_with(".jsonl") {
                out.extend(candidate(Tool::Codex, path));
            }
        }
    }
}

/// The workspace a file names and its first typed prompt, from its first lines.
fn peek(tool: Tool, path: &Path) -> (Option<String>, Option<String>) {
    let Ok(file) = fs::File::open(path) else { return (None, None) };
    let mut reader = BufReader::new(file.take(PEEK_BYTES));
    let mut buf = Vec::new();
    let (mut cwd, mut prompt) = (None, None);
    while cwd.is_none() || prompt.is_none() {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(line) = serde_json::from_slice::<Value>(&buf) else { continue };
        match tool {
            Tool::Claude => claude_peek(&line, &mut cwd, &mut prompt),
            Tool::Codex => codex_peek(&line, &mut cwd, &mut prompt),
        }
    }
    (cwd, prompt)
}

fn shorten(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut out: String = line.chars().take(PROMPT_CHARS).collect();
    if line.chars().nth(PROMPT_CHARS).is_some() {
        out.push('…');
    }
    Some(out)
}

fn first_text(content: Option<&Value>) -> Option<&str> {
    match content? {
        Value::String(s) => Some(s),
        Value::Array(items) => items.iter().find_map(|i| i.get("text").and_then(Value::as_str)),
        _ => None,
    }
}

fn claude_peek(line: &Value, cwd: &mut Option<String>, prompt: &mut Option<String>) {
    if line.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        return;
    }
    if cwd.is_none() {
        *cwd = line.get("cwd").and_then(Value::as_str).map(str::to_owned);
    }
    let plain = line.get("type").and_then(Value::as_str) == Some("user")
        && line.get("isMeta").and_then(Value::as_bool) != Some(true)
        && line.get("isCompactSummary").and_then(Value::as_bool) != Some(true);
    if prompt.is_none() && plain {
        let text = first_text(line.get("message").and_then(|m| m.get("content")));
        *prompt = text.filter(|t| !t.trim_start().starts_with('<')).and_then(shorten);
    }
}

fn codex_peek(line: &Value, cwd: &mut Option<String>, prompt: &mut Option<String>) {
    let payload = line.get("payload").unwrap_or(line);
    let outer = line.get("type").and_then(Value::as_str);
    if cwd.is_none() && matches!(outer, Some("session_meta" | "turn_context") | None) {
        *cwd = payload.get("cwd").and_then(Value::as_str).map(str::to_owned);
    }
    let user = payload.get("type").and_then(Value::as_str) == Some("message")
        && payload.get("role").and_then(Value::as_str) == Some("user");
    if prompt.is_none() && user {
        let text = first_text(payload.get("content")).filter(|t| !is_injected(t));
        *prompt = text.and_then(shorten);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_dir_names_replace_every_non_alphanumeric_unit() {
        assert_eq!(claude_dir_name("/Users/foo/my_proj.rs"), "-Users-foo-my-proj-rs");
        assert_eq!(claude_dir_name("/tmp/é😀"), "-tmp----");
    }
}
