//! Reading a git index file (versions 2, 3 and 4): the path, mode and object id of every
//! stage-0 entry, nothing else. A worktree snapshot is the index `git add -A` leaves, so two
//! snapshots are compared here, in the process, instead of writing and diffing git trees.
//!
//! Invariants: pure over bytes, no allocation per entry but a version 4 path; an index this reader does not understand (another version, a
//! truncated file, a path running off the end) is an error, never a guess — a snapshot that
//! cannot be read records nothing. Extensions after the entries are not read.

use std::borrow::Cow;

/// One entry of an index: a path in the work tree (bytes as git stores them), its mode (as git
/// writes it, `0o100644`) and the raw id of its blob. Borrowed from the index's bytes (a path of
/// a version 4 index, which is stored as a cut of the one before, is owned), so reading 10,000
/// entries allocates next to nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry<'a> {
    pub path: Cow<'a, [u8]>,
    pub mode: u32,
    pub oid: &'a [u8],
}

impl IndexEntry<'_> {
    /// The path as text (a path that is not UTF-8 is read lossily).
    pub fn path_text(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }

    /// The blob id as git names it: lowercase hex.
    pub fn oid_hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(self.oid.len() * 2);
        for b in self.oid {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        out
    }
}

/// The stage-0 entries of `bytes`, in the index's order (sorted by path). `hash_len` is the
/// object id length of the repository: 20 for SHA-1, 32 for SHA-256.
pub fn read_entries(bytes: &[u8], hash_len: usize) -> Result<Vec<IndexEntry<'_>>, String> {
    let header = bytes.get(..12).ok_or("the index is shorter than its header")?;
    if &header[..4] != b"DIRC" {
        return Err("the index does not start with DIRC".into());
    }
    let version = be32(&header[4..8]);
    if !(2..=4).contains(&version) {
        return Err(format!("index version {version} is not one Codewhale reads"));
    }
    let count = be32(&header[8..12]) as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut at = 12;
    // Version 4 writes each path as a cut of the previous one plus a new suffix.
    let mut previous: Vec<u8> = Vec::new();
    let fixed = 40 + hash_len + 2;
    for _ in 0..count {
        let entry = bytes.get(at..at + fixed).ok_or("the index ends inside an entry")?;
        let mode = be32(&entry[24..28]);
        let oid = &entry[40..40 + hash_len];
        let flags = u16::from_be_bytes([entry[fixed - 2], entry[fixed - 1]]);
        let extended = flags & 0x4000 != 0;
        if extended && version == 2 {
            return Err("a version 2 index holds an extended entry".into());
        }
        let stage = (flags >> 12) & 0x3;
        let name_at = at + fixed + if extended { 2 } else { 0 };
        let path = if version == 4 {
            let (cut, suffix_at) = varint(bytes, name_at)?;
            let keep = previous.len().checked_sub(cut).ok_or("a version 4 path cuts too much")?;
            let end = nul_after(bytes, suffix_at)?;
            previous.truncate(keep);
            previous.extend_from_slice(&bytes[suffix_at..end]);
            at = end + 1;
            Cow::Owned(previous.clone())
        } else {
            let end = nul_after(bytes, name_at)?;
            // The entry is padded with 1–8 NULs to a multiple of eight bytes.
            let len = end - at;
            at += (len + 8) & !7;
            Cow::Borrowed(&bytes[name_at..end])
        };
        if stage == 0 {
            entries.push(IndexEntry { path, mode, oid });
        }
    }
    if at > bytes.len() {
        return Err("the index ends inside an entry".into());
    }
    Ok(entries)
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The index of the first NUL at or after `from`.
fn nul_after(bytes: &[u8], from: usize) -> Result<usize, String> {
    let rest = bytes.get(from..).ok_or("the index ends inside a path")?;
    rest.iter()
        .position(|b| *b == 0)
        .map(|i| from + i)
        .ok_or_else(|| "an index path never ends".into())
}

