//! Where Codewhale keeps its files: `--home`, else `CODEWHALE_HOME`, else `~/.codewhale`.

use std::path::PathBuf;

use anyhow::{anyhow, Result};

/// Resolves the home directory from the GLOBAL `--home` flag (clap already folds in
/// `CODEWHALE_HOME`), falling back to `~/.codewhale`.
pub fn resolve(flag: Option<&PathBuf>) -> Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir.clone());
    }
    dirs::home_dir().map(|home| home.join(".codewhale")).ok_or_else(|| {
        anyhow!("cannot find your home directory; set CODEWHALE_HOME or pass --home DIR")
    })
}

/// The directory holding session journals.
pub fn sessions_dir(home: &std::path::Path) -> PathBuf {
    home.join("sessions")
}
