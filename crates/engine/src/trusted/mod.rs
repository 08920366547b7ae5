//! The remembered trust decisions (`$CODEWHALE_HOME/trust.json`) and the test a workspace
//! config must pass to apply: below the configuration, which asks it while it loads, and
//! reading nothing of it.
//!
//! Invariants: the store is only a set of decisions — unreadable means nothing is trusted — and
//! it is written atomically, so a crash or a full disk never leaves a half file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(crate) mod show;

pub use show::Unshowable;

/// The store's file name under the Codewhale home.
pub const TRUST_FILE: &str = "trust.json";

/// One remembered answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Decision {
    /// SHA-256 of the config file the answer was about, hex.
    sha256: String,
    trusted: bool,
    /// When it was given (RFC 3339).
    at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    v: u32,
    workspaces: BTreeMap<String, Decision>,
}

/// Where the store lives.
pub(crate) fn store_path(home: &Path) -> PathBuf {
    home.join(TRUST_FILE)
}

pub(super) fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn key_of(workspace: &Path) -> String {
    std::fs::canonicalize(workspace)
        .unwrap_or_else(|_| workspace.to_path_buf())
        .display()
        .to_string()
}

fn load(home: &Path) -> Store {
    std::fs::read(store_path(home))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Store>(&bytes).ok())
        .filter(|s| s.v == 1)
        .unwrap_or_default()
}

/// The remembered answer for this workspace and exactly this config text, if any.
pub(super) fn decision(home: &Path, workspace: &Path, text: &str) -> Option<bool> {
    let store = load(home);
    let d = store.workspaces.get(&key_of(workspace))?;
    (d.sha256 == digest(text)).then_some(d.trusted)
}

/// Whether the workspace's config (`text`) is trusted: remembered as trusted for this content,
/// or listed in the user's `trusted_workspaces` — and every setting that needs trust can be
/// shown plainly ([`show::settings`]).
pub(crate) fn is_trusted(home: &Path, workspace: &Path, text: &str, listed: &[String]) -> bool {
    let here = key_of(workspace);
    (listed.iter().any(|w| key_of(Path::new(w)) == here)
        || decision(home, workspace, text) == Some(true))
        && show::settings(text).is_ok()
}

/// Why a workspace config whose settings need trust is not trusted even if the user said so:
/// one of them cannot be shown plainly.
pub(crate) fn unshowable(text: &str) -> Option<Unshowable> {
    show::settings(text).err()
}

pub(super) fn remember(
    home: &Path,
    workspace: &Path,
    sha256: String,
    trusted: bool,
) -> std::io::Result<()> {
    let mut store = load(home);
    store.v = 1;
    store.workspaces.insert(
        key_of(workspace),
        Decision { sha256, trusted, at: chrono::Utc::now().to_rfc3339() },
    );
    let bytes = serde_json::to_vec_pretty(&store).map_err(std::io::Error::other)?;
    codewhale_journal::private::create_dir_all(home)?;
    let path = store_path(home);
    codewhale_journal::replace::replace_file(&path, codewhale_journal::replace::PRIVATE, &bytes)
}
