//! The survival fixture matrix reader and the contract it runs: never a panic.
#![no_main]

use codewhale_engine::compaction::matrix::Matrix;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(matrix) = Matrix::parse(text) {
        let _ = matrix.run();
    }
});
