//! File tools: `read_file`, `list_dir`, `write_file`, `edit_file`.
//!
//! Each takes already-resolved paths (see [`crate::paths`]) and returns the text the model
//! reads, or an error sentence saying what failed and what to do. Invariants: reads are
//! bounded (lines, line length, bytes) and only of regular files — a named pipe, a socket or a
//! device, directly or through a symlink, is refused before it is opened, so nothing blocks on
//! a FIFO or reads `/dev/zero` forever ([`regular`]); `edit_file` changes a file only when
//! `old_string` matches exactly once, or `replace_all` is set.

use std::fmt::Write as _;
use std::path::Path;

use super::output::MAX_OUTPUT_BYTES;

/// Lines returned by `read_file` when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Longest line shown whole; longer lines are cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// Largest file `read_file` loads (it pages by lines, which needs the whole file).
pub const MAX_READ_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Most entries `list_dir` shows.
pub const MAX_DIR_ENTRIES: usize = 1000;

/// `read_file`: lines `offset..offset+limit` (1-based offset) numbered like `cat -n`.
pub fn read_file(
    path: &Path,
    shown: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_message("read", shown, &e))?;
    if meta.is_dir() {
        return Err(format!("{shown} is a directory; list it with list_dir"));
    }
    not_special(&meta, shown)?;
    let size = meta.len();
    if size > MAX_READ_FILE_BYTES {
        return Err(format!(
            "{shown} is {size} bytes, too large to read whole; look at parts of it with a \
             shell command such as `head`, `tail`, `sed -n` or `grep`"
        ));
    }
    // Bounded even if the file grows between the look and the read.
    let bytes =
        read_at_most(path, MAX_READ_FILE_BYTES).map_err(|e| io_message("read", shown, &e))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(format!(
            "{shown} looks like a binary file ({} bytes); inspect it with a shell command such \
             as `file` or `xxd | head` instead",
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let start = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_READ_LINES).max(1);
    let total_lines = text.lines().count();
    if total_lines == 0 {
        return Ok(format!("({shown} is empty)"));
    }
    let all_rows: Vec<Row<'_>> = rows(&text).collect();
    let total = all_rows.len();
    let pieces = total != total_lines;
    if start > total {
        let unit = if pieces { "rows" } else { "lines" };
        return Err(format!("offset {start} is past the end of {shown}, which has {total} {unit}"));
    }
    let mut out = String::new();
    if pieces {
        let _ = writeln!(
            out,
            "[{shown} has lines longer than {MAX_LINE_CHARS} characters; each is shown in \
             pieces numbered line.piece, one row each; offset and limit count rows]"
        );
    }
    let mut last = start - 1;
    for (i, row) in all_rows.iter().enumerate().skip(start - 1).take(limit) {
        // Always show at least one row, so the next offset is never this one again.
        if last >= start && out.len() + row.text.len() > MAX_OUTPUT_BYTES {
            break;
        }
        let label = if row.pieces > 1 {
            format!("{}.{}", row.line, row.piece)
        } else {
            row.line.to_string()
        };
        let _ = writeln!(out, "{label:>6}\t{}", row.text);
        last = i + 1;
    }
    if last < total {
        let unit = if pieces { "rows" } else { "lines" };
        let _ = write!(
            out,
            "[showing {unit} {start}-{last} of {total}; pass offset={} to read on]",
            last + 1
        );
    }
    Ok(out)
}

/// One row of `read_file`'s output: a whole line, or a piece of a line longer than
/// [`MAX_LINE_CHARS`].
struct Row<'a> {
    /// 1-based line number in the file.
    line: usize,
    /// 1-based piece of the line, of `pieces`.
    piece: usize,
    pieces: usize,
    text: &'a str,
}

/// The rows of `text`: each line, with lines longer than [`MAX_LINE_CHARS`] characters cut into
/// pieces of that many (on character boundaries).
fn rows(text: &str) -> impl Iterator<Item = Row<'_>> {
    text.lines().enumerate().flat_map(|(i, line)| {
        let mut cuts = vec![0];
        let mut count = 0;
        for (at, _) in line.char_indices() {
            if count == MAX_LINE_CHARS {
                cuts.push(at);
                count = 0;
            }
            count += 1;
        }
        cuts.push(line.len());
        let pieces = cuts.len() - 1;
        (0..pieces).map(move |p| Row {
            line: i + 1,
            piece: p + 1,
            pieces,
            text: &line[cuts[p]..cuts[p + 1]],
        })
    })
}

