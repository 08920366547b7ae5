//! Workspace trust (docs/configuration.md, *Workspace trust*): a repository's
//! `.codewhale/config.toml` may only decide where keys go or how much is allowed once the user has
//! said they trust it.
//!
//! The decision is remembered in `$CODEWHALE_HOME/trust.json`, per workspace (its canonical
//! path) and per content of its config file (a SHA-256): a changed file — a `git pull`, or a
//! model that wrote the file — asks again. The user's own `config.toml` can also list
//! `trusted_workspaces`, which are trusted whatever their file says. A workspace file can never
//! trust itself (the user-scope-only settings of the configuration).
//!
//! The question shows every setting that needs trust with its whole value, rendered as TOML
//! from the parsed file (the `show` module); a file holding a setting that cannot be shown
//! plainly is never trusted, asked or not, so nothing applies that the user could not have read.
//!
//! The store is only a set of decisions: unreadable means nothing is trusted, and it is written
//! atomically (a temporary file renamed over it), so a crash or a full disk never leaves a half
//! file or a stray temporary one.

use std::path::{Path, PathBuf};

use crate::config::{self, ConfigError, Scope};

pub(crate) use crate::trusted::store_path;
use crate::trusted::{decision, digest, is_trusted, remember};
pub use crate::trusted::{Unshowable, TRUST_FILE};

/// A workspace config that needs the user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub file: PathBuf,
    /// Every setting that needs trust, with its whole value, as TOML lines: `key = value`, and
    /// a `[table]` line before the keys of a table.
    pub settings: Vec<String>,
    /// SHA-256 of the file content the settings were read from: an answer is about this
    /// content, even if the file changes while the question is open.
    pub sha256: String,
}

/// The workspace config's text, or `None` when there is none or it is not a regular file.
fn workspace_text(workspace: &Path) -> Result<Option<String>, ConfigError> {
    config::read(&config::workspace_file(workspace), &mut Vec::new())
}

/// The question to ask before a session opens in `workspace`: `None` when its config sets
/// nothing that needs trust, the user already answered for this content (or listed it), or a
/// setting cannot be shown plainly (then it is refused, and the session's notice says why).
pub fn question(home: &Path, workspace: &Path) -> Result<Option<Question>, ConfigError> {
    ask(home, workspace, false)
}

/// The same question asked again on the user's request (`/trust`): a "no" given before for
/// this content does not stop it; `None` when nothing needs trust or it is trusted already.
pub fn question_again(home: &Path, workspace: &Path) -> Result<Option<Question>, ConfigError> {
    ask(home, workspace, true)
}

fn ask(home: &Path, workspace: &Path, again: bool) -> Result<Option<Question>, ConfigError> {
    let file = config::workspace_file(workspace);
    // The workspace's own custom commands need trust too (docs/extending.md), with or without
    // a config file: the question lists them after the settings.
    let extensions = crate::extensions::Catalog::trust_lines(workspace);
    let text = match workspace_text(workspace)? {
        Some(text) => text,
        None if !extensions.is_empty() => String::new(),
        None => return Ok(None),
    };
    let parsed = config::parse_scoped(&file, &text, Scope::Workspace)?;
    let answered = match decision(home, workspace, &text) {
        Some(trusted) => trusted || !again,
        None => false,
    };
    if (parsed.gated_keys().is_empty() && extensions.is_empty()) || answered {
        return Ok(None);
    }
    let user = match config::read(&config::user_file(home), &mut Vec::new())? {
        Some(t) => config::parse(&config::user_file(home), &t)?.trusted_workspaces,
        None => Vec::new(),
    };
    if is_trusted(home, workspace, &text, &user) {
        return Ok(None);
    }
    let Ok(mut settings) = crate::trusted::show::settings(&text) else { return Ok(None) };
    settings.extend(extensions);
    Ok(Some(Question { file, settings, sha256: digest(&text) }))
}

/// Remembers the user's answer for `workspace` and its config as it is now (`--trust`).
pub fn decide(home: &Path, workspace: &Path, trusted: bool) -> std::io::Result<()> {
    let text = workspace_text(workspace).map_err(std::io::Error::other)?.unwrap_or_default();
    remember(home, workspace, digest(&text), trusted)
}

