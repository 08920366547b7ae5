//! `codewhale sandbox-exec [--write PATH]... [--no-network] -- PROGRAM [ARGS]...`: the hidden
//! helper that confines one command the model runs and then becomes it.
//!
//! The engine starts every shell command through this binary (its own path,
//! [`std::env::current_exe`], is passed to the engine as the sandbox helper); the helper
//! applies the rules to itself ([`codewhale_engine::sandbox::confine`]) and execs the
//! program, keeping its pid and process group. It is dispatched before the command line is
//! parsed, so it costs one exec and a few system calls. Exit codes follow `env(1)`: 125 when
//! the sandbox cannot be applied (the program never ran), 126 when the program cannot be
//! run, 127 when it does not exist.

use std::ffi::OsString;
use std::process::ExitCode;

use codewhale_engine::sandbox::confine::{self, SandboxError};

/// Confines this process and execs the command; returns only when that failed.
pub fn run(args: &[OsString]) -> ExitCode {
    let err = match confine::parse_args(args) {
        Ok((rules, command)) => confine::exec_confined(&rules, &command),
        Err(err) => err,
    };
    errln!("codewhale sandbox-exec: {err}");
    ExitCode::from(match &err {
        SandboxError::Exec { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 127,
        SandboxError::Exec { .. } => 126,
        _ => 125,
    })
}
