//! `$CODEWHALE_HOME/probe-cache.json`: what each local server last said about each model's
//! window, shared by every Codewhale process of the home (docs/compaction.md, *Small local models*).
//!
//! One entry per base URL and model: when its round *started* (Unix milliseconds, written
//! before the first request of the round goes out) and, once the round ended, its answer — a
//! window and where it came from, or that the server states none.
//!
//! Invariants:
//! - an entry younger than [`FRESH`] means "asked already": no process sends a request for that
//!   server and model while it stands, whether the round has answered yet or not;
//! - claiming a round (finding no fresh entry and writing one) happens under an exclusive lock
//!   of `probe-cache.lock`, so of many processes starting at once exactly one claims it;
//! - the file is only ever replaced whole (a temporary file renamed over it, mode 0600), so a
//!   reader without the lock sees the old content or the new, never a half-written file;
//! - a file that cannot be read or parsed counts as empty, and one that cannot be written
//!   leaves every process probing as if there were no cache: the cache saves requests, it never
//!   stops one.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How long an entry spares the server another round.
pub const FRESH: Duration = Duration::from_secs(60);

/// The cache file's name in the home.
pub const FILE: &str = "probe-cache.json";
/// The lock file claims are made under.
const LOCK: &str = "probe-cache.lock";
/// The most entries kept (the oldest go first): a few servers and models' worth.
const MAX_ENTRIES: usize = 64;
/// The largest cache file read; a larger one is not ours and counts as empty.
const MAX_BYTES: u64 = 256 * 1024;
/// How long a claim waits for another process's lock before giving up (the lock is held for a
/// read and a write of a small file).
const LOCK_WAIT: Duration = Duration::from_millis(250);

/// The file's content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct CacheFile {
    entries: Vec<Entry>,
}

/// What is known about one server and model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The base URL, without a trailing slash.
    pub base_url: String,
    pub model: String,
    /// When the round started, in Unix milliseconds.
    pub started_ms: u64,
    /// The round's answer; absent while it runs (or when the process running it ended first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

/// What a round learned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The window the server states for the model; absent when it states none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Where the window came from ([`codewhale_provider::ProbeSource::as_str`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The server it answered as ([`codewhale_provider::LocalServer::name`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl Answer {
    /// The answer of a probe round.
    pub fn of(answer: &codewhale_provider::ProbeAnswer) -> Answer {
        Answer {
            window: answer.window.as_ref().map(|w| w.tokens),
            source: answer.window.as_ref().map(|w| w.source.as_str().to_owned()),
            server: answer.server.map(|s| s.name().to_owned()),
        }
    }

    /// The window it states, with its source.
    pub fn window(&self) -> Option<codewhale_provider::ProbedWindow> {
        let source = codewhale_provider::ProbeSource::parse(self.source.as_deref()?)?;
        let tokens = self.window.filter(|w| *w > 0)?;
        Some(codewhale_provider::ProbedWindow { tokens, source })
    }
}

impl Entry {
    /// Whether the entry still spares the server a round at `now_ms`.
    pub fn is_fresh(&self, now_ms: u64) -> bool {
        let fresh = u64::try_from(FRESH.as_millis()).unwrap_or(u64::MAX);
        // A stamp from the future (a clock set back) is not trusted for longer than FRESH.
        now_ms.abs_diff(self.started_ms) < fresh
    }
}

/// The outcome of trying to claim a round.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// A round started less than [`FRESH`] ago (maybe still running): send nothing.
    Fresh(Entry),
    /// This process claimed the round, stamped `started_ms`: send it and [`store`] its answer.
    Mine { started_ms: u64 },
}

