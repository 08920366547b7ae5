//! The real binary as a command, in a throwaway home and workspace: `CODEWHALE_HOME` and `HOME`
//! point at the test's home, and none of the machine's provider keys or base URLs leak in (a
//! test sets the ones it means).

use std::path::Path;

pub fn codewhale(home: &Path, ws: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codewhale"));
    cmd.current_dir(ws)
        .env("CODEWHALE_HOME", home)
        .env("HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL");
    cmd
}