/// `list_dir`: entries sorted by name, directories with a trailing `/`.
pub fn list_dir(path: &Path, shown: &str) -> Result<String, String> {
    if path.is_file() {
        return Err(format!("{shown} is a file, not a directory; read it with read_file"));
    }
    let read = std::fs::read_dir(path).map_err(|e| io_message("list", shown, &e))?;
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .map(|entry| {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok(format!("({shown} is empty)"));
    }
    let total = names.len();
    names.truncate(MAX_DIR_ENTRIES);
    let mut out = names.join("\n");
    if total > MAX_DIR_ENTRIES {
        let _ = write!(out, "\n[... {} more entries not shown]", total - MAX_DIR_ENTRIES);
    }
    Ok(out)
}

/// Refuses what is not a regular file or a directory: a named pipe, a socket, a device.
fn not_special(meta: &std::fs::Metadata, shown: &str) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    let what = if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        return Ok(());
    };
    Err(format!(
        "{shown} is {what}, not a file; the file tools read and write regular files only (a \
         shell command can use it, with a bound such as `head -c 4096`)"
    ))
}

/// Whether `path` (following symlinks) may be written by the file tools: absent, or a regular
/// file; a directory, named pipe, socket or device is refused with a sentence.
pub fn regular(path: &Path, shown: &str) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(format!("{shown} is a directory; pass a file path")),
        Ok(meta) => not_special(&meta, shown).map(|()| true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_message("look at", shown, &e)),
    }
}

/// Reads at most `max` bytes of `path`.
fn read_at_most(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut out = Vec::new();
    std::fs::File::open(path)?.take(max).read_to_end(&mut out)?;
    Ok(out)
}

/// `write_file`: creates parent directories, then writes the whole file.
pub fn write_file(path: &Path, shown: &str, content: &str) -> Result<String, String> {
    let existed = regular(path, shown)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| io_message("create the folder of", shown, &e))?;
    }
    std::fs::write(path, content).map_err(|e| io_message("write", shown, &e))?;
    let verb = if existed { "replaced" } else { "created" };
    Ok(format!("{verb} {shown} ({} bytes, {} lines)", content.len(), content.lines().count()))
}

/// `edit_file`: exact-match replacement.
pub fn edit_file(
    path: &Path,
    shown: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<String, String> {
    // Refused before the file is read when the arguments alone say so.
    edit_arguments(old, new).map_err(|e| e.message(shown))?;
    if !regular(path, shown)? {
        return Err(io_message("read", shown, &std::io::Error::from(std::io::ErrorKind::NotFound)));
    }
    let bytes =
        read_at_most(path, MAX_READ_FILE_BYTES + 1).map_err(|e| io_message("read", shown, &e))?;
    if bytes.len() as u64 > MAX_READ_FILE_BYTES {
        return Err(format!(
            "{shown} is larger than {MAX_READ_FILE_BYTES} bytes, too large to edit whole; change \
             it with a shell command"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        format!("{shown} is not UTF-8 text; change it with a shell command instead")
    })?;
    let (updated, matches) =
        apply_edit(&text, old, new, replace_all).map_err(|e| e.message(shown))?;
    std::fs::write(path, &updated).map_err(|e| io_message("write", shown, &e))?;
    let what =
        if matches == 1 { "1 replacement".to_owned() } else { format!("{matches} replacements") };
    Ok(format!("edited {shown}: {what}"))
}

/// Why an edit cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditRefusal {
    EmptyOld,
    Identical,
    NotFound,
    Ambiguous(usize),
}

impl EditRefusal {
    /// What the model reads, naming the file as `shown`.
    pub fn message(&self, shown: &str) -> String {
        match self {
            EditRefusal::EmptyOld => {
                "old_string is empty; to create or overwrite a file use write_file instead".into()
            }
            EditRefusal::Identical => {
                "old_string and new_string are identical; there is nothing to change".into()
            }
            EditRefusal::NotFound => format!(
                "old_string was not found in {shown}; read the file again and copy the exact \
                 text, including whitespace and indentation"
            ),
            EditRefusal::Ambiguous(n) => format!(
                "old_string matches {n} places in {shown}; include more surrounding lines to \
                 make it unique, or set replace_all to true to change every one"
            ),
        }
    }
}

/// What the arguments of an edit say on their own: an empty `old`, or no change.
fn edit_arguments(old: &str, new: &str) -> Result<(), EditRefusal> {
    if old.is_empty() {
        return Err(EditRefusal::EmptyOld);
    }
    if old == new {
        return Err(EditRefusal::Identical);
    }
    Ok(())
}

/// The one edit rule, for the tool and for the diff an approval shows (so a diff shown is the
/// edit applied): `text` with `old` replaced by `new` — every occurrence with `replace_all`,
/// else the only one — and how many were replaced.
pub fn apply_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), EditRefusal> {
    edit_arguments(old, new)?;
    match text.matches(old).count() {
        0 => Err(EditRefusal::NotFound),
        n if n > 1 && !replace_all => Err(EditRefusal::Ambiguous(n)),
        n => {
            let updated =
                if replace_all { text.replace(old, new) } else { text.replacen(old, new, 1) };
            Ok((updated, n))
        }
    }
}

