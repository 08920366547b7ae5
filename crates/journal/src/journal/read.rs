//! Reading a journal's entries from its file: one at a time ([`Journal::entry_at`], kept;
//! [`Journal::read_entry`], for the moment) or many at once in runs of nearby lines
//! ([`Journal::hold_all`]). A line that no longer reads as the entry indexed there (the file was
//! changed behind the journal's back) reads as an entry of an unknown kind, logged.

use std::borrow::Cow;

use super::Journal;
use crate::entry::{Entry, EntryId};
use crate::meta::Meta;
use crate::payload::Payload;

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
        /// Most bytes one read spans.
        const RUN_MAX: u64 = 4 << 20;
        /// Lines at most this far apart share a read (reading the gap costs less than a call).
        const RUN_GAP: u64 = 64 << 10;
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
