//! `codewhale import`: another tool's session written as a new Codewhale session.
//!
//! The conversion itself is `codewhale-import`'s (pure: source lines in, entries out). This module
//! is the thin shell around it: every entry goes through the session's [`Redactor`] (the same
//! redaction every append gets, the workspace's own patterns included) and, for a source of at most
//! [`EXACT_TOKENS_UP_TO`] bytes, gets its exact o200k count; then it is appended with the journal's
//! own writer ([`JournalFile`]), so the file is exactly the journal format. Larger sources are
//! written without counts (absent = not yet counted, as docs/architecture.md, *Budget and tokens*
//! allows) and their view size is an estimate, labelled as one.
//!
//! After writing, HEAD's view is rendered and checked like a request would be: an import whose
//! view could not be sent is reported as a failure, with the session kept for inspection.
//!
//! An import is listed only once complete: it is written as `<id>.importing` (which `sessions`,
//! `--last` and `resume` never see) and renamed to `<id>.jsonl` after its last entry is synced.
//! A kill leaves only the `.importing` file, which a later import removes once it has not
//! changed for [`STALE_PARTIAL`].

use std::path::{Path, PathBuf};

use codewhale_journal::{check_view, render, Block, Entry, JournalFile, Payload};

use crate::config::{self, ConfigError, Overrides};
use crate::redact::Redactor;
use crate::session::counts;
use crate::session::sessions_dir;
use crate::tokens;

pub use codewhale_import::detect::Sniffed;
pub use codewhale_import::discover::{candidates, Candidate, Roots};
pub use codewhale_import::{thinking_reason, ImportError, Report, Tool};

/// Sources up to this size get exact token counts; larger ones an estimate (bytes / 4), so a
/// 100 MB import is not spent tokenizing.
pub const EXACT_TOKENS_UP_TO: u64 = 16 * 1024 * 1024;

/// A partial import untouched this long was left by a killed import (a running one appends
/// continuously) and is removed by the next import.
pub const STALE_PARTIAL: std::time::Duration = std::time::Duration::from_secs(600);

/// What to import, and where to.
#[derive(Clone, Copy, Debug)]
pub struct ImportParams<'a> {
    pub home: &'a Path,
    /// The current workspace: its configuration's redaction patterns apply, and it is the
    /// session's workspace when the source names none.
    pub workspace: &'a Path,
    pub source: &'a Path,
}

/// A written import.
#[derive(Clone, Debug)]
pub struct Imported {
    pub session_id: String,
    pub path: PathBuf,
    pub report: Report,
    /// Tokens of HEAD's view (what the next request would carry besides the system prompt).
    pub view_tokens: u64,
    /// `view_tokens` is an estimate (bytes / 4), not an o200k count.
    pub view_tokens_estimated: bool,
    /// Sessions imported from the same file before, newest first: importing again makes a new
    /// session (the source may have grown), and the caller says which ones already exist.
    pub earlier: Vec<String>,
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportFailed {
    #[error(transparent)]
    Source(#[from] ImportError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "the imported session {} cannot be sent to a model as it is ({reason}); please report \
         this with the source file",
        path.display()
    )]
    View { path: PathBuf, reason: String },
}