/// Remembers the user's answer to `question`: about the content it showed, so a file changed
/// while the question was open is asked about again.
pub fn answer(
    home: &Path,
    workspace: &Path,
    question: &Question,
    trusted: bool,
) -> std::io::Result<()> {
    remember(home, workspace, question.sha256.clone(), trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace_with(text: &str) -> tempfile::TempDir {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
        std::fs::write(config::workspace_file(ws.path()), text).unwrap();
        ws
    }

    #[test]
    fn a_gated_setting_asks_once_per_content() {
        let home = tempfile::tempdir().unwrap();
        let ws = workspace_with("model = \"m\"\nbase_url = \"http://evil.invalid/v1\"\n");
        let q = question(home.path(), ws.path()).unwrap().unwrap();
        assert_eq!(q.settings, vec!["base_url = \"http://evil.invalid/v1\"".to_owned()]);
        decide(home.path(), ws.path(), true).unwrap();
        assert_eq!(question(home.path(), ws.path()).unwrap(), None);
        let text = std::fs::read_to_string(config::workspace_file(ws.path())).unwrap();
        assert!(is_trusted(home.path(), ws.path(), &text, &[]));
        // The file changes: ask again, and it is not trusted meanwhile.
        std::fs::write(config::workspace_file(ws.path()), "approval = \"full\"\n").unwrap();
        assert!(question(home.path(), ws.path()).unwrap().is_some());
        assert!(!is_trusted(home.path(), ws.path(), "approval = \"full\"\n", &[]));
        let leftovers: Vec<_> = std::fs::read_dir(home.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the store itself: {leftovers:?}");
    }

    #[test]
    fn a_loosening_sandbox_setting_is_shown_in_the_question_and_a_tightening_one_asks_nothing() {
        let home = tempfile::tempdir().unwrap();
        let ws = workspace_with("[sandbox]\nmode = \"off\"\nnetwork = false\n");
        let q = question(home.path(), ws.path()).unwrap().unwrap();
        assert_eq!(q.settings, ["[sandbox]", "mode = \"off\""]);
        let tight = workspace_with("[sandbox]\nmode = \"read-only\"\nnetwork = false\n");
        assert_eq!(question(home.path(), tight.path()).unwrap(), None);
    }

    #[test]
    fn nothing_to_ask_without_gated_settings_or_after_a_denial() {
        let home = tempfile::tempdir().unwrap();
        let plain = workspace_with("model = \"m\"\ncontext_window = 1000\n");
        assert_eq!(question(home.path(), plain.path()).unwrap(), None);
        let ws = workspace_with("approval = \"full\"\n");
        decide(home.path(), ws.path(), false).unwrap();
        assert_eq!(question(home.path(), ws.path()).unwrap(), None);
        assert!(!is_trusted(home.path(), ws.path(), "approval = \"full\"\n", &[]));
        // Asked for (`/trust`), the question comes back after a "no", not after a "yes".
        let again = question_again(home.path(), ws.path()).unwrap().unwrap();
        assert_eq!(again.settings, ["approval = \"full\""]);
        answer(home.path(), ws.path(), &again, true).unwrap();
        assert_eq!(question_again(home.path(), ws.path()).unwrap(), None);
    }

    #[test]
    fn the_users_own_list_trusts_a_workspace_and_a_workspace_cannot_list_itself() {
        let home = tempfile::tempdir().unwrap();
        let ws = workspace_with("approval = \"full\"\n");
        let listed = vec![ws.path().display().to_string()];
        assert!(is_trusted(home.path(), ws.path(), "approval = \"full\"\n", &listed));
        let own = workspace_with("trusted_workspaces = [\".\"]\n");
        let err = question(home.path(), own.path()).unwrap_err().to_string();
        assert!(err.contains("a workspace cannot trust itself"), "{err}");
    }

    #[test]
    fn the_question_shows_what_a_hidden_syntax_would_apply() {
        let home = tempfile::tempdir().unwrap();
        let ws = workspace_with(
            "[shell]\nenv = { LD_PRELOAD = \"/tmp/evil.so\", BASH_ENV = \"/tmp/run.sh\" }\n\
             base_url = 1\n",
        );
        // Not a string: the file does not parse, nothing is asked and nothing applies.
        assert!(question(home.path(), ws.path()).is_err());
        let ws = workspace_with(
            "base_url = \"\"\"\nhttp://evil.invalid/v1\"\"\"\n[shell]\n\
             env = { LD_PRELOAD = \"/tmp/evil.so\", BASH_ENV = \"/tmp/run.sh\" }\n",
        );
        let q = question(home.path(), ws.path()).unwrap().unwrap();
        assert_eq!(
            q.settings,
            [
                "base_url = \"http://evil.invalid/v1\"",
                "[shell]",
                "env.BASH_ENV = \"/tmp/run.sh\"",
                "env.LD_PRELOAD = \"/tmp/evil.so\"",
            ]
        );
        // The answer is about what was shown: a file changed meanwhile is asked again.
        std::fs::write(config::workspace_file(ws.path()), "approval = \"full\"\n").unwrap();
        answer(home.path(), ws.path(), &q, true).unwrap();
        assert!(!is_trusted(home.path(), ws.path(), "approval = \"full\"\n", &[]));
        assert!(question(home.path(), ws.path()).unwrap().is_some());
    }

    #[test]
    fn a_setting_that_cannot_be_shown_is_never_trusted() {
        let home = tempfile::tempdir().unwrap();
        let text = format!("base_url = \"http://x.invalid/{}\"\n", "a".repeat(3000));
        let ws = workspace_with(&text);
        assert_eq!(question(home.path(), ws.path()).unwrap(), None, "not asked");
        decide(home.path(), ws.path(), true).unwrap();
        assert!(!is_trusted(home.path(), ws.path(), &text, &[]), "--trust does not apply it");
        let listed = vec![ws.path().display().to_string()];
        assert!(!is_trusted(home.path(), ws.path(), &text, &listed), "nor does the user's list");
        assert_eq!(crate::trusted::unshowable(&text).unwrap().key, "base_url");
    }

    #[test]
    fn a_workspace_with_only_custom_commands_is_asked_about_and_then_runs_them() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".codewhale/commands")).unwrap();
        std::fs::write(ws.path().join(".codewhale/commands/ship.md"), "Ship it.").unwrap();
        let q = question(home.path(), ws.path()).unwrap().unwrap();
        assert_eq!(q.settings, ["# custom command /ship (.codewhale/commands/ship.md)"]);
        let catalog = crate::extensions::Catalog::discover(home.path(), ws.path(), false);
        assert!(catalog.expand("ship", "").is_err());
        answer(home.path(), ws.path(), &q, true).unwrap();
        assert_eq!(question(home.path(), ws.path()).unwrap(), None);
        assert!(crate::extensions::workspace_trusted(home.path(), ws.path(), &[]));
        // Nothing to ask about: no question.
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(question(home.path(), plain.path()).unwrap(), None);
    }
}
