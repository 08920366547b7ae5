//! The helper's side: read its arguments, apply the [`Rules`] to this very process with
//! Landlock, and exec the command — the body of the hidden `codewhale sandbox-exec`.
//!
//! The ruleset handles every file-system right this kernel's Landlock ABI knows except device
//! ioctls (reads are not what the sandbox restricts), grants the read rights beneath `/`, and
//! every handled right beneath each writable root and on a few device files (`/dev/null` and
//! its kind) that ordinary programs write to. With `network = false` it also handles TCP bind
//! and connect and grants neither (ABI 4 and later). Invariants: the ruleset is built for the
//! exact ABI the kernel reports, and anything short of full enforcement is an error — the
//! command is then not run at all; `restrict_self()` also sets `no_new_privs`, so a setuid
//! program cannot shed the sandbox; the restriction is inherited by every child and cannot be
//! lifted, so a `setsid` grandchild stays confined.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::Rules;

/// Device files commands may write to whatever the mode: writing to them changes no file.
const DEVICES: [&str; 6] =
    ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// Why the helper could not run the command confined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    #[error(
        "bad arguments: {0}; the form is `codewhale sandbox-exec [--write PATH]... \
         [--no-network] [--ns [--ro PATH]...] -- PROGRAM [ARGS]...` (Codewhale starts it \
         itself)"
    )]
    Usage(String),
    #[error(
        "this kernel offers no Landlock, so the command was not run; set [sandbox] mode = \
         \"off\" to run commands unconfined"
    )]
    Unsupported,
    #[error(
        "cannot build the sandbox: {0}; the command was not run (set [sandbox] mode = \"off\" \
         to run commands unconfined)"
    )]
    Ruleset(#[from] landlock::RulesetError),
    #[error(
        "the kernel enforced the sandbox only in part, so the command was not run; set \
         [sandbox] mode = \"off\" to run commands unconfined"
    )]
    Partial,
    #[error("cannot run {program}: {source}")]
    Exec { program: String, source: std::io::Error },
    #[error(
        "cannot set up the command's namespaces ({step}: {reason}), so it was not run; set \
         [sandbox] namespaces = false to guard .git by put-back instead"
    )]
    Namespace { step: &'static str, reason: String },
}

/// The ABIs this build knows, newest first, with their number.
const KNOWN: [(u8, ABI); 6] =
    [(6, ABI::V6), (5, ABI::V5), (4, ABI::V4), (3, ABI::V3), (2, ABI::V2), (1, ABI::V1)];

/// The newest Landlock ABI both this kernel and this build support, or `None` when the kernel
/// offers no Landlock. Costs a few system calls (a ruleset is created for each version tried
/// and closed again; nothing is restricted).
pub fn probe() -> Option<u8> {
    KNOWN.iter().find(|(_, abi)| supports(*abi)).map(|(n, _)| *n)
}

/// [`probe`], asked once per process.
pub fn abi() -> Option<u8> {
    static ABI_OF_KERNEL: std::sync::OnceLock<Option<u8>> = std::sync::OnceLock::new();
    *ABI_OF_KERNEL.get_or_init(probe)
}

fn abi_of(n: u8) -> Option<ABI> {
    KNOWN.iter().find(|(k, _)| *k == n).map(|(_, abi)| *abi)
}

/// Whether the kernel handles what `abi` added: its file-system rights, TCP (ABI 4) and
/// scopes (ABI 6). Later ABIs add only audit logging and thread synchronisation, which cannot
/// be told apart without restricting a process, so 6 is the highest this reports.
fn supports(abi: ABI) -> bool {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi));
    if abi >= ABI::V4 {
        ruleset = ruleset.and_then(|r| r.handle_access(AccessNet::from_all(abi)));
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.and_then(|r| r.scope(Scope::from_all(abi)));
    }
    ruleset.and_then(|r| r.create()).is_ok()
}

/// The rights the ruleset handles: every file-system right of `abi` but device ioctls.
fn handled(abi: ABI) -> landlock::BitFlags<AccessFs> {
    let all = AccessFs::from_all(abi);
    if abi >= ABI::V5 {
        all & !AccessFs::IoctlDev
    } else {
        all
    }
}