/// Imports `params.source` as a new session in `params.home`.
pub fn import(params: &ImportParams<'_>) -> Result<Imported, ImportFailed> {
    tokens::warm_up();
    let config = config::load(params.home, params.workspace, &Overrides::default())?;
    let redactor = Redactor::new(&config.redaction.patterns, &[])
        .map_err(|e| ImportFailed::Config(ConfigError::Redaction(e)))?;
    let size = std::fs::metadata(params.source).map(|m| m.len()).unwrap_or(0);
    let exact = size <= EXACT_TOKENS_UP_TO;
    let workspace =
        std::fs::canonicalize(params.workspace).unwrap_or_else(|_| params.workspace.to_path_buf());
    let source = std::fs::canonicalize(params.source).unwrap_or_else(|_| params.source.into());
    let origin = codewhale_import::Origin {
        path: source.display().to_string(),
        default_cwd: workspace.display().to_string(),
        app_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let dir = sessions_dir(params.home);
    let earlier = earlier_imports(&dir, &source.display().to_string());
    remove_stale_partials(&dir);
    let mut writer = Writer::new(&dir, &redactor, exact);
    let imported =
        codewhale_import::import_file(params.source, &origin, |entry| writer.take(entry))?;
    let mut report = imported.report;
    // An image whose bytes could not be kept was replaced by a line saying why.
    report.images_imported = report.images_imported.saturating_sub(writer.images_failed);
    report.images_replaced += writer.images_failed;
    for _ in 0..writer.secret_thinking {
        report.drop_thinking(thinking_reason::HELD_A_SECRET);
    }
    let path = complete(params.source, writer.file, &dir)?;
    let view_tokens = view_tokens(&path, exact)?;
    Ok(Imported {
        session_id: imported.session_id,
        path,
        report,
        view_tokens,
        view_tokens_estimated: !exact,
        earlier,
    })
}

/// The sessions in `dir` imported from `source_path` before, newest first.
fn earlier_imports(dir: &Path, source_path: &str) -> Vec<String> {
    codewhale_journal::list_sessions(dir)
        .map(|l| l.sessions)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.imported_from.as_deref() == Some(source_path))
        .map(|s| s.id)
        .collect()
}

/// The converted entries on their way into the new journal: inline images to the blob store,
/// secrets redacted, exact counts when the source is small enough, then appended to the
/// `.importing` file (made by the header, the first entry).
struct Writer<'a> {
    dir: &'a Path,
    redactor: &'a Redactor,
    exact: bool,
    file: Option<JournalFile>,
    written: u64,
    /// Signed thinking blocks dropped because they held a secret.
    secret_thinking: u64,
    images: u64,
    /// Images replaced by a line saying why they were not kept.
    images_failed: u64,
    blobs: Option<PathBuf>,
}

impl<'a> Writer<'a> {
    fn new(dir: &'a Path, redactor: &'a Redactor, exact: bool) -> Writer<'a> {
        Writer {
            dir,
            redactor,
            exact,
            file: None,
            written: 0,
            secret_thinking: 0,
            images: 0,
            images_failed: 0,
            blobs: None,
        }
    }

    /// Takes one converted entry into the journal.
    fn take(&mut self, mut entry: Entry) -> Result<(), ImportError> {
        if let Payload::Header(h) = &entry.payload {
            self.blobs = Some(codewhale_journal::blob::blob_dir(
                &self.dir.join(format!("{}.jsonl", h.session_id)),
            ));
        }
        self.store_images(&mut entry);
        self.secret_thinking += signed_thinking_with_secret(self.redactor, &entry.payload);
        self.redactor.redact_payload(&mut entry.payload);
        if self.exact {
            let counted = match &entry.payload {
                Payload::Compaction(record) => {
                    Some(counts::Counted { text: record.note.clone(), images: 0 })
                }
                other => counts::Counted::of_payload(other),
            };
            if let Some(counted) = counted {
                entry.tokens = Some(counted.exact());
            }
        }
        self.append(entry)
    }

    /// Images with their bytes inline go to the blob store before the entry naming them.
    /// At most as many a message as a message carries: the rest are named, never decoded.
    fn store_images(&mut self, entry: &mut Entry) {
        let (Payload::User(u), Some(blobs)) = (&mut entry.payload, self.blobs.as_deref()) else {
            return;
        };
        let mut in_message = 0;
        for block in &mut u.content {
            if crate::images::is_inline(block) {
                in_message += 1;
                if in_message > crate::images::MAX_PER_MESSAGE {
                    self.images += 1;
                    self.images_failed += 1;
                    *block = codewhale_journal::Block::text(format!(
                        "[image not imported: a message carries at most {} images]",
                        crate::images::MAX_PER_MESSAGE
                    ));
                    continue;
                }
            }
            if let Some(stored) = crate::images::import_inline(block, blobs, self.images + 1) {
                self.images += 1;
                self.images_failed += u64::from(stored.as_image().is_none());
                *block = stored;
            }
        }
    }

    /// Appends `entry` to the `.importing` file; the header creates it.
    fn append(&mut self, entry: Entry) -> Result<(), ImportError> {
        let sink_err = |e: Box<dyn std::error::Error + Send + Sync>| ImportError::Sink(e);
        self.written += 1;
        if self.written == 3 {
            crate::pause_point::reached("import:entries");
        }
        match &mut self.file {
            // Not held: an import's memory is its index, whatever the source's size.
            Some(f) => f.append_unheld(entry).map_err(|e| sink_err(Box::new(e))),
            None => {
                let Payload::Header(h) = &entry.payload else {
                    return Err(sink_err("the first entry of an import is not a header".into()));
                };
                let path = self.dir.join(format!("{}.{PARTIAL}", h.session_id));
                self.file =
                    Some(JournalFile::create(&path, entry).map_err(|e| sink_err(Box::new(e)))?);
                Ok(())
            }
        }
    }
}

