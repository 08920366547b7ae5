//! The sandbox of the commands the model runs: what `[sandbox]` configures, what one session
//! resolves it to, and how a command is started confined.
//!
//! Confinement is Landlock (Linux). The workspace forbids `unsafe`, and applying a ruleset to a
//! child between `fork` and `exec` (`pre_exec`) is unsafe, so a command is confined by a helper:
//! the front end's own binary, re-executed as `codewhale sandbox-exec --write DIR … -- PROGRAM
//! ARGS`, applies the ruleset to itself with the `landlock` crate's safe `restrict_self()` and
//! then execs the program ([`confine::exec_confined`]). The helper keeps the pid it was started
//! with, so the process-group handling of the shell tool is unchanged.
//!
//! Where the kernel allows it, the helper also runs each command in user, mount and PID
//! namespaces of its own ([`namespace`]): every `.git` of the workspace, `.codewhale/` and the
//! instruction files are read-only bind mounts there, and no ancestor is visible in `/proc`.
//! Whether it can is decided once per process by trying the whole setup
//! ([`namespace::availability`]); `[sandbox] namespaces = false` or `CODEWHALE_SANDBOX=fallback`
//! chooses the fallback, where the guard puts back what a command changed (`tools::guard`).
//!
//! Invariants: reads are never restricted; writes are allowed only beneath the [`Rules`]'
//! writable roots (plus a few device files such as `/dev/null`); a helper that cannot enforce
//! the whole ruleset refuses to run the command (it never runs it unconfined). A session
//! without a helper (an embedding that passes none, such as the engine's own tests) or on a
//! kernel without Landlock runs commands unconfined, and the latter says so once.
//! Neighbours: `config` parses `[sandbox]`, `tools::shell` starts commands through
//! [`Sandbox::command`], `turn::calls` offers the unconfined rerun, [`refusal`] reads refused
//! writes out of a failed command's output, [`keys`] keeps the provider keys out of reach.

pub mod confine;
pub mod keys;
pub mod namespace;
pub mod refusal;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The hidden subcommand of the `codewhale` binary that confines and execs a command.
pub const HELPER_SUBCOMMAND: &str = "sandbox-exec";

pub use codewhale_protocol::SandboxMode;

/// `[sandbox]` as configured; every field optional (absent = the default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxConfig {
    /// Default: `workspace-write` where the kernel offers Landlock, else `off`.
    pub mode: Option<SandboxMode>,
    /// More directories commands may write to (relative ones are relative to the workspace,
    /// `~/` is the user's home).
    pub writable: Vec<String>,
    /// Whether commands may open TCP connections and listen (default true).
    pub network: Option<bool>,
    /// Whether commands run in namespaces where the kernel allows it (default true; false
    /// chooses the put-back guard).
    pub namespaces: Option<bool>,
    /// Whether the model's commands run with `.git` writable, under the guard, without asking
    /// (default false).
    pub git_writable: Option<bool>,
}

/// The variable that forces the fallback (`CODEWHALE_SANDBOX=fallback`).
pub const FALLBACK_VAR: &str = "CODEWHALE_SANDBOX";

/// Whether a workspace's `mode` would confine less than the user's own setting (absent there:
/// `workspace-write`): honoured only once the workspace is trusted.
pub fn loosens_mode(workspace: Option<SandboxMode>, user: Option<SandboxMode>) -> bool {
    let user = user.unwrap_or(SandboxMode::WorkspaceWrite);
    workspace.is_some_and(|mode| !mode.at_least_as_strict_as(user))
}

/// What the helper enforces: where writes are allowed and whether TCP is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    /// Absolute, canonical directories (or files) beneath which writing is allowed.
    pub writable: Vec<PathBuf>,
    /// TCP connect and bind allowed (denying them needs Landlock ABI 4).
    pub network: bool,
}

impl Rules {
    /// Whether `path` (absolute) lies beneath one of the writable roots.
    pub fn allows_write(&self, path: &Path) -> bool {
        self.writable.iter().any(|root| path.starts_with(root))
    }

