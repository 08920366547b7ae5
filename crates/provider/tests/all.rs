//! The provider crate's integration tests: the real reqwest client against the in-process
//! mock server, over real HTTP on 127.0.0.1.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod suite;
