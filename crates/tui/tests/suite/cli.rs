//! The real binary as a command, in a throwaway home and workspace: `CODEWHALE_HOME` and `HOME`
//! point at the test's home, and none of the machine's provider keys or base URLs leak in (a
//! test sets the ones it means).
//!
//! Its temp dir (`TMPDIR`) is a folder of the test's home ([`child_tmp`]): the sandbox leaves
//! "the temp dir" writable, and this way that never holds the home, the workspace or a test's
//! "outside" directory, wherever the machine keeps its temp dir or the build its target dir.

use std::path::{Path, PathBuf};

/// The temp dir a test's codewhale is told to use: `HOME/tmp`, created.
pub fn child_tmp(home: &Path) -> PathBuf {
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    tmp
}

pub fn codewhale(home: &Path, ws: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codewhale"));
    cmd.current_dir(ws)
        .env("CODEWHALE_HOME", home)
        .env("HOME", home)
        .env("TMPDIR", child_tmp(home))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL");
    cmd
}
