//! `codewhale compact [--session ID | --last] [--focus TEXT]`: one manual compaction pass on an
//! existing session, without the terminal UI.
//!
//! Prints the outcome ("compacted N entries: before → after tokens"). Exit 0 when a record was
//! written; 1 when the pass was refused or failed (the reason on stderr; nothing was changed).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::config::Env;
use codewhale_engine::protocol::{Event, Op};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineParams};

use crate::cli::{CompactArgs, GlobalArgs};

/// Runs the pass and returns the exit code.
pub fn run(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    args: CompactArgs,
) -> anyhow::Result<ExitCode> {
    codewhale_engine::tokens::warm_up();
    let _log = crate::logging::init(home);
    let workspace = match workspace {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let resume = match args.session {
        Some(id) => Resume::Id(id),
        None => Resume::Last,
    };
    let params = EngineParams {
        home: home.to_path_buf(),
        workspace,
        overrides: super::exec::overrides(global, None),
        env: Env::from_process(),
        resume,
        interactive: false,
        retry: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(compact(params, args.focus))
}

async fn compact(params: EngineParams, focus: Option<String>) -> anyhow::Result<ExitCode> {
    let (handle, mut events) = Engine::spawn(params)?;
    handle.submit(Op::Compact { focus });
    let mut code = None;
    while let Some(msg) = events.recv().await {
        match msg.event {
            Event::CompactionFinished {
                path,
                tokens_before,
                tokens_after,
                covered,
                retained,
                ..
            } => {
                println!(
                    "compacted {covered} entries ({path}, {retained} user messages kept verbatim): \
                     {tokens_before} → {tokens_after} tokens (estimated)"
                );
                code = Some(ExitCode::SUCCESS);
                handle.submit(Op::Shutdown);
            }
            Event::CompactionRefused { reason } => {
                eprintln!("codewhale: compaction refused: {reason}");
                code = Some(ExitCode::from(1));
                handle.submit(Op::Shutdown);
            }
            Event::CompactionFailed { reason } => {
                eprintln!("codewhale: compaction failed, nothing was changed: {reason}");
                code = Some(ExitCode::from(1));
                handle.submit(Op::Shutdown);
            }
            Event::ShutdownComplete => break,
            _ => {}
        }
    }
    code.ok_or_else(|| {
        anyhow::anyhow!("the engine stopped before the pass finished; see the log in the logs folder of the Codewhale home")
    })
}
