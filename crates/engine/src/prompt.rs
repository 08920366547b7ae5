//! The system prompt: our own words (`assets/prompts/system.md`) plus the workspace's project
//! instructions, verbatim.
//!
//! Owns which files count as project instructions: `AGENTS.md` at the workspace root and
//! `.codewhale/instructions.md`. Invariant: they are copied byte-for-byte, never summarized,
//! so project rules survive every compaction by construction. [`SystemPrompt::load`] is cheap
//! and is called again after every compaction pass so edits to those files take effect.

use std::path::{Path, PathBuf};

const BASE: &str = include_str!("../../../assets/prompts/system.md");

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
}

impl SystemPrompt {
    /// Reads the project instructions of `workspace` (missing files are skipped; unreadable
    /// ones are logged and skipped, so a permission problem never blocks a session).
    pub fn load(workspace: &Path) -> SystemPrompt {
        let base = BASE.replace("{workspace}", &workspace.display().to_string());
        let mut instructions = Vec::new();
        for rel in instruction_files() {
            let path = workspace.join(&rel);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    let mut text = String::from_utf8_lossy(&bytes).into_owned();
                    if text.len() > MAX_INSTRUCTIONS_BYTES {
                        let mut cut = MAX_INSTRUCTIONS_BYTES;
                        while !text.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        text.truncate(cut);
                        text.push_str("\n[... cut: the file is longer than 64 KiB ...]");
                    }
                    instructions.push(Instructions { name: rel.display().to_string(), text });
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => tracing::warn!("cannot read {}: {err}", path.display()),
            }
        }
        SystemPrompt { base, instructions }
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
        blocks
    }

    /// The whole prompt as one string (for counting and display).
    pub fn text(&self) -> String {
        self.blocks().join("\n\n")
    }
}

fn instruction_files() -> [PathBuf; 2] {
    [PathBuf::from("AGENTS.md"), Path::new(".codewhale").join("instructions.md")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_prompt_states_the_rules() {
        let p = SystemPrompt::load(Path::new("/tmp/nowhere-codewhale"));
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
        let p = SystemPrompt::load(ws.path());
        assert_eq!(p.instructions.len(), 1);
        assert!(p.text().contains("Use tabs.\n  Never push."));
        std::fs::create_dir(ws.path().join(".codewhale")).unwrap();
        std::fs::write(ws.path().join(".codewhale/instructions.md"), "Run make.").unwrap();
        let p = SystemPrompt::load(ws.path());
        assert_eq!(p.blocks().len(), 3);
        assert!(p.blocks()[2].ends_with("Run make."));
    }

    #[test]
    fn an_oversized_instruction_file_is_cut_with_the_documented_marker() {
        let ws = tempfile::tempdir().unwrap();
        // A two-byte character straddles the limit: the cut must step back before it.
        let text = format!("{}é{}", "a".repeat(MAX_INSTRUCTIONS_BYTES - 1), "b".repeat(1000));
        std::fs::write(ws.path().join("AGENTS.md"), &text).unwrap();
        let p = SystemPrompt::load(ws.path());
        let kept = &p.instructions[0].text;
        let marker = "\n[... cut: the file is longer than 64 KiB ...]";
        assert_eq!(kept.strip_suffix(marker), Some(&text[..MAX_INSTRUCTIONS_BYTES - 1]));
        let exact = "c".repeat(MAX_INSTRUCTIONS_BYTES);
        std::fs::write(ws.path().join("AGENTS.md"), &exact).unwrap();
        assert_eq!(
            SystemPrompt::load(ws.path()).instructions[0].text,
            exact,
            "at the limit: whole"
        );
    }
}