/// The cache file of `home`.
pub fn path(home: &Path) -> PathBuf {
    home.join(FILE)
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The key a base URL is filed under.
pub fn key_of(base_url: &str) -> &str {
    base_url.trim().trim_end_matches('/')
}

/// The entry for `base_url` and `model`, whatever its age (read without the lock).
pub fn lookup(home: &Path, base_url: &str, model: &str) -> Option<Entry> {
    let base = key_of(base_url);
    read(home).entries.into_iter().find(|e| e.base_url == base && e.model == model)
}

/// Claims the round for `base_url` and `model` at `now_ms` (module docs): a fresh entry is
/// returned as it stands; otherwise one stamped `now_ms` with no answer is written and the
/// round is this process's. `None` when the lock or the file could not be had: then no
/// process can rely on the cache, and the caller probes without it.
pub fn claim(home: &Path, base_url: &str, model: &str, now_ms: u64) -> Option<Claim> {
    let _lock = lock(home)?;
    let base = key_of(base_url);
    let mut file = read(home);
    if let Some(entry) = file.entries.iter().find(|e| e.base_url == base && e.model == model) {
        if entry.is_fresh(now_ms) {
            return Some(Claim::Fresh(entry.clone()));
        }
    }
    file.entries.retain(|e| !(e.base_url == base && e.model == model));
    file.entries.push(Entry {
        base_url: base.to_owned(),
        model: model.to_owned(),
        started_ms: now_ms,
        answer: None,
    });
    write(home, &mut file).then_some(Claim::Mine { started_ms: now_ms })
}

/// Files the answer of the round this process claimed at `started_ms`. A newer round claimed
/// since (this one outlived [`FRESH`]) keeps its place.
pub fn store(home: &Path, base_url: &str, model: &str, started_ms: u64, answer: Answer) {
    let Some(_lock) = lock(home) else { return };
    let base = key_of(base_url);
    let mut file = read(home);
    let newer = file
        .entries
        .iter()
        .any(|e| e.base_url == base && e.model == model && e.started_ms > started_ms);
    if newer {
        return;
    }
    file.entries.retain(|e| !(e.base_url == base && e.model == model));
    file.entries.push(Entry {
        base_url: base.to_owned(),
        model: model.to_owned(),
        started_ms,
        answer: Some(answer),
    });
    write(home, &mut file);
}

fn read(home: &Path) -> CacheFile {
    let path = path(home);
    let Ok(file) = File::open(&path) else { return CacheFile::default() };
    let mut bytes = Vec::new();
    let read =
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_BYTES + 1), &mut bytes);
    if read.is_err() || bytes.len() as u64 > MAX_BYTES {
        return CacheFile::default();
    }
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        tracing::debug!(path = %path.display(), "ignoring an unreadable probe cache: {e}");
        CacheFile::default()
    })
}

/// Replaces the file (the oldest entries dropped past [`MAX_ENTRIES`]); whether it was written.
fn write(home: &Path, file: &mut CacheFile) -> bool {
    file.entries.sort_by_key(|e| e.started_ms);
    let extra = file.entries.len().saturating_sub(MAX_ENTRIES);
    file.entries.drain(..extra);
    let Ok(bytes) = serde_json::to_vec(file) else { return false };
    let written = codewhale_journal::replace::replace_file(
        &path(home),
        codewhale_journal::replace::PRIVATE,
        &bytes,
    );
    if let Err(e) = &written {
        tracing::debug!("cannot write the probe cache: {e}");
    }
    written.is_ok()
}

/// The exclusive lock claims and stores are made under, released when dropped; `None` when it
/// cannot be had within [`LOCK_WAIT`].
fn lock(home: &Path) -> Option<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(home.join(LOCK)).ok()?;
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Some(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                tracing::debug!("cannot lock the probe cache: {e:?}");
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_fresh_entry_and_answers_are_kept() {
        let home = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:8080/v1/";
        let t = 1_700_000_000_000;
        assert_eq!(claim(home.path(), url, "m", t), Some(Claim::Mine { started_ms: t }));
        let Some(Claim::Fresh(running)) = claim(home.path(), url, "m", t + 59_000) else {
            panic!("a round in progress is fresh")
        };
        assert_eq!((running.started_ms, running.answer), (t, None));
        assert_eq!(
            claim(home.path(), url, "other", t + 1),
            Some(Claim::Mine { started_ms: t + 1 }),
            "per model"
        );
        let answer = Answer {
            window: Some(8192),
            source: Some("llamacpp-props".into()),
            server: Some("llama.cpp".into()),
        };
        store(home.path(), url, "m", t, answer.clone());
        let entry = lookup(home.path(), "http://127.0.0.1:8080/v1", "m").unwrap();
        assert_eq!(entry.answer.as_ref().and_then(Answer::window).map(|w| w.tokens), Some(8192));
        assert_eq!(
            claim(home.path(), url, "m", t + 60_000),
            Some(Claim::Mine { started_ms: t + 60_000 }),
            "stale after a minute"
        );
        store(home.path(), url, "m", t, answer);
        assert_eq!(
            lookup(home.path(), url, "m").unwrap().answer,
            None,
            "an older round's answer does not replace a newer round"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(path(home.path())).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_damaged_file_counts_as_empty() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(path(home.path()), b"{\"entries\": [").unwrap();
        assert_eq!(lookup(home.path(), "http://x/v1", "m"), None);
        assert_eq!(claim(home.path(), "http://x/v1", "m", 5), Some(Claim::Mine { started_ms: 5 }));
    }
}
