//! The `codewhale` binary's integration tests: the real executable against the in-process mock
//! provider, with homes and workspaces in temporary directories.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod suite;