/// Closes the `.importing` file and renames it to the session's journal, durably; its path.
fn complete(source: &Path, file: Option<JournalFile>, dir: &Path) -> Result<PathBuf, ImportFailed> {
    let Some(file) = file else {
        return Err(ImportError::Empty {
            path: source.to_path_buf(),
            reason: "nothing was written".into(),
        }
        .into());
    };
    let partial = file.path().to_path_buf();
    let path = partial.with_extension("jsonl");
    let write_error = file.close().err();
    if let Some(e) = write_error {
        let _ = std::fs::remove_file(&partial);
        return Err(ImportError::Sink(Box::new(e)).into());
    }
    crate::pause_point::reached("import:closed");
    // Complete: from here on it is a session (the sidecars are named after the id alone).
    std::fs::rename(&partial, &path)
        .and_then(|()| sync_dir(dir))
        .map_err(|e| ImportError::Sink(Box::new(e)))?;
    Ok(path)
}

/// The size of HEAD's view of the session at `path` (exact, or an estimate), once the view
/// passed the checks a request would; an error when it did not.
fn view_tokens(path: &Path, exact: bool) -> Result<u64, ImportFailed> {
    // The view is read back from the file, as the next open reads it (lazily: only what it
    // shows).
    let loaded = codewhale_journal::load_read_only(path)
        .map_err(|e| ImportError::Sink(Box::new(std::io::Error::other(e.to_string()))))?;
    let journal = loaded.journal;
    let view = render(&journal, journal.head_id().as_str());
    let view_error = check_view(&view).err();
    let mut view_tokens = 0u64;
    for item in &view.items {
        let n = match item.tokens {
            Some(n) if exact => u64::from(n),
            _ => {
                let text = crate::session::item_text(&item.content);
                if exact {
                    u64::from(counts::exact(&text))
                } else {
                    u64::from(tokens::estimate(&text) + counts::MESSAGE_OVERHEAD)
                }
            }
        };
        view_tokens += n;
    }
    if let Some(e) = view_error {
        return Err(ImportFailed::View { path: path.to_path_buf(), reason: e.to_string() });
    }
    Ok(view_tokens)
}

/// The extension of a journal still being imported.
const PARTIAL: &str = "importing";

/// Removes what killed imports left: `.importing` files untouched for [`STALE_PARTIAL`], with
/// any sidecar written for them.
fn remove_stale_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        if path.extension().is_none_or(|e| e != PARTIAL) {
            continue;
        }
        let age = std::fs::symlink_metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        if age.is_some_and(|age| age >= STALE_PARTIAL) {
            tracing::info!(path = %path.display(), "removing an import a kill left unfinished");
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(codewhale_journal::index_path(&path));
            let _ = std::fs::remove_file(counts::sidecar_path(&path));
        }
    }
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Signed thinking blocks redaction will drop whole because they hold a secret.
fn signed_thinking_with_secret(redactor: &Redactor, payload: &Payload) -> u64 {
    let Payload::Assistant(a) = payload else { return 0 };
    a.content
        .iter()
        .filter(|b| match b {
            Block::Thinking(t) => t.signature.is_some() && redactor.finds_secret(&t.thinking),
            _ => false,
        })
        .count() as u64
}
