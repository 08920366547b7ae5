//! Small helpers the command-line suites share: output as text, files in a workspace, the
//! journals a home holds.

use std::path::Path;

/// Process output as text (lossy: a test reads it, nothing parses it strictly).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `text` to `rel` under `ws`, creating its directories.
pub fn write_in(ws: &Path, rel: &str, text: &str) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every session journal under `home`, concatenated.
pub fn session_texts(home: &Path) -> String {
    std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}
