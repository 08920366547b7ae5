//! One journal line: parsing never panics, and what parses writes back to a line that parses to
//! the same entry.
#![no_main]

use codewhale_journal::Entry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(entry) = Entry::parse_line_bytes(data) else { return };
    let _ = codewhale_journal::take_coercions();
    let Ok(line) = entry.to_line() else { return };
    let again = Entry::parse_line(&line).expect("a written line parses");
    assert_eq!(again.to_line().expect("and writes again"), line, "round trip");
});