fn io_message(action: &str, shown: &str, err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            format!("cannot {action} {shown}: it does not exist; check the path with list_dir")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot {action} {shown}: permission denied")
        }
        _ => format!("cannot {action} {shown}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_pages_through_numbered_lines() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one\ntwo\nthree\n").unwrap();
        assert_eq!(
            read_file(&f, "a.txt", None, None).unwrap(),
            "     1\tone\n     2\ttwo\n     3\tthree\n"
        );
        let page = read_file(&f, "a.txt", Some(2), Some(1)).unwrap();
        assert!(page.starts_with("     2\ttwo\n[showing lines 2-2 of 3; pass offset=3"), "{page}");
        assert!(read_file(&f, "a.txt", Some(9), None).unwrap_err().contains("past the end"));
        assert!(read_file(&dir.path().join("no"), "no", None, None)
            .unwrap_err()
            .contains("does not exist"));
        std::fs::write(&f, b"\x00\x01bin").unwrap();
        assert!(read_file(&f, "a.txt", None, None).unwrap_err().contains("binary"));
    }

    #[test]
    fn a_single_long_line_is_read_in_pieces_and_the_hint_always_moves_on() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("min.js");
        let line: String = (0..100_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        std::fs::write(&f, format!("{line}\nshort\n")).unwrap();
        let first = read_file(&f, "min.js", None, None).unwrap();
        assert!(first.starts_with("[min.js has lines longer than 2000 characters"), "{first}");
        assert!(first.contains("\n   1.1\tabcdefghij"), "{first}");
        let hint = first.lines().last().unwrap();
        let next: usize =
            hint.split("offset=").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!(next > 1, "{hint}");
        // Reading on from every hint covers the whole line exactly once, then the next line.
        let mut offset = 1;
        let mut seen = String::new();
        loop {
            let page = read_file(&f, "min.js", Some(offset), None).unwrap();
            for row in page.lines().filter(|l| l.contains('\t')) {
                let (label, text) = row.trim_start().split_once('\t').unwrap();
                if label.starts_with("1.") {
                    seen.push_str(text);
                } else {
                    assert_eq!((label, text), ("2", "short"));
                }
            }
            let Some(rest) = page.rsplit("offset=").next().filter(|_| page.contains("to read on"))
            else {
                break;
            };
            let next: usize = rest.split(' ').next().unwrap().parse().unwrap();
            assert!(next > offset, "the hint never points back: {next} after {offset}");
            offset = next;
        }
        assert_eq!(seen, line);
        assert!(read_file(&f, "min.js", Some(52), None).unwrap_err().contains("51 rows"));
    }

    #[test]
    fn list_marks_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.txt"), "").unwrap();
        assert_eq!(list_dir(dir.path(), ".").unwrap(), "b.txt\nsub/");
        assert!(list_dir(&dir.path().join("b.txt"), "b.txt").unwrap_err().contains("read_file"));
        assert!(read_file(&dir.path().join("sub"), "sub", None, None)
            .unwrap_err()
            .contains("list_dir"));
    }

    #[test]
    fn edit_refuses_missing_and_ambiguous_matches() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.rs");
        std::fs::write(&f, "let a = 1;\nlet a = 1;\nlet b = 2;\n").unwrap();
        assert!(edit_file(&f, "x.rs", "let c", "x", false).unwrap_err().contains("not found"));
        assert!(edit_file(&f, "x.rs", "let a = 1;", "x", false)
            .unwrap_err()
            .contains("matches 2 places"));
        edit_file(&f, "x.rs", "let b = 2;", "let b = 3;", false).unwrap();
        edit_file(&f, "x.rs", "let a = 1;", "let a = 0;", true).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "let a = 0;\nlet a = 0;\nlet b = 3;\n");
    }

    #[test]
    fn pipes_devices_and_links_to_them_are_refused_before_they_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
        for (name, what) in [("pipe", "a named pipe"), ("zero", "a device")] {
            let path = dir.path().join(name);
            // Each would block or never end if opened: a refusal returns at once.
            let read = read_file(&path, name, None, None).unwrap_err();
            assert!(read.contains(&format!("{name} is {what}, not a file")), "{read}");
            let write = write_file(&path, name, "x").unwrap_err();
            assert!(write.contains(what), "{write}");
            let edit = edit_file(&path, name, "a", "b", false).unwrap_err();
            assert!(edit.contains(what), "{edit}");
        }
        assert!(read_file(Path::new("/dev/zero"), "/dev/zero", None, None).is_err());
    }

    #[test]
    fn write_creates_folders() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("deep/er/f.txt");
        assert!(write_file(&f, "deep/er/f.txt", "hi\n").unwrap().starts_with("created"));
        assert!(write_file(&f, "deep/er/f.txt", "ho\n").unwrap().starts_with("replaced"));
        assert!(write_file(dir.path(), ".", "x").unwrap_err().contains("directory"));
    }
}
