//! Entry ids as a journal keeps them: [`Ids`], one per position, a canonical UUID in 16 bytes
//! and any other id as written; [`IdStr`], an id handed out as text; and the id hash of the
//! journal's index.
//!
//! Invariant: an id reads back exactly as it was given, whatever its form (only lowercase
//! hyphenated UUIDs, what Codewhale writes, are packed; `FFFF…` or `msg_01…` are kept as text).

/// Every entry's id: a canonical UUID (lowercase and hyphenated, what Codewhale writes) as its
/// 16 bytes, any other id as written. An id costs 16 bytes, not a 36-byte string and an
/// allocation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ids {
    uuids: Vec<u128>,
    /// One bit per position: the id is in `others`, not in `uuids`.
    other_bits: Vec<u64>,
    others: std::collections::HashMap<u32, Box<str>>,
}

impl Ids {
    pub(crate) fn with_capacity(n: usize) -> Ids {
        Ids {
            uuids: Vec::with_capacity(n),
            other_bits: Vec::with_capacity(n / 64 + 1),
            ..Ids::default()
        }
    }

    pub(crate) fn push(&mut self, id: &str) {
        let pos = self.uuids.len();
        if pos.is_multiple_of(64) {
            self.other_bits.push(0);
        }
        match parse_uuid(id) {
            Some(v) => self.uuids.push(v),
            None => {
                self.uuids.push(0);
                self.other_bits[pos / 64] |= 1 << (pos % 64);
                self.others.insert(pos as u32, id.into());
            }
        }
    }

    fn is_other(&self, pos: u32) -> bool {
        self.other_bits[pos as usize / 64] & (1 << (pos % 64)) != 0
    }

    pub(crate) fn get(&self, pos: u32) -> IdStr<'_> {
        if self.is_other(pos) {
            IdStr(IdRepr::Other(self.others.get(&pos).map_or("", |s| s)))
        } else {
            IdStr(IdRepr::Uuid(format_uuid(self.uuids[pos as usize])))
        }
    }

    /// True when the id at `pos` is `id`, whose canonical form (if it has one) is `uuid`.
    pub(crate) fn is(&self, pos: u32, id: &str, uuid: Option<u128>) -> bool {
        match uuid {
            Some(v) => !self.is_other(pos) && self.uuids[pos as usize] == v,
            None => self.is_other(pos) && self.others.get(&pos).is_some_and(|s| &**s == id),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.uuids.len()
    }
}

/// An id as the journal hands it out: text that derefs to `&str`.
#[derive(Clone, Copy)]
pub struct IdStr<'a>(IdRepr<'a>);

#[derive(Clone, Copy)]
enum IdRepr<'a> {
    Uuid([u8; 36]),
    Other(&'a str),
}

impl std::ops::Deref for IdStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            IdRepr::Uuid(b) => std::str::from_utf8(b).unwrap_or_default(),
            IdRepr::Other(s) => s,
        }
    }
}

impl std::fmt::Display for IdStr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl std::fmt::Debug for IdStr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// Where the hyphens of a canonical UUID are.
const HYPHENS: [usize; 4] = [8, 13, 18, 23];

/// The 16 bytes of a canonical UUID (36 characters, lowercase hex, hyphens in their places).
pub(crate) fn parse_uuid(id: &str) -> Option<u128> {
    let b = id.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if HYPHENS.contains(&i) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u128::from(d);
    }
    Some(v)
}

fn format_uuid(v: u128) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'-'; 36];
    let mut nibble = 32;
    for (i, slot) in out.iter_mut().enumerate() {
        if HYPHENS.contains(&i) {
            continue;
        }
        nibble -= 1;
        *slot = HEX[((v >> (nibble * 4)) & 0xF) as usize];
    }
    out
}

/// The hash of an entry id in the index.
pub(crate) fn id_hash(id: &str) -> u64 {
    crate::hash::hash(id.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::EntryId;

    /// Canonical UUIDs are kept as 16 bytes and every other id as written; both are found by
    /// their text and handed back exactly as they were given.
    #[test]
    fn ids_of_every_form_are_kept_and_found_as_written() {
        let canonical = EntryId::new().to_string();
        let forms = [
            canonical.as_str(),
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
            "0123456789abcdef0123456789abcdef0123",
            "msg_01XyZ",
            "",
            "é-not-ascii-but-36-bytes-long-ok-ok",
        ];
        let mut ids = Ids::with_capacity(2);
        for id in forms {
            ids.push(id);
        }
        for (pos, id) in forms.iter().enumerate() {
            assert_eq!(&*ids.get(pos as u32), *id);
            for (other, _) in forms.iter().enumerate() {
                let expect = other == pos;
                assert_eq!(ids.is(other as u32, id, parse_uuid(id)), expect, "{id} at {other}");
            }
        }
        assert_eq!(
            parse_uuid(&canonical).map(format_uuid).as_ref().map(|b| &b[..]),
            Some(canonical.as_bytes())
        );
        assert_eq!(parse_uuid("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"), None);
    }
}
