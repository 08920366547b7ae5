//! The workspace's pinned anchors: `.codewhale/anchors.md`.
//!
//! Anchors are the user's own notes that must survive every compaction: each checkpoint
//! restates the whole file verbatim, and the survival contract refuses a pass whose view lost
//! them. The file holds entries separated by a line `---`. This module owns reading and
//! editing it. Invariants: the file is only ever written inside the workspace, never through a
//! symlink (neither `.codewhale` nor `anchors.md` may be one), and is replaced atomically
//! (write a temporary file, then rename), so a crash never leaves half an anchor behind.

use std::fs;
use std::path::{Path, PathBuf};

/// The anchors file, relative to the workspace.
pub const ANCHORS_FILE: &str = ".codewhale/anchors.md";

/// The largest anchors file read; anchors are restated whole, so a larger file is refused, not
/// cut.
pub const MAX_ANCHORS_BYTES: usize = 1024 * 1024;

/// The line that separates two entries.
pub const SEPARATOR: &str = "---";

/// Why the anchors file could not be read or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnchorError {
    #[error("{0} is a symlink; codewhale refuses to read or write anchors through a symlink, replace it with a regular file or directory")]
    Symlink(String),
    #[error("{0} lies outside the workspace; anchors are kept in the workspace's own .codewhale directory")]
    OutsideWorkspace(String),
    #[error("the anchor text is empty; give the note to pin, e.g. `codewhale anchor add \"never push to main\"`")]
    Empty,
    #[error("an anchor cannot contain a line that is just `---`, because that line separates anchors in {ANCHORS_FILE}; rephrase that line")]
    ContainsSeparator,
    #[error("there is no anchor {index}; the workspace has {count} (see `codewhale anchor list`)")]
    NoSuchAnchor { index: usize, count: usize },
    #[error("{path} is {kind}, not a regular file; codewhale reads anchors only from a regular file, replace it with one")]
    NotRegular { path: String, kind: &'static str },
    #[error("{path} is larger than 1 MiB; anchors are short notes, remove some with `codewhale anchor remove N`")]
    TooLarge { path: String },
    #[error("cannot {action} {path}: {source}")]
    Io { action: &'static str, path: String, source: std::io::Error },
}

/// The anchors of one workspace.
#[derive(Clone, Debug)]
pub struct AnchorStore {
    workspace: PathBuf,
}

impl AnchorStore {
    /// The store of `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> AnchorStore {
        AnchorStore { workspace: workspace.into() }
    }

    /// Where the file lives.
    #[cfg(test)]
    pub fn path(&self) -> PathBuf {
        self.workspace.join(ANCHORS_FILE)
    }

    /// The file's full text, or `None` when it is absent or holds no anchor. What checkpoints
    /// restate verbatim.
    pub fn text(&self) -> Result<Option<String>, AnchorError> {
        use crate::bounded::Bounded;
        let path = self.checked_path()?;
        // A repository chose this file: read it through a bound, and only if it is a regular
        // file (a FIFO would hang the read, a device would never end).
        let bytes = match crate::bounded::read(&path, MAX_ANCHORS_BYTES) {
            Ok(Bounded::Missing) => return Ok(None),
            Ok(Bounded::NotRegular(kind)) => {
                return Err(AnchorError::NotRegular { path: path.display().to_string(), kind })
            }
            Ok(Bounded::Read { cut: true, .. }) => {
                return Err(AnchorError::TooLarge { path: path.display().to_string() })
            }
            Ok(Bounded::Read { bytes, cut: false }) => bytes,
            Err(source) => return Err(io("read", &path, source)),
        };
        let text = String::from_utf8(bytes).map_err(|_| {
            io(
                "read",
                &path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
            )
        })?;
        Ok((!parse(&text).is_empty()).then_some(text))
    }

    /// The entries, in file order.
    pub fn list(&self) -> Result<Vec<String>, AnchorError> {
        Ok(self.text()?.map(|t| parse(&t)).unwrap_or_default())
    }

    /// Appends an anchor; returns its 1-based number.
    pub fn add(&self, text: &str) -> Result<usize, AnchorError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(AnchorError::Empty);
        }
        if text.lines().any(|l| l.trim() == SEPARATOR) {
            return Err(AnchorError::ContainsSeparator);
        }
        let mut entries = self.list()?;
        entries.push(text.to_owned());
        self.write(&entries)?;
        Ok(entries.len())
    }

    /// Removes anchor `index` (1-based); returns its text.
    pub fn remove(&self, index: usize) -> Result<String, AnchorError> {
        let mut entries = self.list()?;
        if index == 0 || index > entries.len() {
            return Err(AnchorError::NoSuchAnchor { index, count: entries.len() });
        }
        let removed = entries.remove(index - 1);
        self.write(&entries)?;
        Ok(removed)
    }

    fn write(&self, entries: &[String]) -> Result<(), AnchorError> {
        let path = self.checked_path()?;
        let dir = path.parent().unwrap_or(&self.workspace).to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
        // The directory may have just been created: check again before writing into it.
        let path = self.checked_path()?;
        let text = render(entries);
        codewhale_journal::replace::replace_file(
            &path,
            codewhale_journal::replace::SHARED,
            text.as_bytes(),
        )
        .map_err(|e| io("write", &path, e))
    }

    /// The file's path after refusing symlinks and anything outside the workspace.
    fn checked_path(&self) -> Result<PathBuf, AnchorError> {
        let dir = self.workspace.join(".codewhale");
        let path = self.workspace.join(ANCHORS_FILE);
        for p in [&dir, &path] {
            if fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(AnchorError::Symlink(p.display().to_string()));
            }
        }
        if dir.exists() {
            let root =
                fs::canonicalize(&self.workspace).map_err(|e| io("resolve", &self.workspace, e))?;
            let real = fs::canonicalize(&dir).map_err(|e| io("resolve", &dir, e))?;
            if !real.starts_with(&root) {
                return Err(AnchorError::OutsideWorkspace(real.display().to_string()));
            }
        }
        Ok(path)
    }
}