/// What the helper was asked to do: its rules, the read-only binds of a namespace run and the
/// command after `--`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HelperArgs {
    pub rules: Rules,
    /// `--ro PATH`: bound read-only in the command's mount namespace (only with `--ns`).
    pub read_only: Vec<PathBuf>,
    /// `--ns`: run the command in user, mount and PID namespaces of its own
    /// ([`super::namespace`]).
    pub namespaces: bool,
    /// `--init`: the second stage, started as the first process of the PID namespace.
    pub init: bool,
    /// `--probe`: try the whole namespace setup and say which step failed, running nothing.
    pub probe: bool,
    pub command: Vec<OsString>,
}

/// Splits the helper's arguments into the rules and the command after `--`.
pub fn parse_args(args: &[OsString]) -> Result<HelperArgs, SandboxError> {
    let mut parsed =
        HelperArgs { rules: Rules { writable: Vec::new(), network: true }, ..Default::default() };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--write") => match it.next() {
                Some(path) => parsed.rules.writable.push(PathBuf::from(path)),
                None => return Err(SandboxError::Usage("--write needs a path".into())),
            },
            Some("--ro") => match it.next() {
                Some(path) => parsed.read_only.push(PathBuf::from(path)),
                None => return Err(SandboxError::Usage("--ro needs a path".into())),
            },
            Some("--no-network") => parsed.rules.network = false,
            Some("--ns") => parsed.namespaces = true,
            Some("--init") => parsed.init = true,
            Some("--probe") if parsed.command.is_empty() => {
                parsed.probe = true;
                return Ok(parsed);
            }
            Some("--") => {
                parsed.command = it.cloned().collect();
                if parsed.command.is_empty() {
                    return Err(SandboxError::Usage("no command after --".into()));
                }
                return Ok(parsed);
            }
            _ => {
                return Err(SandboxError::Usage(format!("unexpected {:?}", arg.to_string_lossy())))
            }
        }
    }
    Err(SandboxError::Usage("no `--` before the command".into()))
}

/// Confines this process to `rules` and execs `command`; returns only on failure (the
/// command then never ran).
pub fn exec_confined(rules: &Rules, command: &[OsString]) -> SandboxError {
    match restrict(rules) {
        Ok(()) => {}
        Err(err) => return err,
    }
    let Some((program, args)) = command.split_first() else {
        return SandboxError::Usage("no command after --".into());
    };
    let source = std::process::Command::new(program).args(args).exec();
    SandboxError::Exec { program: program.to_string_lossy().into_owned(), source }
}

/// Applies `rules` to this process (and so to everything it execs and starts).
pub fn restrict(rules: &Rules) -> Result<(), SandboxError> {
    let abi = probe().and_then(abi_of).ok_or(SandboxError::Unsupported)?;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled(abi))?;
    if !rules.network {
        if abi < ABI::V4 {
            return Err(SandboxError::Partial);
        }
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    let devices = DEVICES.iter().filter(|d| std::path::Path::new(d).exists());
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(&rules.writable, handled(abi)))?
        .add_rules(path_beneath_rules(devices, handled(abi)))?
        .restrict_self()?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        RulesetStatus::PartiallyEnforced | RulesetStatus::NotEnforced => Err(SandboxError::Partial),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_round_trip_through_the_rules() {
        let rules = Rules { writable: vec!["/w".into(), "/tmp".into()], network: false };
        let mut args = rules.to_args();
        args.extend(os(&["--", "bash", "-c", "echo --write"]));
        let parsed = parse_args(&args).unwrap();
        assert_eq!(parsed.rules, rules);
        assert_eq!(parsed.command, os(&["bash", "-c", "echo --write"]));
        assert!(!parsed.namespaces && parsed.read_only.is_empty());
        let ns = parse_args(&os(&["--ns", "--ro", "/w/.git", "--write", "/w", "--", "x"])).unwrap();
        assert!(ns.namespaces && !ns.init);
        assert_eq!(ns.read_only, [PathBuf::from("/w/.git")]);
        assert!(parse_args(&os(&["--probe"])).unwrap().probe);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let e = |args: &[&str]| parse_args(&os(args)).unwrap_err().to_string();
        assert!(e(&["--write"]).contains("--write needs a path"));
        assert!(e(&["--"]).contains("no command after --"));
        assert!(e(&["--bogus", "--", "x"]).contains("unexpected \"--bogus\""));
        assert!(e(&["--write", "/w"]).contains("no `--`"));
        assert!(e(&["--ro"]).contains("--ro needs a path"));
    }
}