    /// The helper's arguments before `--`, as [`confine::parse_args`] reads them.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args = Vec::with_capacity(self.writable.len() * 2 + 1);
        for root in &self.writable {
            args.push("--write".into());
            args.push(root.clone().into_os_string());
        }
        if !self.network {
            args.push("--no-network".into());
        }
        args
    }
}

/// A session's sandbox, resolved: the helper to start commands through and what it enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    helper: PathBuf,
    mode: SandboxMode,
    rules: Rules,
    /// Commands run in namespaces of their own ([`namespace`]).
    namespaces: bool,
}

impl Sandbox {
    /// A sandbox that starts commands through `helper` under `rules`.
    pub fn new(helper: PathBuf, mode: SandboxMode, rules: Rules) -> Sandbox {
        Sandbox { helper, mode, rules, namespaces: false }
    }

    /// The same sandbox, running commands in namespaces of their own.
    pub fn with_namespaces(mut self, namespaces: bool) -> Sandbox {
        self.namespaces = namespaces;
        self
    }

    /// Whether commands run in namespaces of their own.
    pub fn namespaces(&self) -> bool {
        self.namespaces
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The same helper and network rule with a writable set of `writable` only (plan mode's
    /// private temp dir): read-only everywhere else, the workspace included.
    pub fn read_only_except(&self, writable: Vec<PathBuf>) -> Sandbox {
        let rules = Rules { writable, network: self.rules.network };
        Sandbox {
            helper: self.helper.clone(),
            mode: SandboxMode::ReadOnly,
            rules,
            namespaces: self.namespaces,
        }
    }

    /// `program args…`, started confined: `HELPER sandbox-exec RULES -- program args…`; with
    /// namespaces and `read_only` given, in namespaces of its own with those paths bound
    /// read-only (`--ns --ro PATH…`).
    pub fn command<I, S>(
        &self,
        program: &str,
        args: I,
        read_only: Option<&[PathBuf]>,
    ) -> tokio::process::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = tokio::process::Command::new(&self.helper);
        cmd.arg(HELPER_SUBCOMMAND);
        if let Some(read_only) = read_only.filter(|_| self.namespaces) {
            cmd.args(namespace::args(read_only));
        }
        cmd.args(self.rules.to_args()).arg("--").arg(program).args(args);
        // Nothing of the key hand-over reaches the helper (it reads no keys).
        cmd.env_remove(keys::KEYS_FD);
        cmd
    }

    /// The command line a program is appended to so that it starts confined:
    /// `HELPER sandbox-exec RULES --` (for MCP servers, which are started elsewhere).
    pub fn launcher(&self) -> Vec<String> {
        let mut line = vec![self.helper.display().to_string(), HELPER_SUBCOMMAND.to_owned()];
        line.extend(self.rules.to_args().into_iter().map(|a| a.to_string_lossy().into_owned()));
        line.push("--".into());
        line
    }
}

/// Gives every stdio MCP server that sets `sandbox = true` the helper as its launcher, so it
/// starts confined like a shell command. Without a sandbox (off, no Landlock, no helper) such
/// servers start as configured, as the notice at start said.
pub fn confine_servers(servers: &mut [codewhale_mcp::ServerConfig], state: &SandboxState) {
    let Some(sandbox) = &state.sandbox else { return };
    for server in servers.iter_mut().filter(|s| s.sandbox) {
        if matches!(server.transport, codewhale_mcp::Transport::Stdio { .. }) {
            server.launcher = sandbox.launcher();
        }
    }
}

/// The sandbox of one session as the user sees it: the mode in effect and, when it confines,
/// how.
#[derive(Debug, Clone)]
pub struct SandboxState {
    /// `None`: commands run unconfined.
    pub sandbox: Option<std::sync::Arc<Sandbox>>,
    /// The mode in effect.
    pub mode: SandboxMode,
    /// What it allows, or why it is off, for `/approval`.
    pub detail: String,
    /// How `.git` and `.codewhale/` are kept from commands, for `/status` (`sandbox:
    /// namespaces …` or `sandbox: Landlock only; .git guarded by put-back (…)`).
    pub structure: String,
    /// Said once when the session opens.
    pub notices: Vec<String>,
}

impl SandboxState {
    /// Whether commands run in namespaces (and so see no ancestor in `/proc`).
    pub fn namespaces(&self) -> bool {
        self.sandbox.as_ref().is_some_and(|s| s.namespaces())
    }
}

/// The words of the fallback, said once and in `/status`.
pub const FALLBACK_WORDS: &str = "sandbox: Landlock only; .git guarded by put-back";

/// Where a session's sandbox comes from.
#[derive(Debug, Clone)]
pub struct Surroundings<'a> {
    pub workspace: &'a Path,
    /// Codewhale's home: a notice says so when a writable root holds it.
    pub home: &'a Path,
    /// The binary that confines (`codewhale`); `None` runs everything unconfined.
    pub helper: Option<&'a Path>,
    /// The Landlock ABI of this kernel (`confine::probe()`), `None` without Landlock.
    pub abi: Option<u8>,
    /// Whether the helper can set up namespaces here ([`namespace::availability`]), or the
    /// step that failed.
    pub namespaces: Result<(), String>,
    /// `CODEWHALE_SANDBOX=fallback` is set.
    pub forced_fallback: bool,
}

