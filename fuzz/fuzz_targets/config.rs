//! A config file, read as the user's and as a workspace's: never a panic, and every error
//! names a line within the file.
#![no_main]

use codewhale_engine::config::{parse_scoped, ConfigError, Scope};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for scope in [Scope::User, Scope::Workspace] {
        match parse_scoped(std::path::Path::new("config.toml"), text, scope) {
            Err(ConfigError::Invalid { line, .. }) => {
                assert!(line >= 1 && line <= text.lines().count().max(1), "line {line}")
            }
            _ => {}
        }
    }
});