/// The `AddAnchor` Op: pins `text` in the workspace file and journals it as an `anchor` user
/// entry so the model reads it from the next request on. Returns what changed (the note as
/// pinned, redacted) with the sentence to show, or the error sentence.
pub fn add_to_session(
    session: &mut crate::session::Session,
    text: &str,
) -> Result<(codewhale_protocol::AnchorChange, String), String> {
    let store = AnchorStore::new(session.workspace());
    // Anchors are restated in every checkpoint: a secret in one is redacted when pinned.
    let text = session.redactor().redact(text).into_owned();
    let n = store.add(&text).map_err(|e| e.to_string())?;
    // The user's own change of a protected file: no check of a running command puts it back.
    session.guard().accept(&[session.workspace().join(ANCHORS_FILE)]);
    session
        .append(codewhale_journal::UserPayload::anchor(text.trim()))
        .map_err(|e| format!("anchor {n} was pinned but could not be journaled: {e}"))?;
    let message =
        format!("anchor {n} pinned in {ANCHORS_FILE}; every later checkpoint restates it");
    let change =
        codewhale_protocol::AnchorChange::Pinned { index: n, text: text.trim().to_owned() };
    Ok((change, message))
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> AnchorError {
    AnchorError::Io { action, path: path.display().to_string(), source }
}

/// Splits the file's text into entries (trimmed, empty ones dropped).
pub fn parse(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines().chain(std::iter::once(SEPARATOR)) {
        if line.trim() == SEPARATOR {
            let entry = current.join("\n");
            let entry = entry.trim();
            if !entry.is_empty() {
                entries.push(entry.to_owned());
            }
            current.clear();
        } else {
            current.push(line);
        }
    }
    entries
}

/// The file's text for `entries`.
pub fn render(entries: &[String]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut out = entries.join(&format!("\n{SEPARATOR}\n"));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_list_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = AnchorStore::new(dir.path());
        assert_eq!(store.text().unwrap(), None);
        assert_eq!(store.add("Never push to main.").unwrap(), 1);
        assert_eq!(store.add("  Use rustls,\nnot openssl.\n").unwrap(), 2);
        assert_eq!(store.list().unwrap(), vec!["Never push to main.", "Use rustls,\nnot openssl."]);
        assert_eq!(
            fs::read_to_string(store.path()).unwrap(),
            "Never push to main.\n---\nUse rustls,\nnot openssl.\n"
        );
        assert_eq!(store.remove(1).unwrap(), "Never push to main.");
        assert_eq!(store.list().unwrap(), vec!["Use rustls,\nnot openssl."]);
        assert!(matches!(store.remove(5), Err(AnchorError::NoSuchAnchor { index: 5, count: 1 })));
        assert!(matches!(store.remove(0), Err(AnchorError::NoSuchAnchor { .. })));
        store.remove(1).unwrap();
        assert_eq!(store.text().unwrap(), None);
    }

    #[test]
    fn bad_texts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = AnchorStore::new(dir.path());
        assert!(matches!(store.add("  \n"), Err(AnchorError::Empty)));
        assert!(matches!(store.add("a\n---\nb"), Err(AnchorError::ContainsSeparator)));
        assert!(!store.path().exists());
    }

    #[test]
    fn hand_written_files_parse_leniently() {
        assert_eq!(parse("a\n\n---\n\n---\nb\n --- \nc"), vec!["a", "b", "c"]);
        assert_eq!(parse("one line, no newline"), vec!["one line, no newline"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".codewhale")).unwrap();
        let store = AnchorStore::new(dir.path());
        assert!(matches!(store.add("x"), Err(AnchorError::Symlink(_))));
        assert!(matches!(store.text(), Err(AnchorError::Symlink(_))));

        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".codewhale")).unwrap();
        let target = elsewhere.path().join("secret.md");
        fs::write(&target, "secret").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(ANCHORS_FILE)).unwrap();
        let store = AnchorStore::new(dir.path());
        assert!(matches!(store.add("x"), Err(AnchorError::Symlink(_))));
        assert_eq!(fs::read_to_string(&target).unwrap(), "secret", "the target is untouched");
    }

    #[test]
    fn a_fifo_or_a_huge_file_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".codewhale")).unwrap();
        let store = AnchorStore::new(dir.path());
        rustix::fs::mkfifoat(rustix::fs::CWD, store.path(), rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        let e = store.text().unwrap_err().to_string();
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
        fs::remove_file(store.path()).unwrap();
        fs::write(store.path(), "x".repeat(MAX_ANCHORS_BYTES + 1)).unwrap();
        assert!(matches!(store.text(), Err(AnchorError::TooLarge { .. })));
    }
}
