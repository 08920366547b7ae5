//! `codewhale exec [--session ID | --last] [--json] [--approval MODE] [PROMPT | -]` (and
//! `codewhale -p`): one user turn with its tool loop, no terminal UI.
//!
//! The prompt is PROMPT's words; without them, or with `-`, a piped standard input read to its
//! end (at most 1 MiB). With PROMPT given, standard input is never read for the prompt; a
//! terminal on standard input is never taken for a prompt ("no prompt", exit 2).
//!
//! Prints the final assistant text on stdout (with `--json`, every engine event as one JSON
//! line instead). Exit codes (docs/cli.md): 0 when the turn completed, 1 when it failed or was
//! interrupted (the reason on stderr as one sentence), 2 for bad usage. A call that needs
//! approval is asked about on the terminal when stdin and stderr are one (and `--json` is off);
//! without a terminal it is denied with a message the model reads. Ctrl+C, SIGTERM and SIGHUP
//! interrupt the turn alike (the running command's group is ended, the streamed part of the
//! reply is kept); the journal stays valid.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::Resume;
use codewhale_engine::{Engine, EngineHandle, EngineParams, EventReceiver};
use codewhale_engine::{Env, Overrides};
use codewhale_protocol::{
    ApprovalOffer, ApprovalScope, Event, EventMsg, Op, SubmissionId, TurnStatus,
};

use crate::cli::{ExecArgs, GlobalArgs};

/// The command-line overrides of the configuration.
pub fn overrides(global: &GlobalArgs) -> Overrides {
    Overrides {
        provider: global.provider.map(|p| p.name().to_owned()),
        model: global.model.clone(),
        base_url: global.base_url.clone(),
        context_window: global.context_window,
        approval: global.approval.map(Into::into),
    }
}