/// Git's offset varint (each continuation adds one before shifting), and where it ends.
fn varint(bytes: &[u8], mut at: usize) -> Result<(usize, usize), String> {
    let mut byte = *bytes.get(at).ok_or("the index ends inside a path")?;
    at += 1;
    let mut value = usize::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        byte = *bytes.get(at).ok_or("the index ends inside a path")?;
        at += 1;
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .ok_or("a version 4 path length overflows")?
            | usize::from(byte & 0x7f);
    }
    Ok((value, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The entries git itself lists for the index at `index`, as (path, mode, oid).
    fn git_ls(dir: &std::path::Path) -> Vec<(String, u32, String)> {
        let out =
            Command::new("git").current_dir(dir).args(["ls-files", "-s", "-z"]).output().unwrap();
        assert!(out.status.success());
        out.stdout
            .split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(|row| {
                let row = String::from_utf8_lossy(row);
                let (meta, path) = row.split_once('\t').unwrap();
                let parts: Vec<&str> = meta.split(' ').collect();
                (path.to_owned(), u32::from_str_radix(parts[0], 8).unwrap(), parts[1].to_owned())
            })
            .collect()
    }

    fn work_tree() -> Option<tempfile::TempDir> {
        if Command::new("git").arg("--version").output().is_err() {
            codewhale_mcp::test_support::skip_test("git is not installed");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("git").current_dir(dir.path()).args(["init", "-q"]).status();
        assert!(ok.unwrap().success());
        std::fs::create_dir_all(dir.path().join("src/deep/er")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("src/deep/er/long-name-of-a-file.rs"), "fn x() {}").unwrap();
        std::fs::write(dir.path().join("src/deep/er/long-name-of-b-file.rs"), "fn y() {}").unwrap();
        std::fs::write(dir.path().join("src/ünïcödé name.md"), "# t").unwrap();
        Some(dir)
    }

    fn add_all(dir: &std::path::Path, version: &str) -> Vec<u8> {
        let status = Command::new("git")
            .current_dir(dir)
            .args(["-c", &format!("index.version={version}"), "add", "-A"])
            .status()
            .unwrap();
        assert!(status.success());
        if version == "3" {
            // Git writes version 3 only for an index that holds an extended entry.
            std::fs::write(dir.join("intent.txt"), "to add").unwrap();
            let intent =
                Command::new("git").current_dir(dir).args(["add", "-N", "intent.txt"]).status();
            assert!(intent.unwrap().success());
        }
        if version != "2" {
            let up = Command::new("git")
                .current_dir(dir)
                .args(["update-index", &format!("--index-version={version}")])
                .status()
                .unwrap();
            assert!(up.success());
        }
        std::fs::read(dir.join(".git/index")).unwrap()
    }

    #[test]
    fn every_index_version_reads_as_git_lists_it() {
        for version in ["2", "3", "4"] {
            let Some(dir) = work_tree() else { return };
            let bytes = add_all(dir.path(), version);
            assert_eq!(be32(&bytes[4..8]).to_string(), version);
            let read: Vec<(String, u32, String)> = read_entries(&bytes, 20)
                .unwrap()
                .iter()
                .map(|e| (e.path_text(), e.mode, e.oid_hex()))
                .collect();
            assert_eq!(read, git_ls(dir.path()), "index version {version}");
            assert!(read.len() >= 4);
        }
    }

    #[test]
    fn a_damaged_index_is_an_error_not_a_guess() {
        let Some(dir) = work_tree() else { return };
        let bytes = add_all(dir.path(), "2");
        assert!(read_entries(&bytes[..bytes.len() / 2], 20).is_err());
        assert!(read_entries(b"DIRC", 20).is_err());
        let mut other = bytes.clone();
        other[7] = 9;
        assert!(read_entries(&other, 20).unwrap_err().contains("version 9"));
        assert!(read_entries(b"XXXX\0\0\0\x02\0\0\0\0", 20).is_err());
        // A count that promises more entries than there are.
        let mut more = bytes.clone();
        more[11] = more[11].wrapping_add(40);
        assert!(read_entries(&more, 20).is_err());
    }
}
