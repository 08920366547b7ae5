//! The engine's integration tests: real HTTP to the in-process mock provider, real journal
//! files in temporary directories.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod suite;