/// Runs the turn and returns the exit code.
pub fn run(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    args: ExecArgs,
) -> anyhow::Result<ExitCode> {
    // No tokenizer warm-up for plain output: a one-prompt turn is decided by the cheap upper
    // bound, and the encoder is built only when a budget decision needs exact counts
    // (docs/architecture.md, *Budget and tokens*). The redaction rules are needed on the first
    // append: compiled while the config loads.
    codewhale_engine::warm_up_redaction();
    if args.json {
        // `--json` reports figures: the last one is exact (what `codewhale context` says after
        // it), so the encoder is built on another thread while the model answers.
        codewhale_engine::warm_up();
    }
    let _log = crate::logging::init(home);
    let piped = super::prompt::reads_stdin(&args.prompt);
    let stdin = std::io::stdin();
    let prompt = match super::prompt::read(&args.prompt, stdin.is_terminal(), &mut stdin.lock()) {
        Ok(prompt) => prompt,
        Err(e) => {
            errln!("codewhale: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // Each image is checked before anything starts: a refused one ends the command with the
    // reason, and no session is touched. Those past the most a message carries are not read:
    // the engine refuses them in one sentence.
    let mut images = Vec::with_capacity(args.image.len());
    for (i, path) in args.image.iter().enumerate() {
        if i < codewhale_engine::images::MAX_PER_MESSAGE {
            if let Err(e) = codewhale_engine::images::load(path) {
                errln!("codewhale: cannot send the image {}: {e}", path.display());
                return Ok(ExitCode::from(2));
            }
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        images.push(absolute.to_string_lossy().into_owned());
    }
    let workspace = super::workspace_dir(workspace)?;
    // `@shot.png` in the prompt sends the image, as in the TUI.
    let mentioned = codewhale_engine::images::mentioned(&prompt, &workspace);
    let resume = match (args.session, args.last) {
        (Some(id), _) => Resume::Id(id),
        (None, true) => Resume::Last,
        (None, false) => Resume::New,
    };
    // Reading the prompt from stdin uses it up: nobody is left to answer approvals there.
    let can_ask =
        !(args.json || piped) && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let params = EngineParams {
        home: home.to_path_buf(),
        workspace,
        overrides: overrides(global),
        env: Env::from_process(),
        resume,
        interactive: can_ask,
        retry: None,
        front_end: codewhale_engine::FrontEnd::Cli,
        home_hint: global.home.clone(),
        sandbox_helper: crate::sandbox_helper::path(),
    };
    let runtime = super::runtime()?;
    runtime.block_on(exec(params, Message { prompt, mentioned, images }, args.json))
}

/// Asks on the terminal whether a call may run: `Some(scope)` to run it, `None` to deny.
/// `offer` is the first "always" the engine offers for this call, if any.
fn ask(
    name: &str,
    input: &serde_json::Value,
    reason: &str,
    offer: Option<&ApprovalOffer>,
) -> Option<ApprovalScope> {
    let shown = match (name, input.get("command"), input.get("path")) {
        ("shell", Some(command), _) => command.as_str().unwrap_or_default().to_owned(),
        (_, _, Some(path)) => path.as_str().unwrap_or_default().to_owned(),
        _ => input.to_string(),
    };
    // After a refused write: only an explicit `u` reruns the command without the sandbox, and
    // only `g` runs it with `.git` writable.
    let special = offer.and_then(|o| match o.scope {
        ApprovalScope::Unconfined => Some(("u", o)),
        ApprovalScope::GitWritable => Some(("g", o)),
        _ => None,
    });
    if let Some((key, offer)) = special {
        errout!("codewhale: {name} `{shown}`: {reason} [{key}] {} / [N]o: ", offer.label);
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok()?;
        return (line.trim().eq_ignore_ascii_case(key)).then_some(offer.scope);
    }
    let always = offer.map(|o| format!(" / [a] {}", o.label)).unwrap_or_default();
    errout!("codewhale: allow {name} `{shown}`? ({reason}) [y]es{always} / [N]o: ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(ApprovalScope::Once),
        "a" | "always" => offer.map(|o| o.scope).or(Some(ApprovalScope::Once)),
        _ => None,
    }
}

/// How long a turn has to end after a stop signal: a second, plus the 2 s its running
/// commands' process groups get to exit before they are killed.
const STOP_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);
/// The exit code when a signal ended the process before the turn could (128 + SIGTERM).
const STOPPED: u8 = 143;

/// Ends the process now, without waiting for the runtime's blocking tasks (a process group's
/// grace, a stuck read). Safe for the journal: every entry is synced as it is appended, and
/// a session is never left half-written by a kill (docs/journal-format.md).
fn stop_now() -> ! {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(i32::from(STOPPED))
}

/// The signals that stop a turn: SIGINT (Ctrl+C), SIGTERM (`kill`, a service manager) and
/// SIGHUP (the terminal or SSH session closed). Each interrupts the turn the same way, so the
/// running shell call's process group is ended and what was streamed is kept; none kills the
/// process outright. Listening starts before the session opens, so none is missed.
struct Stops {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Stops {
    fn new() -> anyhow::Result<Stops> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind| signal(kind).context("cannot listen for signals");
        Ok(Stops {
            int: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
            hup: listen(SignalKind::hangup())?,
        })
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
            _ = self.hup.recv() => {}
        }
    }
}

/// What `exec` sends: the prompt, the images it mentions with `@`, and those of `--image`.
struct Message {
    prompt: String,
    mentioned: Vec<String>,
    images: Vec<String>,
}

async fn exec(params: EngineParams, message: Message, json: bool) -> anyhow::Result<ExitCode> {
    let mut stops = Stops::new()?;
    let (handle, mut events) = Engine::spawn(params)?;
    let mut run = Run::new(handle, message, json);
    while let Some(msg) = run.next_event(&mut events, &mut stops).await {
        run.print(&msg)?;
        if run.follow(msg).await {
            break;
        }
    }
    run.finish()
}

/// One `exec` following its engine: what the loop over the events keeps from one event to the
/// next. The turn's outcome is known once its `turn_finished` came; the process exits only
/// after `shutdown_complete` (the journal synced) or a stop signal's deadline.
struct Run {
    handle: EngineHandle,
    json: bool,
    /// Sent once the session says which custom commands it has: `/NAME args` runs one.
    message: Option<Message>,
    turn: Option<SubmissionId>,
    outcome: Option<(TurnStatus, String)>,
    errors: Vec<String>,
    stdout: std::io::StdoutLock<'static>,
    stdout_closed: bool,
    tool_lines: super::notices::ToolLines,
    /// After a stop signal the turn has a second (plus its commands' grace to exit) to end,
    /// whatever it waits on; a second signal, or a turn that does not end, ends the process —
    /// the journal is append-only and synced entry by entry, so nothing is lost.
    deadline: Option<tokio::time::Instant>,
}

impl Run {
    fn new(handle: EngineHandle, message: Message, json: bool) -> Run {
        Run {
            handle,
            json,
            message: Some(message),
            turn: None,
            outcome: None,
            errors: Vec::new(),
            stdout: std::io::stdout().lock(),
            stdout_closed: false,
            tool_lines: super::notices::ToolLines::default(),
            deadline: None,
        }
    }

    /// The engine's next event; a stop signal interrupts the turn meanwhile, and a second one
    /// (or the deadline passing) ends the process. `None` when the engine is gone.
    async fn next_event(
        &mut self,
        events: &mut EventReceiver,
        stops: &mut Stops,
    ) -> Option<EventMsg> {
        loop {
            let deadline = self.deadline;
            let overdue = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending::<()>().await,
                }
            };
            return tokio::select! {
                msg = events.recv() => msg,
                () = stops.next() => {
                    if self.deadline.is_some() {
                        errln!("codewhale: stopped");
                        stop_now();
                    }
                    self.handle.submit(Op::Interrupt);
                    self.deadline = Some(tokio::time::Instant::now() + STOP_WITHIN);
                    continue;
                }
                () = overdue => {
                    errln!("codewhale: the turn did not stop in time after the signal; stopped");
                    stop_now();
                }
            };
        }
    }

    /// Prints the event: as a JSON line with `--json`, otherwise the notices and tool lines
    /// it makes on stderr.
    fn print(&mut self, msg: &EventMsg) -> anyhow::Result<()> {
        if self.json && !self.stdout_closed {
            let line = serde_json::to_string(msg).context("cannot encode an event as JSON")?;
            // A closed pipe (`| head`) is not an error: the reader has what it wanted. The turn
            // still runs to its end, so the session is left whole rather than cut mid-turn.
            let line = crate::output::for_stdout(&line);
            self.stdout_closed = writeln!(self.stdout, "{line}").is_err();
        }
        if !self.json {
            if let Some(line) = super::notices::line(&msg.event) {
                errln!("codewhale: {line}");
            }
            if let Some(line) = self.tool_lines.line(&msg.event) {
                errln!("codewhale: {line}");
            }
        }
        Ok(())
    }

    /// Acts on the event: sends the message once the session is configured, asks about
    /// approvals, keeps errors and the turn's outcome. True when the engine has shut down.
    async fn follow(&mut self, msg: EventMsg) -> bool {
        match msg.event {
            Event::SessionConfigured { commands, .. } => {
                if let Some(Message { prompt, mentioned, images }) = self.message.take() {
                    let op = match custom_command(&prompt, &commands) {
                        Some((name, args)) => Op::RunCommand { name, args },
                        None => Op::UserInput { text: prompt, attachments: mentioned, images },
                    };
                    self.turn = Some(self.handle.submit(op));
                }
            }
            Event::ApprovalNeeded { call_id, name, input, reason, offers, .. } => {
                let offer = offers.into_iter().next();
                let answer = tokio::task::spawn_blocking(move || {
                    ask(&name, &input, &reason, offer.as_ref())
                })
                .await
                .unwrap_or(None);
                self.handle.submit(match answer {
                    Some(scope) => Op::Approve { call_id, scope },
                    None => Op::Deny { call_id, reason: None },
                });
            }
            Event::Error { message, .. } => self.errors.push(message),
            Event::MessageTakenBack { text } if Some(msg.id) != self.turn && !self.json => {
                errln!("codewhale: {}", set_aside_line(&text));
            }
            Event::TurnFinished { status, text, .. } if Some(msg.id) == self.turn => {
                self.outcome = Some((status, text));
                self.handle.submit(Op::Shutdown);
                // Ended: closing (a sync of the journal) gets a little longer.
                self.deadline =
                    self.deadline.map(|_| tokio::time::Instant::now() + STOP_WITHIN * 3);
            }
            Event::ShutdownComplete => return true,
            _ => {}
        }
        false
    }

    /// Prints the answer and says how the turn ended: the exit code.
    fn finish(mut self) -> anyhow::Result<ExitCode> {
        let _ = self.stdout.flush();
        drop(self.stdout);
        let json = self.json;
        let Some((status, text)) = self.outcome else {
            anyhow::bail!("the engine stopped before the turn finished; see the log in the logs folder of the Codewhale home");
        };
        // An answer is printed only once it is durably in the journal: a turn whose write failed
        // is a failed turn, and its reply is not shown as an answer.
        if !json && !text.is_empty() && status != TurnStatus::Failed {
            // A reader that left (`| head -c 10`) makes this fail, which is nobody's error.
            let text = crate::output::for_stdout(text.trim_end());
            let _ = writeln!(std::io::stdout(), "{text}");
        }
        Ok(match status {
            TurnStatus::Completed => ExitCode::SUCCESS,
            TurnStatus::Interrupted => {
                if !json {
                    errln!("codewhale: the turn was interrupted; the session keeps what was done");
                }
                ExitCode::from(1)
            }
            _ => {
                if !json {
                    let reason = self.errors.last().map_or("the turn failed", String::as_str);
                    errln!("codewhale: {reason}");
                }
                ExitCode::from(1)
            }
        })
    }
}

/// A prompt whose first word is `/NAME` of a custom command found for this workspace (one
/// an untrusted workspace holds included: the engine says why it does not run): its name and
/// the rest as its arguments. Any other prompt — one that starts with a path, one naming a
/// built-in command of the terminal UI — is sent as written.
fn custom_command(
    prompt: &str,
    commands: &[codewhale_protocol::CustomCommandInfo],
) -> Option<(String, String)> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if crate::tui::slash::SlashCommand::from_name(name).is_some() {
        return None;
    }
    commands.iter().find(|c| c.name == name)?;
    Some((name.to_owned(), args.trim().to_owned()))
}

/// What `exec` says when opening set aside a message the last run never got a reply to.
fn set_aside_line(text: &str) -> String {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let mut preview: String = first.chars().take(60).collect();
    if preview.len() < first.len() {
        preview.push('…');
    }
    format!(
        "the session's last message (\"{preview}\") never got a reply, so it was set aside and \
         is not sent with this prompt; send it again if it is still wanted"
    )
}
