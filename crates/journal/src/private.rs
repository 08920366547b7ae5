//! Creating Codewhale's own folders and files private (docs/security.md, *Private by
//! default*): the home, `sessions/`, journals, stores, caches and logs hold the user's
//! conversations, file contents and commands, so every folder is created mode 0700 and every
//! file 0600, whatever the umask lets others read. Every crate that creates one goes through
//! here (or [`crate::replace`] with [`crate::replace::PRIVATE`]).
//!
//! Invariant: only what is created is given a mode; an existing folder keeps the mode the user
//! chose.

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The mode of a private folder.
pub const DIR_MODE: u32 = 0o700;
/// The mode of a private file.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and every missing parent, each mode 0700.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Options that create a file mode 0600 (set what else the caller needs on them).
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn folders_and_files_are_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("home/sessions");
        create_dir_all(&deep).unwrap();
        for d in [dir.path().join("home"), deep.clone()] {
            assert_eq!(std::fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o700);
        }
        let f = deep.join("s.jsonl");
        options().write(true).create_new(true).open(&f).unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
