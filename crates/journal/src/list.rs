//! Listing the sessions of a directory without loading them.
//!
//! For each `*.jsonl` file: the header comes from the file's first line, read in one small
//! chunk; `updated` is the file's modification time (every append changes it); the title is
//! the header's `title`, else the first line of the first plain user message found in that same
//! first chunk (it is almost always the second line), else none. The entry count is exact: the
//! number of complete lines after the header. Counting them means reading the file, so the
//! counts are cached in `<dir>/.index.json` with the file length they were counted at; since a
//! journal only ever grows, the next listing reads only the bytes appended since. A file that
//! shrank (a repaired torn tail) is counted again from scratch. The cache is only a cache: it is
//! rewritten atomically when it changed, and losing it costs one full count.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::block::Block;
use crate::entry::{Entry, Timestamp};
use crate::payload::Payload;

/// How much of a file is read for its header (and, usually, its first user message).
const FIRST_CHUNK: usize = 16 * 1024;
/// Longest header line accepted.
const MAX_HEADER: usize = 1024 * 1024;
/// Longest title shown.
const TITLE_CHARS: usize = 80;
const CACHE_FILE: &str = ".index.json";

/// One session as listed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionInfo {
    /// The header's `session_id`.
    pub id: String,
    pub path: PathBuf,
    pub cwd: String,
    pub title: Option<String>,
    /// Entries after the header (complete lines).
    pub entries: u64,
    pub created_at: Timestamp,
    /// The file's modification time.
    pub updated: Timestamp,
    pub provider: String,
    pub model: String,
    /// The source file a `codewhale import` read (the header's `imported_from.path`).
    pub imported_from: Option<String>,
}

/// The sessions of a directory, newest first, and the files that could not be listed.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    pub sessions: Vec<SessionInfo>,
    /// Files named `*.jsonl` that are not readable journals, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Counted {
    len: u64,
    lines: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Cache {
    v: u32,
    files: BTreeMap<String, Counted>,
}

/// Lists the sessions in `dir` (a missing directory has none), newest first.
pub fn list_sessions(dir: &Path) -> io::Result<Listing> {
    let read_dir = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Listing::default()),
        Err(e) => return Err(e),
    };
    let cache_path = dir.join(CACHE_FILE);
    let old_cache: Cache = std::fs::read(&cache_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|c: &Cache| c.v == 1)
        .unwrap_or_default();
    let mut new_cache = Cache { v: 1, files: BTreeMap::new() };
    let mut listing = Listing::default();
    for dirent in read_dir {
        let dirent = dirent?;
        let path = dirent.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let name = dirent.file_name().to_string_lossy().into_owned();
        match read_session(&path, old_cache.files.get(&name).copied()) {
            Ok((info, counted)) => {
                new_cache.files.insert(name, counted);
                listing.sessions.push(info);
            }
            Err(reason) => listing.skipped.push((path, reason)),
        }
    }
    listing.sessions.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| b.id.cmp(&a.id)));
    if new_cache.files != old_cache.files {
        write_cache(&cache_path, &new_cache);
    }
    Ok(listing)
}

fn write_cache(path: &Path, cache: &Cache) {
    let Ok(bytes) = serde_json::to_vec(cache) else { return };
    // Best effort: a read-only directory or a full disk just means no cache (and no temporary
    // file left behind).
    let _ = crate::replace::replace_file(path, crate::replace::PRIVATE, &bytes);
}

fn read_session(path: &Path, cached: Option<Counted>) -> Result<(SessionInfo, Counted), String> {
    // A FIFO named *.jsonl would block the listing forever.
    crate::load::ensure_regular(path).map_err(|e| e.to_string())?;
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let len = meta.len();
    let updated: DateTime<Utc> = meta.modified().map_err(|e| e.to_string())?.into();
    let updated = Timestamp::from_datetime(updated);

    let mut chunk = vec![0u8; FIRST_CHUNK];
    let mut filled = read_full(&mut file, &mut chunk).map_err(|e| e.to_string())?;
    chunk.truncate(filled);
    let header_end = loop {
        if let Some(i) = memchr::memchr(b'\n', &chunk) {
            break i;
        }
        if filled == 0 || chunk.len() >= MAX_HEADER || (chunk.len() as u64) >= len {
            return Err("no complete header line".into());
        }
        let mut more = vec![0u8; FIRST_CHUNK];
        filled = read_full(&mut file, &mut more).map_err(|e| e.to_string())?;
        chunk.extend_from_slice(&more[..filled]);
    };
    let first = &chunk[..header_end];
    let first = first.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(first);
    let header = Entry::parse_line_bytes(first)
        .map_err(|e| format!("the first line is not a journal entry ({e})"))?;
    let Payload::Header(h) = header.payload else {
        return Err(format!("the first line is a `{}` entry, not a header", header.kind()));
    };
    let title = h.title.clone().or_else(|| first_user_title(&chunk[header_end + 1..]));
    let imported_from = h
        .extra
        .get("imported_from")
        .and_then(|v| v.get("path"))
        .and_then(|p| p.as_str())
        .map(str::to_owned);
    let counted = count_lines(&mut file, len, cached).map_err(|e| e.to_string())?;
    let info = SessionInfo {
        id: h.session_id,
        path: path.to_owned(),
        cwd: h.cwd,
        title,
        entries: counted.lines.saturating_sub(1),
        created_at: h.created_at,
        updated,
        provider: h.provider,
        model: h.model,
        imported_from,
    };
    Ok((info, counted))
}

fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The first line of the first plain user message among the complete lines of `bytes`. Lines
/// are parsed whatever their spacing (another tool may write `"kind": "user"`); a line that
/// does not mention `user` at all is skipped unparsed.
fn first_user_title(bytes: &[u8]) -> Option<String> {
    let complete = &bytes[..memchr::memrchr(b'\n', bytes)? + 1];
    complete.split(|&b| b == b'\n').find_map(|line| {
        memchr::memmem::find(line, b"\"user\"")?;
        let entry = Entry::parse_line_bytes(line).ok()?;
        match entry.payload {
            Payload::User(u) if u.is_plain() => {
                u.content.iter().find_map(Block::as_text).and_then(title_of)
            }
            _ => None,
        }
    })
}

/// A title from a message: its first non-empty line, at most 80 characters.
pub fn title_of(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().nth(TITLE_CHARS).is_some() {
        title.push('…');
    }
    Some(title)
}

/// Newlines in the file, counting only the bytes after a still-valid cached count.
fn count_lines(file: &mut File, len: u64, cached: Option<Counted>) -> io::Result<Counted> {
    let (from, mut lines) = match cached {
        Some(c) if c.len <= len => (c.len, c.lines),
        _ => (0, 0),
    };
    if from == len {
        return Ok(Counted { len, lines });
    }
    file.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut remaining = len - from;
    while remaining > 0 {
        let want = buf.len().min(usize::try_from(remaining).unwrap_or(usize::MAX));
        let n = read_full(file, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        remaining -= n as u64;
    }
    Ok(Counted { len: len - remaining, lines })
}
