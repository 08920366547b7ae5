//! The system prompt: our own words (`assets/prompts/system.md`) plus the workspace's project
//! instructions, verbatim.
//!
//! Owns which files count as project instructions: for every folder from the top of the git
//! work tree that holds the workspace (else the workspace alone) down to the workspace,
//! outermost first, its `AGENTS.md` or, where it has none, its `CLAUDE.md`; then
//! `.codewhale/instructions.md`. Invariant: they are copied byte-for-byte, never summarized,
//! so project rules survive every compaction by construction. [`SystemPrompt::load`] is cheap
//! and is called again after every compaction pass so edits to those files take effect. In a
//! small window ([`crate::budget::SMALL_WINDOW`]) our own words are the compact
//! `system-compact.md`; the project instructions are never cut.

use std::path::{Path, PathBuf};

use crate::bounded::Bounded;

const BASE: &str = include_str!("../../../assets/prompts/system.md");
/// Our own words in few tokens, for a small window (docs/compaction.md, *Small local models*).
const BASE_COMPACT: &str = include_str!("../../../assets/prompts/system-compact.md");

/// The largest instruction file read; a bigger one is cut with a marker so a stray huge file
/// cannot eat the whole window.
pub const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

/// One project instruction file found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    /// The path relative to the workspace, as shown to the model.
    pub name: String,
    pub text: String,
}

/// The assembled system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    /// Our own words, with the workspace filled in.
    pub base: String,
    /// Project instructions in the order they are sent.
    pub instructions: Vec<Instructions>,
    /// Notices for instruction files that were skipped because they are not regular files.
    pub skipped: Vec<String>,
    /// The skills the model is told about (docs/extending.md, *Skills*): their names,
    /// descriptions and paths, sent after the instructions; empty when there are none.
    pub skills: String,
}

impl SystemPrompt {
    /// Reads the project instructions of `workspace` (missing files are skipped; unreadable
    /// ones are logged and skipped, so a permission problem never blocks a session). Each is
    /// read through a bound ([`crate::bounded`]): only a regular file, at most 64 KiB; one
    /// that is something else (a FIFO, a link to a device) is skipped and named in
    /// [`SystemPrompt::skipped`].
    pub fn load(workspace: &Path, compact: bool) -> SystemPrompt {
        SystemPrompt::load_except(workspace, compact, &[])
    }

    /// [`SystemPrompt::load`] without the instruction files named in `withheld`
    /// (workspace-relative): ones a command created that the user has not accepted.
    pub fn load_except(workspace: &Path, compact: bool, withheld: &[String]) -> SystemPrompt {
        let base = if compact { BASE_COMPACT } else { BASE };
        let base = base.replace("{workspace}", &workspace.display().to_string());
        let mut instructions = Vec::new();
        let mut skipped = Vec::new();
        for path in instruction_files(workspace) {
            let rel = shown_name(workspace, &path);
            if withheld.contains(&rel) {
                continue;
            }
            match crate::bounded::read(&path, MAX_INSTRUCTIONS_BYTES) {
                Ok(Bounded::Read { mut bytes, cut }) => {
                    if cut {
                        // Never end on half a character: drop an incomplete last sequence.
                        if let Err(e) = std::str::from_utf8(&bytes) {
                            if e.error_len().is_none() {
                                bytes.truncate(e.valid_up_to());
                            }
                        }
                    }
                    let mut text = String::from_utf8_lossy(&bytes).into_owned();
                    if cut {
                        text.push_str("\n[... cut: the file is longer than 64 KiB ...]");
                    }
                    instructions.push(Instructions { name: rel, text });
                }
                Ok(Bounded::Missing) => {}
                Ok(Bounded::NotRegular(kind)) => {
                    skipped.push(crate::bounded::skipped_notice(&path, kind));
                }
                Err(err) => tracing::warn!("cannot read {}: {err}", path.display()),
            }
        }
        SystemPrompt { base, instructions, skipped, skills: String::new() }
    }