/// The first Landlock ABI that can deny TCP connect and bind (Linux 6.7).
pub const NETWORK_ABI: u8 = 4;

/// Resolves `[sandbox]` for a session in `at`.
pub fn resolve(config: &SandboxConfig, at: Surroundings<'_>) -> SandboxState {
    let off = |why: &str, notices: Vec<String>| SandboxState {
        sandbox: None,
        mode: SandboxMode::Off,
        detail: why.to_owned(),
        structure: format!("sandbox: off ({why}); .git guarded by put-back"),
        notices,
    };
    let Some(helper) = at.helper else {
        return off("no sandbox helper in this front end", Vec::new());
    };
    let mode = match mode(config, at.abi) {
        Ok(mode) => mode,
        Err((why, notices)) => return off(why, notices),
    };
    let abi = at.abi.unwrap_or_default();
    let mut notices = Vec::new();
    let writable = writable(config, &at, mode, &mut notices);
    let network = network(config, abi, &mut notices);
    let rules = Rules { writable, network };
    warn_home_writable(&rules, at.home, &mut notices);
    let detail = describe(&rules, abi);
    let why_not = why_no_namespaces(config, &at);
    let structure = match &why_not {
        None => "sandbox: namespaces; every .git, .codewhale/ and the instruction files are \
                 read-only to commands, and no ancestor is visible in /proc"
            .to_owned(),
        Some(why) => {
            let said = format!("{FALLBACK_WORDS} ({why})");
            notices.push(said.clone());
            said
        }
    };
    let sandbox =
        Sandbox::new(helper.to_path_buf(), mode, rules).with_namespaces(why_not.is_none());
    SandboxState { sandbox: Some(std::sync::Arc::new(sandbox)), mode, detail, structure, notices }
}

/// The mode commands run in, given this kernel's Landlock ABI; or why the sandbox is off,
/// with what to tell the user about it.
fn mode(
    config: &SandboxConfig,
    abi: Option<u8>,
) -> Result<SandboxMode, (&'static str, Vec<String>)> {
    match (config.mode, abi) {
        (Some(SandboxMode::Off), _) => Err(("[sandbox] mode = \"off\"", Vec::new())),
        (Some(mode), None) => {
            let notice = format!(
                "[sandbox] mode = \"{mode}\" is set, but this kernel offers no Landlock, so \
                 shell commands run unconfined; use a kernel with Landlock (Linux 5.13 or later, \
                 `lsm=landlock`) or set mode = \"off\" to silence this"
            );
            Err(("this kernel offers no Landlock", vec![notice]))
        }
        (None, None) => {
            let notice = "this kernel offers no Landlock, so shell commands run unconfined \
                          (sandbox off); approvals still decide what runs"
                .to_owned();
            Err(("this kernel offers no Landlock", vec![notice]))
        }
        (Some(mode), Some(_)) => Ok(mode),
        (None, Some(_)) => Ok(SandboxMode::WorkspaceWrite),
    }
}

