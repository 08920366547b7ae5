//! `codewhale sandbox-exec [--write PATH]... [--no-network] [--ns [--ro PATH]...] -- PROGRAM
//! [ARGS]...`: the hidden helper that confines one command the model runs.
//!
//! The engine starts every shell command through this binary (its own path,
//! [`std::env::current_exe`], is passed to the engine as the sandbox helper). Without `--ns`
//! the helper applies the rules to itself ([`codewhale_engine::sandbox::confine`]) and execs
//! the program, keeping its pid and process group. With `--ns` it is the first stage of the
//! namespaces ([`codewhale_engine::sandbox::namespace`]): it binds the `--ro` paths read-only,
//! starts `sandbox-exec --init` as the first process of a new PID namespace (which mounts
//! `/proc`, applies the rules and starts the program), and exits with the program's status.
//! `--probe` tries that setup and prints `ok` or the step that failed. It is dispatched before
//! the command line is parsed, so it costs one exec and a few system calls. Exit codes follow
//! `env(1)`: 125 when the sandbox cannot be applied (the program never ran), 126 when the
//! program cannot be run, 127 when it does not exist.

use std::ffi::OsString;
use std::process::ExitCode;

use codewhale_engine::sandbox::confine::{self, SandboxError};
use codewhale_engine::sandbox::namespace;

/// Confines this process and runs the command; returns its exit code, or the helper's when
/// that failed.
pub fn run(args: &[OsString]) -> ExitCode {
    let parsed = match confine::parse_args(args) {
        Ok(parsed) => parsed,
        Err(err) => return failed(&err),
    };
    if parsed.probe {
        let outcome = if parsed.init { namespace::probe_init() } else { namespace::probe() };
        namespace::report_probe(&outcome);
        return ExitCode::from(u8::from(outcome.is_err()));
    }
    let outcome = if parsed.init {
        namespace::init(&parsed).map(|finished| {
            if let Some(line) = finished.left_line() {
                errln!("{line}");
            }
            finished.code
        })
    } else if parsed.namespaces {
        namespace::run(&parsed)
    } else {
        Err(confine::exec_confined(&parsed.rules, &parsed.command))
    };
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
        Err(err) => failed(&err),
    }
}

fn failed(err: &SandboxError) -> ExitCode {
    errln!("codewhale sandbox-exec: {err}");
    ExitCode::from(match err {
        SandboxError::Exec { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 127,
        SandboxError::Exec { .. } => 126,
        _ => 125,
    })
}