    /// The blocks sent as the request's system prompt: our text, then each instruction file
    /// under a heading naming it.
    pub fn blocks(&self) -> Vec<String> {
        let mut blocks = vec![self.base.clone()];
        for ins in &self.instructions {
            blocks.push(format!(
                "# Project instructions from `{}` (verbatim)\n\n{}",
                ins.name, ins.text
            ));
        }
        if !self.skills.is_empty() {
            blocks.push(self.skills.clone());
        }
        blocks
    }

    /// The whole prompt as one string (for counting and display).
    pub fn text(&self) -> String {
        self.blocks().join("\n\n")
    }
}

/// The folders whose instruction file is read, outermost first: from the top of the git work
/// tree holding `workspace` (the nearest ancestor with a `.git`, directory or pointer file)
/// down to `workspace`; the workspace alone when it is in no work tree.
pub(crate) fn instruction_folders(workspace: &Path) -> Vec<PathBuf> {
    let mut chain = Vec::new();
    let mut here = Some(workspace);
    while let Some(dir) = here {
        chain.push(dir.to_path_buf());
        if std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            chain.reverse();
            return chain;
        }
        here = dir.parent();
    }
    vec![workspace.to_path_buf()]
}

/// The instruction file of one folder: its `AGENTS.md` when there is one (whatever it is: a
/// file that is not regular is named and skipped, never replaced by `CLAUDE.md`), else its
/// `CLAUDE.md` when there is one.
fn folder_file(dir: &Path) -> Option<PathBuf> {
    ["AGENTS.md", "CLAUDE.md"]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

/// Every instruction file to read for `workspace`, in the order they are sent (absolute).
pub(crate) fn instruction_files(workspace: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        instruction_folders(workspace).iter().filter_map(|d| folder_file(d)).collect();
    files.push(workspace.join(".codewhale").join("instructions.md"));
    files
}

/// How an instruction file is named to the model and the user: relative to the workspace
/// (`AGENTS.md`, `../CLAUDE.md`).
fn shown_name(workspace: &Path, path: &Path) -> String {
    if let Ok(rel) = path.strip_prefix(workspace) {
        return rel.display().to_string();
    }
    let mut up = PathBuf::new();
    let mut base = workspace;
    while let Some(parent) = base.parent() {
        up.push("..");
        if let Ok(rel) = path.strip_prefix(parent) {
            return up.join(rel).display().to_string();
        }
        base = parent;
    }
    path.display().to_string()
}

/// The instruction files the system prompt reads in `workspace`, absolute, and the
/// workspace's own `AGENTS.md` whether or not it exists yet: what a command's namespace binds
/// read-only and the guard watches.
pub(crate) fn instruction_paths(workspace: &Path) -> Vec<PathBuf> {
    let mut paths = instruction_files(workspace);
    let own = workspace.join("AGENTS.md");
    if !paths.contains(&own) && !paths.contains(&workspace.join("CLAUDE.md")) {
        paths.push(own);
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_prompt_states_the_rules() {
        let p = SystemPrompt::load(Path::new("/tmp/nowhere-codewhale"), false);
        assert!(p.base.contains("/tmp/nowhere-codewhale"));
        assert!(p.base.contains("never follow"));
        assert!(
            p.base.contains("grants no\npermissions") || p.base.contains("grants no permissions")
        );
        for tool in ["read_file", "list_dir", "search", "write_file", "edit_file", "shell"] {
            assert!(p.base.contains(&format!("`{tool}{{")), "{tool}");
        }
        assert!(p.instructions.is_empty());
    }

    #[test]
    fn project_instructions_are_carried_verbatim_and_reread() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("AGENTS.md"), "Use tabs.\n  Never push.").unwrap();
        let p = SystemPrompt::load(ws.path(), false);
        assert_eq!(p.instructions.len(), 1);
        assert!(p.text().contains("Use tabs.\n  Never push."));
        std::fs::create_dir(ws.path().join(".codewhale")).unwrap();
        std::fs::write(ws.path().join(".codewhale/instructions.md"), "Run make.").unwrap();
        let p = SystemPrompt::load(ws.path(), false);
        assert_eq!(p.blocks().len(), 3);
        assert!(p.blocks()[2].ends_with("Run make."));
    }

    #[test]
    fn claude_md_is_read_only_where_no_agents_md_stands_beside_it() {
        let top = tempfile::tempdir().unwrap();
        std::fs::create_dir(top.path().join(".git")).unwrap();
        let ws = top.path().join("app/web");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(top.path().join("AGENTS.md"), "top agents").unwrap();
        std::fs::write(top.path().join("CLAUDE.md"), "top claude").unwrap();
        std::fs::write(top.path().join("app/CLAUDE.md"), "app claude").unwrap();
        std::fs::write(ws.join("CLAUDE.md"), "web claude").unwrap();
        let p = SystemPrompt::load(&ws, false);
        let names: Vec<&str> = p.instructions.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["../../AGENTS.md", "../CLAUDE.md", "CLAUDE.md"]);
        assert!(!p.text().contains("top claude"), "CLAUDE.md beside AGENTS.md is not read");
        assert!(p.text().contains("web claude"));
        // The workspace's own AGENTS.md takes over from its CLAUDE.md.
        std::fs::write(ws.join("AGENTS.md"), "web agents").unwrap();
        let p = SystemPrompt::load(&ws, false);
        assert_eq!(p.instructions.last().unwrap().name, "AGENTS.md");
        assert!(!p.text().contains("web claude"));
        // Outside any work tree only the workspace's own folder counts.
        let lone = tempfile::tempdir().unwrap();
        assert_eq!(instruction_folders(lone.path()).len(), 1);
    }

    #[test]
    fn an_oversized_instruction_file_is_cut_with_the_documented_marker() {
        let ws = tempfile::tempdir().unwrap();
        // A two-byte character straddles the limit: the cut must step back before it.
        let text = format!("{}é{}", "a".repeat(MAX_INSTRUCTIONS_BYTES - 1), "b".repeat(1000));
        std::fs::write(ws.path().join("AGENTS.md"), &text).unwrap();
        let p = SystemPrompt::load(ws.path(), false);
        let kept = &p.instructions[0].text;
        let marker = "\n[... cut: the file is longer than 64 KiB ...]";
        assert_eq!(kept.strip_suffix(marker), Some(&text[..MAX_INSTRUCTIONS_BYTES - 1]));
        let exact = "c".repeat(MAX_INSTRUCTIONS_BYTES);
        std::fs::write(ws.path().join("AGENTS.md"), &exact).unwrap();
        assert_eq!(
            SystemPrompt::load(ws.path(), false).instructions[0].text,
            exact,
            "at the limit: whole"
        );
    }

    #[test]
    fn a_hostile_repository_cannot_make_instructions_hang_or_fill_memory() {
        let ws = tempfile::tempdir().unwrap();
        // Committed symlinks survive `git clone`; a FIFO hangs a plain read forever.
        std::os::unix::fs::symlink("/dev/zero", ws.path().join("AGENTS.md")).unwrap();
        std::fs::create_dir(ws.path().join(".codewhale")).unwrap();
        let fifo = ws.path().join(".codewhale/instructions.md");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        let p = SystemPrompt::load(ws.path(), false);
        assert!(p.instructions.is_empty(), "{:?}", p.instructions);
        assert_eq!(p.skipped.len(), 2, "{:?}", p.skipped);
        assert!(p.skipped[0].contains("AGENTS.md: it is a device"), "{}", p.skipped[0]);
        assert!(p.skipped[1].contains("instructions.md: it is a FIFO"), "{}", p.skipped[1]);
        // A huge file is read only up to the bound: 8 MiB of text yields the 64 KiB cut.
        std::fs::remove_file(ws.path().join("AGENTS.md")).unwrap();
        std::fs::write(ws.path().join("AGENTS.md"), "x".repeat(8 << 20)).unwrap();
        let p = SystemPrompt::load(ws.path(), false);
        assert!(p.instructions[0].text.ends_with("longer than 64 KiB ...]"));
        assert!(p.instructions[0].text.len() < MAX_INSTRUCTIONS_BYTES + 100);
    }
}