/// Where commands may write in `mode`: in `workspace-write`, the workspace, the temp dirs and
/// each `[sandbox] writable` path that exists (one that does not is left out, with a notice).
fn writable(
    config: &SandboxConfig,
    at: &Surroundings<'_>,
    mode: SandboxMode,
    notices: &mut Vec<String>,
) -> Vec<PathBuf> {
    let mut writable = Vec::new();
    if mode == SandboxMode::WorkspaceWrite {
        writable.push(canonical(at.workspace));
        writable.push(canonical(&std::env::temp_dir()));
        // Shared memory is a temp dir too (Python's multiprocessing puts semaphores there).
        if Path::new("/dev/shm").is_dir() {
            writable.push(PathBuf::from("/dev/shm"));
        }
        for raw in &config.writable {
            let path = expand(raw, at.workspace);
            match std::fs::canonicalize(&path) {
                Ok(real) => writable.push(real),
                Err(err) => notices.push(format!(
                    "[sandbox] writable: {} is left out ({err}); create it, or remove it from \
                     the list",
                    path.display()
                )),
            }
        }
        writable.dedup();
    }
    writable
}

/// Whether commands may reach the network: `[sandbox] network`, open (with a notice) where
/// the kernel cannot close it.
fn network(config: &SandboxConfig, abi: u8, notices: &mut Vec<String>) -> bool {
    let mut network = config.network.unwrap_or(true);
    if !network && abi < NETWORK_ABI {
        notices.push(format!(
            "[sandbox] network = false needs Landlock ABI {NETWORK_ABI} (Linux 6.7); this kernel \
             has ABI {abi}, so commands can still open network connections"
        ));
        network = true;
    }
    network
}

/// A notice when Codewhale's home lies where commands may write.
fn warn_home_writable(rules: &Rules, home: &Path, notices: &mut Vec<String>) {
    let home = canonical(home);
    if let Some(root) = rules.writable.iter().find(|root| home.starts_with(root)) {
        notices.push(format!(
            "Codewhale's home {} lies under {}, which the sandbox leaves writable: commands can \
             change your config, trust store and sessions there; keep the home elsewhere \
             (CODEWHALE_HOME) to protect it",
            home.display(),
            root.display()
        ));
    }
}

/// Why commands do not get namespaces of their own, if they do not.
fn why_no_namespaces(config: &SandboxConfig, at: &Surroundings<'_>) -> Option<String> {
    if config.namespaces == Some(false) {
        Some("[sandbox] namespaces = false".to_owned())
    } else if at.forced_fallback {
        Some(format!("{FALLBACK_VAR}=fallback"))
    } else {
        at.namespaces.clone().err().map(|step| format!("namespaces unavailable: {step}"))
    }
}

/// Whether `CODEWHALE_SANDBOX=fallback` is set in this process's environment.
pub fn fallback_forced() -> bool {
    std::env::var(FALLBACK_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("fallback"))
}

