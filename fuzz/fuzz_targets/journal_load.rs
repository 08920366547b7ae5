//! A whole file: loading, the audit, rendering HEAD and checking the view never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("s.jsonl");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(loaded) = codewhale_journal::load_read_only(&path) {
        let j = &loaded.journal;
        let view = codewhale_journal::render(j, j.head_id().as_str());
        let _ = codewhale_journal::check_view(&view);
        for item in &view.items {
            if let Some(r) = item.tool_result() {
                let _ = r.content.as_str().len();
            }
        }
    }
    let _ = codewhale_journal::check_file(&path);
});
