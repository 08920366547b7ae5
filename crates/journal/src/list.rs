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
    /// What its model requests cost, in US dollars: the `cost_usd` of every reply and
    /// compaction record (0 when no request had a known price).
    pub cost_usd: f64,
    pub created_at: Timestamp,
    /// The file's modification time.
    pub updated: Timestamp,
    pub provider: String,
    pub model: String,
    /// The source file a `codewhale import` read (the header's `imported_from.path`).
    pub imported_from: Option<String>,
    /// The session whose `task` call started this one (the header's `parent_session`), or
    /// `None` for a session of its own.
    pub parent: Option<String>,
    /// The parent's `task` call that started it (the header's `parent_call`).
    pub parent_call: Option<String>,
}

/// The sessions of a directory, newest first, and the files that could not be listed.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    pub sessions: Vec<SessionInfo>,
    /// Files named `*.jsonl` that are not readable journals, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Counted {
    /// Bytes read: up to the end of the last complete line.
    len: u64,
    lines: u64,
    /// The `cost_usd` figures of those lines, summed.
    #[serde(default)]
    cost_usd: f64,
    /// The model of the last model switch in those lines (a `system` entry with `model`).
    #[serde(default)]
    model: Option<String>,
}

/// The most of a line cut between two chunks that is kept to be scanned whole.
const CARRY_CAP: usize = 16 << 20;

/// The version of the cache's format: a cache of another version is counted afresh.
const CACHE_VERSION: u32 = 3;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Cache {
    v: u32,
    files: BTreeMap<String, Counted>,
}