/// What is writable and whether the network is open, in words.
fn describe(rules: &Rules, abi: u8) -> String {
    let writable = if rules.writable.is_empty() {
        "nothing writable".to_owned()
    } else {
        let roots: Vec<String> = rules.writable.iter().map(|p| p.display().to_string()).collect();
        format!("writable: {}", roots.join(", "))
    };
    let network = if rules.network { "network on" } else { "network off" };
    format!("{writable}; {network}; Landlock ABI {abi}")
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A configured path: `~/…` under the user's home, relative ones under the workspace.
fn expand(raw: &str, workspace: &Path) -> PathBuf {
    if let Some(rest) = raw.strip_prefix("~/") {
        if let Some(home) = dirs::home_dir() {
            return home.join(rest);
        }
    }
    let path = Path::new(raw);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        workspace.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(ws: &'a Path, home: &'a Path, abi: Option<u8>) -> Surroundings<'a> {
        Surroundings {
            workspace: ws,
            home,
            helper: Some(Path::new("/bin/codewhale")),
            abi,
            namespaces: Ok(()),
            forced_fallback: false,
        }
    }

    #[test]
    fn the_default_confines_writes_to_the_workspace_and_the_temp_dir() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let state = resolve(&SandboxConfig::default(), at(ws.path(), home.path(), Some(7)));
        let sandbox = state.sandbox.unwrap();
        assert_eq!(sandbox.mode(), SandboxMode::WorkspaceWrite);
        let ws_real = std::fs::canonicalize(ws.path()).unwrap();
        assert!(sandbox.rules().allows_write(&ws_real.join("src/main.rs")));
        assert!(sandbox.rules().allows_write(&canonical(&std::env::temp_dir()).join("x")));
        assert!(!sandbox.rules().allows_write(Path::new("/etc/passwd")));
        assert!(sandbox.rules().network);
        // The home is in the temp dir here: the user is told it is writable.
        assert!(state.notices.iter().any(|n| n.contains("leaves writable")), "{:?}", state.notices);
        assert_eq!(state.mode, SandboxMode::WorkspaceWrite);
        assert!(state.detail.starts_with("writable: "), "{}", state.detail);
    }

    #[test]
    fn without_landlock_or_a_helper_commands_run_unconfined_and_the_user_is_told_once() {
        let ws = tempfile::tempdir().unwrap();
        let none = resolve(&SandboxConfig::default(), at(ws.path(), ws.path(), None));
        assert!(none.sandbox.is_none());
        assert_eq!(none.notices.len(), 1);
        assert!(none.notices[0].contains("no Landlock"), "{:?}", none.notices);
        let asked = SandboxConfig { mode: Some(SandboxMode::ReadOnly), ..Default::default() };
        let none = resolve(&asked, at(ws.path(), ws.path(), None));
        assert!(none.notices[0].contains("mode = \"read-only\" is set"), "{:?}", none.notices);
        let no_helper = Surroundings { helper: None, ..at(ws.path(), ws.path(), Some(7)) };
        let quiet = resolve(&SandboxConfig::default(), no_helper);
        assert!(quiet.sandbox.is_none() && quiet.notices.is_empty());
        let off = SandboxConfig { mode: Some(SandboxMode::Off), ..Default::default() };
        assert!(resolve(&off, at(ws.path(), ws.path(), Some(7))).sandbox.is_none());
    }

    #[test]
    fn read_only_writes_nowhere_and_network_off_needs_abi_4() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(false),
            ..Default::default()
        };
        let state = resolve(&config, at(ws.path(), home.path(), Some(7)));
        let rules = state.sandbox.unwrap().rules().clone();
        assert!(rules.writable.is_empty() && !rules.network);
        assert!(state.notices.is_empty(), "{:?}", state.notices);
        let old = resolve(&config, at(ws.path(), home.path(), Some(3)));
        assert!(old.sandbox.unwrap().rules().network, "ABI 3 cannot deny TCP");
        assert!(old.notices[0].contains("needs Landlock ABI 4"), "{:?}", old.notices);
    }

    #[test]
    fn extra_writable_paths_resolve_and_missing_ones_are_named() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("out")).unwrap();
        let config = SandboxConfig {
            writable: vec!["out".into(), "/no/such/dir".into()],
            ..Default::default()
        };
        let state = resolve(&config, at(ws.path(), ws.path(), Some(7)));
        let rules = state.sandbox.unwrap().rules().clone();
        assert!(rules.writable.contains(&std::fs::canonicalize(ws.path().join("out")).unwrap()));
        assert!(state.notices.iter().any(|n| n.contains("/no/such/dir is left out")));
    }

    #[test]
    fn the_helper_is_started_with_the_rules_before_the_command() {
        let rules = Rules { writable: vec!["/w".into()], network: false };
        let sandbox = Sandbox::new("/bin/cw".into(), SandboxMode::WorkspaceWrite, rules);
        let cmd = sandbox.command("bash", ["-c", "echo hi"], Some(&[]));
        let args: Vec<String> =
            cmd.as_std().get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(cmd.as_std().get_program(), "/bin/cw");
        assert_eq!(
            args,
            ["sandbox-exec", "--write", "/w", "--no-network", "--", "bash", "-c", "echo hi"]
        );
        assert_eq!(
            sandbox.launcher(),
            ["/bin/cw", "sandbox-exec", "--write", "/w", "--no-network", "--"]
        );
        let stdio = codewhale_mcp::Transport::Stdio {
            command: "npx".into(),
            args: vec![],
            env: vec![],
            env_vars: vec![],
            cwd: None,
        };
        let mut servers = vec![
            codewhale_mcp::ServerConfig::new("boxed", stdio.clone()),
            codewhale_mcp::ServerConfig::new("free", stdio),
        ];
        servers[0].sandbox = true;
        let ns = sandbox.clone().with_namespaces(true);
        let cmd = ns.command("bash", ["-c", "x"], Some(&[PathBuf::from("/w/.git")]));
        let args: Vec<String> =
            cmd.as_std().get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args[..4], ["sandbox-exec", "--ns", "--ro", "/w/.git"]);
        let state = SandboxState {
            sandbox: Some(std::sync::Arc::new(sandbox)),
            mode: SandboxMode::WorkspaceWrite,
            detail: String::new(),
            structure: String::new(),
            notices: Vec::new(),
        };
        confine_servers(&mut servers, &state);
        assert_eq!(servers[0].launcher[..2], ["/bin/cw", "sandbox-exec"]);
        assert!(servers[1].launcher.is_empty(), "servers run unconfined unless they ask");
    }

    #[test]
    fn namespaces_are_used_unless_unavailable_or_turned_off_and_the_fallback_is_said() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let config = SandboxConfig::default();
        let on = resolve(&config, at(ws.path(), home.path(), Some(7)));
        assert!(on.namespaces(), "{}", on.structure);
        assert!(on.structure.starts_with("sandbox: namespaces"), "{}", on.structure);
        let cases = [
            (
                Surroundings {
                    namespaces: Err("unshare: EPERM".into()),
                    ..at(ws.path(), home.path(), Some(7))
                },
                config.clone(),
                "namespaces unavailable: unshare: EPERM",
            ),
            (
                Surroundings { forced_fallback: true, ..at(ws.path(), home.path(), Some(7)) },
                config.clone(),
                "CODEWHALE_SANDBOX=fallback",
            ),
            (
                at(ws.path(), home.path(), Some(7)),
                SandboxConfig { namespaces: Some(false), ..Default::default() },
                "[sandbox] namespaces = false",
            ),
        ];
        for (surroundings, config, why) in cases {
            let state = resolve(&config, surroundings);
            assert!(!state.namespaces());
            let said = format!("{FALLBACK_WORDS} ({why})");
            assert_eq!(state.structure, said);
            assert!(state.notices.contains(&said), "said once: {:?}", state.notices);
        }
    }

    #[test]
    fn modes_parse_and_order_by_strictness() {
        for mode in [SandboxMode::Off, SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
            assert_eq!(mode.as_str().parse::<SandboxMode>().unwrap(), mode);
        }
        assert!("on".parse::<SandboxMode>().unwrap_err().contains("workspace-write"));
        assert!(SandboxMode::ReadOnly.at_least_as_strict_as(SandboxMode::WorkspaceWrite));
        assert!(!SandboxMode::Off.at_least_as_strict_as(SandboxMode::WorkspaceWrite));
    }
}
