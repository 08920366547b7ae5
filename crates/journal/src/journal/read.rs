//! Reading a journal's entries from its file: one at a time ([`Journal::entry_at`], kept;
//! [`Journal::read_entry`], for the moment), many at once in runs of nearby lines
//! ([`Journal::hold_all`]), or as raw lines for a walk that parses only some of them
//! ([`Journal::scan_lines`], [`Journal::parse_raw`]). A line that no longer reads as the entry
//! indexed there (the file was changed behind the journal's back) reads as an entry of an
//! unknown kind, logged.

use std::borrow::Cow;
use std::ops::ControlFlow;

use super::Journal;
use crate::entry::{Entry, EntryId};
use crate::meta::Meta;
use crate::payload::Payload;

/// Most bytes one read of [`Journal::hold_all`] or [`Journal::scan_lines`] spans.
const RUN_MAX: u64 = 4 << 20;
/// Lines at most this far apart share a read (reading the gap costs less than a call).
const RUN_GAP: u64 = 64 << 10;

/// One entry as [`Journal::scan_lines`] hands it over.
pub enum LineRef<'a> {
    /// The entry, parsed already (held, or not in a file, or its line could not be read).
    Entry(&'a Entry),
    /// The JSON of its line as it stands in the file, not parsed yet: hand it to
    /// [`Journal::parse_raw`] for the entry.
    Raw(&'a [u8]),
}

impl Journal {
    /// The entry at `pos` (file order), read from its line and held from then on.
    pub fn entry_at(&self, pos: u32) -> &Entry {
        self.held[pos as usize].get_or_init(|| Box::new(self.read_line(pos)))
    }

    /// How many lines could not be read back since this was last asked (the file changed
    /// under the session, a disk error): each became an `unreadable` entry that views leave
    /// out. The caller tells the user; the count starts again from zero.
    pub fn take_unreadable(&self) -> u32 {
        self.unreadable.0.swap(0, std::sync::atomic::Ordering::Relaxed)
    }

    /// The entry at `pos` when it is held (never reads the file).
    pub(crate) fn held_at(&self, pos: u32) -> Option<&Entry> {
        self.held[pos as usize].get()
    }

    /// The entry at `pos`: the held one, or one read from its line just for the caller (not
    /// held). For walks over many entries that must not keep them.
    pub fn read_entry(&self, pos: u32) -> Cow<'_, Entry> {
        match self.held[pos as usize].get() {
            Some(e) => Cow::Borrowed(e),
            None => Cow::Owned(self.read_line(pos)),
        }
    }

    /// Reads and holds the entries at `positions` that are not held yet, in as few reads as
    /// possible: lines near each other in the file are read with one positional read. What
    /// rendering a long view does before converting it (one read per entry would cost a system
    /// call each).
    pub(crate) fn hold_all(&self, positions: &[u32]) {
        let Some(source) = &self.source else { return };
        let wanted: Vec<(u32, Meta)> = positions
            .iter()
            .map(|&p| (p, self.metas[p as usize]))
            .filter(|(p, m)| m.on_disk() && self.held[*p as usize].get().is_none())
            .collect();
        if wanted.len() < 2 {
            return;
        }
        let (mut buf, mut scratch) = (Vec::new(), Vec::new());
        let finders = crate::lazy::LazyFinders::new();
        let mut i = 0;
        while i < wanted.len() {
            let start = wanted[i].1.offset();
            let mut end = start + u64::from(wanted[i].1.len());
            let mut j = i + 1;
            while let Some((_, m)) = wanted.get(j) {
                let (at, to) = (m.offset(), m.offset() + u64::from(m.len()));
                if at < end || at - end > RUN_GAP || to - start > RUN_MAX {
                    break;
                }
                end = to;
                j += 1;
            }
            buf.resize((end - start) as usize, 0);
            if crate::text::read_exact_at(&source.file, &mut buf, start).is_ok() {
                for (p, m) in &wanted[i..j] {
                    let at = (m.offset() - start) as usize;
                    let body = &buf[at..at + m.len() as usize];
                    let parsed =
                        crate::scan::parse_body(body, m.offset(), source, &mut scratch, &finders);
                    // Anything unexpected is left to `entry_at`, which reports it.
                    if let Ok(entry) = parsed {
                        if *entry.id.as_str() == *self.ids.get(*p) {
                            let _ = self.held[*p as usize].set(Box::new(entry));
                        }
                    }
                }
            }
            i = j;
        }
        // What reading the lines coerced was reported when the file was scanned.
        crate::lenient::take_coercions();
    }

    /// Calls `f` with each entry at `positions`, in order, parsed as a long view's render
    /// parses it (tool output left in the file until read) but not held: each is dropped once
    /// `f` returns. Lines near each other are read with one positional read. For a walk that
    /// converts every entry of a long view and must not keep them all parsed as well.
    pub fn visit_entries(&self, positions: &[u32], mut f: impl FnMut(u32, &Entry)) {
        let (mut buf, mut scratch) = (Vec::new(), Vec::new());
        let finders = crate::lazy::LazyFinders::new();
        let mut i = 0;
        while i < positions.len() {
            let meta = self.metas[positions[i] as usize];
            let source = self.source.as_ref().filter(|_| meta.on_disk());
            let held = self.held[positions[i] as usize].get();
            let (Some(source), None) = (source, held) else {
                f(positions[i], &self.read_entry(positions[i]));
                i += 1;
                continue;
            };
            let (start, end, j) = self.run_from(positions, i);
            buf.resize((end - start) as usize, 0);
            let read = crate::text::read_exact_at(&source.file, &mut buf, start);
            for &p in &positions[i..j] {
                let m = self.metas[p as usize];
                let at = (m.offset() - start) as usize;
                let parsed = read.as_ref().ok().and_then(|()| {
                    let body = &buf[at..at + m.len() as usize];
                    crate::scan::parse_body(body, m.offset(), source, &mut scratch, &finders).ok()
                });
                match parsed.filter(|e| *e.id.as_str() == *self.ids.get(p)) {
                    Some(entry) => f(p, &entry),
                    // `read_entry` reads the line again, and logs what fails.
                    None => f(p, &self.read_entry(p)),
                }
            }
            i = j;
        }
        crate::lenient::take_coercions();
    }

    /// The run of lines read together from `positions[i]` (on disk, not held): the byte range
    /// `start..end` and the position index `j` after it. The next positions join while their
    /// lines follow in the file, not held, with gaps and a whole length kept small.
    fn run_from(&self, positions: &[u32], i: usize) -> (u64, u64, usize) {
        let meta = self.metas[positions[i] as usize];
        let start = meta.offset();
        let mut end = start + u64::from(meta.len());
        let mut j = i + 1;
        while let Some(&p) = positions.get(j) {
            let m = self.metas[p as usize];
            let (at, to) = (m.offset(), m.offset() + u64::from(m.len()));
            if !m.on_disk()
                || self.held[p as usize].get().is_some()
                || at < end
                || at - end > RUN_GAP
                || to - start > RUN_MAX
            {
                break;
            }
            end = to;
            j += 1;
        }
        (start, end, j)
    }

    /// Calls `f` with each entry at `positions`, in the order given, and stops when it breaks.
    /// Lines in the file that follow each other closely are read together, one positional
    /// read per run of up to a few megabytes, and handed over raw; nothing is parsed or held.
    /// For walks over most of a long session's bytes that need only some entries parsed
    /// (`recall`'s search looks at the raw line first).
    pub fn scan_lines(
        &self,
        positions: &[u32],
        mut f: impl FnMut(u32, LineRef<'_>) -> ControlFlow<()>,
    ) {
        let mut buf = Vec::new();
        let mut i = 0;
        while i < positions.len() {
            let meta = self.metas[positions[i] as usize];
            let source = self.source.as_ref().filter(|_| meta.on_disk());
            let held = self.held[positions[i] as usize].get();
            let (Some(source), None) = (source, held) else {
                let entry = self.read_entry(positions[i]);
                if f(positions[i], LineRef::Entry(&entry)).is_break() {
                    return;
                }
                i += 1;
                continue;
            };
            // The run: the next positions whose lines follow in the file, not held.
            let (start, end, j) = self.run_from(positions, i);
            buf.resize((end - start) as usize, 0);
            let read = crate::text::read_exact_at(&source.file, &mut buf, start);
            for &p in &positions[i..j] {
                let flow = if read.is_ok() {
                    let m = self.metas[p as usize];
                    let at = (m.offset() - start) as usize;
                    f(p, LineRef::Raw(&buf[at..at + m.len() as usize]))
                } else {
                    // `read_entry` reads the line again, and logs what fails.
                    f(p, LineRef::Entry(&self.read_entry(p)))
                };
                if flow.is_break() {
                    return;
                }
            }
            i = j;
        }
    }

    /// The entry at `pos` from `raw`, its line as [`Journal::scan_lines`] handed it over:
    /// parsed whole (tool output included, nothing left in the file), not held. A line that
    /// no longer reads as the entry indexed there reads as an entry of an unknown kind, logged.
    pub fn parse_raw(&self, pos: u32, raw: &[u8]) -> Entry {
        let parsed = crate::scan::parse(raw);
        // What parsing the line coerced was reported when the file was scanned.
        crate::lenient::take_coercions();
        self.checked(pos, parsed)
    }

    /// The output of the tool result at `pos`, from `raw`, its line as [`Journal::scan_lines`]
    /// handed it over, without decoding it: the bytes of the JSON string between its quotes,
    /// escapes as they stand (not checked to be UTF-8). `None` when the line is not a tool
    /// result in the field order this crate writes, or does not name the entry indexed at
    /// `pos` (parse it then).
    pub fn raw_output<'a>(&self, pos: u32, raw: &'a [u8]) -> Option<&'a [u8]> {
        static FINDERS: std::sync::OnceLock<(
            crate::lazy::LazyFinders,
            memchr::memmem::Finder<'static>,
        )> = std::sync::OnceLock::new();
        let (finders, id_key) = FINDERS.get_or_init(|| {
            (crate::lazy::LazyFinders::new(), memchr::memmem::Finder::new(br#""id":""#))
        });
        let (start, end) = crate::lazy::output_span(raw, finders)?;
        // The line names the entry: its first `"id":"` (the entry's own, before the payload)
        // is followed by the id indexed at `pos` and a quote.
        let at = id_key.find(&raw[..start])? + id_key.needle().len();
        let id = self.ids.get(pos);
        let named = raw[at..start].strip_prefix(id.as_bytes())?;
        (named.first() == Some(&b'"')).then_some(&raw[start..end])
    }

    /// Parses the line of the entry at `pos`. The line was a valid entry when the file was
    /// indexed and the file is append-only; should it have been changed since, the entry reads
    /// as one of an unknown kind (passed over by the view) and the failure is logged.
    fn read_line(&self, pos: u32) -> Entry {
        let meta = &self.metas[pos as usize];
        let read = match &self.source {
            Some(source) if meta.on_disk() => {
                crate::scan::read_entry(source, meta.offset(), meta.len())
            }
            _ => Err("the entry is not in a file".to_owned()),
        };
        self.checked(pos, read)
    }

    /// `read`, the entry read from the line of `pos`, when it is the entry indexed there;
    /// else an entry of an unknown kind in its place, and the failure logged.
    fn checked(&self, pos: u32, read: Result<Entry, String>) -> Entry {
        match read {
            Ok(entry) if *entry.id.as_str() == *self.ids.get(pos) => entry,
            other => {
                let why = match other {
                    Ok(e) => format!("the line now holds entry {}", e.id),
                    Err(e) => e,
                };
                tracing::error!(line = self.lines[pos as usize], %why, "a journal line cannot be read back");
                self.unreadable.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut e = Entry::new(
                    self.parent_at(pos).map(|p| EntryId::from(&*self.ids.get(p))),
                    Payload::Unknown {
                        kind: "unreadable".to_owned(),
                        payload: serde_json::Value::Null,
                    },
                );
                e.id = EntryId::from(&*self.ids.get(pos));
                e
            }
        }
    }
}