/// What the model requests of the session file at `path` cost in all, in US dollars (the
/// `cost_usd` figures of its lines), through the same cache as the listing: only what was
/// appended since the last count is read.
pub fn session_cost_usd(path: &Path) -> io::Result<f64> {
    crate::load::ensure_regular(path).map_err(|e| io::Error::other(e.to_string()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let cache_path = dir.join(CACHE_FILE);
    let mut cache: Cache = std::fs::read(&cache_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|c: &Cache| c.v == CACHE_VERSION)
        .unwrap_or(Cache { v: CACHE_VERSION, files: BTreeMap::new() });
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let counted = count_lines(&mut file, len, cache.files.get(&name).cloned())?;
    let cost = counted.cost_usd;
    if cache.files.get(&name) != Some(&counted) {
        cache.files.insert(name, counted);
        write_cache(&cache_path, &cache);
    }
    Ok(cost)
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
        .filter(|c: &Cache| c.v == CACHE_VERSION)
        .unwrap_or_default();
    let mut new_cache = Cache { v: CACHE_VERSION, files: BTreeMap::new() };
    let mut listing = Listing::default();
    for dirent in read_dir {
        let dirent = dirent?;
        let path = dirent.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let name = dirent.file_name().to_string_lossy().into_owned();
        match read_session(&path, old_cache.files.get(&name).cloned()) {
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
        cost_usd: counted.cost_usd,
        created_at: h.created_at,
        updated,
        provider: h.provider,
        // The model the session last used: its last switch, else the one it started with.
        model: counted.model.clone().unwrap_or(h.model),
        imported_from,
        parent: h.parent_session,
        parent_call: h.parent_call,
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

/// Complete lines in the file and the `cost_usd` figures they hold, reading only the bytes
/// after a still-valid cached count.
fn count_lines(file: &mut File, len: u64, cached: Option<Counted>) -> io::Result<Counted> {
    let mut counted = match cached {
        Some(c) if c.len <= len => c,
        _ => Counted::default(),
    };
    if counted.len == len {
        return Ok(counted);
    }
    file.seek(SeekFrom::Start(counted.len))?;
    let mut buf = vec![0u8; 1 << 20];
    // The start of a line the last chunk cut, scanned with the rest of it; past
    // [`CARRY_CAP`] only its length is kept (a usage object sits at the end of its line).
    let mut carry: Vec<u8> = Vec::new();
    let mut carried = 0u64;
    let mut remaining = len - counted.len;
    while remaining > 0 {
        let want = buf.len().min(usize::try_from(remaining).unwrap_or(usize::MAX));
        let n = read_full(file, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        remaining -= n as u64;
        let chunk = &buf[..n];
        let Some(last) = memchr::memrchr(b'\n', chunk) else {
            carried += n as u64;
            if carry.len() + n <= CARRY_CAP {
                carry.extend_from_slice(chunk);
            } else {
                carry.clear();
            }
            continue;
        };
        let whole = &chunk[..=last];
        let scanned = if carry.is_empty() {
            whole
        } else {
            carry.extend_from_slice(whole);
            carry.as_slice()
        };
        counted.lines += memchr::memchr_iter(b'\n', whole).count() as u64;
        counted.cost_usd += costs_in(scanned);
        if let Some(model) = last_model_in(scanned) {
            counted.model = Some(model);
        }
        counted.len += carried + whole.len() as u64;
        carry = chunk[last + 1..].to_vec();
        carried = carry.len() as u64;
    }
    Ok(counted)
}

/// The model of the last model switch in `lines` (whole journal lines as written): the
/// `payload.model` of the last `system` line that has one. Only lines that name the kind
/// and a model are parsed.
fn last_model_in(lines: &[u8]) -> Option<String> {
    let finder = memchr::memmem::Finder::new(b"\"kind\":\"system\"");
    let mut last = None;
    for at in finder.find_iter(lines) {
        let start = memchr::memrchr(b'\n', &lines[..at]).map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &lines[at..]).map_or(lines.len(), |p| at + p);
        let line = &lines[start..end];
        if memchr::memmem::find(line, b"\"model\":").is_none() {
            continue;
        }
        let value: Option<serde_json::Value> = serde_json::from_slice(line).ok();
        if let Some(model) = value.as_ref().and_then(|v| v["payload"]["model"].as_str()) {
            last = Some(model.to_owned());
        }
    }
    last
}

/// The sum of the `"cost_usd":N` figures in `lines` (whole journal lines as written).
fn costs_in(lines: &[u8]) -> f64 {
    const KEY: &[u8] = b"\"cost_usd\":";
    memchr::memmem::find_iter(lines, KEY)
        .filter_map(|at| {
            let rest = &lines[at + KEY.len()..];
            let end = rest
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'-' | b'+'))?;
            std::str::from_utf8(&rest[..end]).ok()?.parse::<f64>().ok()
        })
        .filter(|c| c.is_finite() && *c >= 0.0)
        .sum()
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn costs_are_summed_across_chunks_and_a_partial_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut text = String::from("{\"kind\":\"header\"}\n");
        // ~1.5 MB of lines: some lines straddle the 1 MiB chunk boundary.
        for k in 0..3_000 {
            let pad = "x".repeat(480 + k % 7);
            text.push_str(&format!("{{\"pad\":\"{pad}\",\"usage\":{{\"cost_usd\":0.001}}}}\n"));
        }
        text.push_str("{\"usage\":{\"cost_usd\":5");
        std::fs::write(&path, &text).unwrap();
        let mut file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let first = count_lines(&mut file, len, None).unwrap();
        assert_eq!(first.lines, 3_001);
        assert!((first.cost_usd - 3.0).abs() < 1e-6, "{}", first.cost_usd);
        assert!(first.len < len, "the partial line is read again next time");
        // The line is completed: only the new bytes are read, and its cost counts once.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b".5}}\n").unwrap();
        let mut file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let second = count_lines(&mut file, len, Some(first)).unwrap();
        assert_eq!((second.lines, second.len), (3_002, len));
        assert!((second.cost_usd - 8.5).abs() < 1e-6, "{}", second.cost_usd);
        assert_eq!(costs_in(b"{\"cost_usd\":-1}\n{\"cost_usd\":\"x\"}\n"), 0.0);
    }
}
