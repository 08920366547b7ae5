//! `codewhale compact [--session ID | --last] [--focus TEXT]`: one manual compaction pass on an
//! existing session, without the terminal UI.
//!
//! Prints the outcome on stdout ("compacted (summary, N entries summarized): before → after
//! tokens", or "nothing to compact: why"). Exit 0 when a record was written or there was
//! nothing to shrink; 1 when the pass failed (the reason on stderr; nothing was changed).

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::Env;
use codewhale_engine::Resume;
use codewhale_engine::{Engine, EngineParams};
use codewhale_protocol::{Event, Op};

use crate::cli::{CompactArgs, GlobalArgs};

/// Runs the pass and returns the exit code.
pub fn run(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    args: CompactArgs,
) -> anyhow::Result<ExitCode> {
    codewhale_engine::warm_up();
    let _log = crate::logging::init(home);
    let workspace = super::workspace_dir(workspace)?;
    let resume = match args.session {
        Some(id) => Resume::Id(id),
        None => Resume::Last,
    };
    let params = EngineParams {
        home: home.to_path_buf(),
        workspace,
        overrides: super::exec::overrides(global),
        env: Env::from_process(),
        resume,
        interactive: false,
        retry: None,
        front_end: codewhale_engine::FrontEnd::Cli,
        home_hint: global.home.clone(),
        // A compaction pass runs no commands.
        sandbox_helper: None,
    };
    let runtime = super::runtime()?;
    runtime.block_on(compact(params, args.focus))
}

async fn compact(params: EngineParams, focus: Option<String>) -> anyhow::Result<ExitCode> {
    let (handle, mut events) = Engine::spawn(params)?;
    handle.submit(Op::Compact { focus });
    let mut code = None;
    while let Some(msg) = events.recv().await {
        if let Event::CompactionProgress { request, of, tokens } = msg.event {
            // Every request of the pass, even a single one: this command is the wait.
            errln!("codewhale: {}", super::notices::progress(request, of, tokens));
            continue;
        }
        if let Some(line) = super::notices::line(&msg.event) {
            // The outcome goes to stdout (it is what the command was run for); steps and
            // notices to stderr.
            if matches!(
                msg.event,
                Event::CompactionFinished { .. } | Event::CompactionRefused { .. }
            ) {
                outln!("{line}");
            } else if !matches!(msg.event, Event::CompactionFailed { .. }) {
                errln!("codewhale: {line}");
            }
        }
        match msg.event {
            Event::CompactionFinished { .. } | Event::CompactionRefused { .. } => {
                // Nothing to shrink is information, not a failure.
                code = Some(ExitCode::SUCCESS);
                handle.submit(Op::Shutdown);
            }
            Event::CompactionFailed { reason } => {
                errln!("codewhale: compaction failed, nothing was changed: {reason}");
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

#[cfg(test)]
mod tests {
    use codewhale_engine::Overrides;
    use codewhale_provider::test_support::{MockServer, Reply};

    use super::*;

    const SUMMARY: &str = "## Objective\nShip it.\n## User direction\nNone\n## Permissions and \
limits\nNone\n## Done\nNone\n## Changed files\nNone\n## Still running\nNone\n## Verification \
left\nNone\n## Open questions\nNone\n## Next action\nGo on.\n## Reference\nNone";

    /// A real session made by the engine against the mock server, then `codewhale compact` and
    /// `codewhale context` on it from the command-line entry points.
    #[test]
    fn compact_then_context_from_the_command_line() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(MockServer::start()).unwrap();
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let global = GlobalArgs {
            provider: Some(crate::cli::ProviderChoice::Openai),
            model: Some("gpt-4.1".into()),
            base_url: Some(server.openai_base_url()),
            context_window: Some(50_000),
            approval: None,
            home: Some(home.path().to_path_buf()),
            trust: false,
        };
        for k in 0..3 {
            server.push(Reply::text(format!(
                "answer {k}: {}",
                "lorem ipsum dolor sit amet ".repeat(200)
            )));
        }
        rt.block_on(async {
            let params = EngineParams {
                home: home.path().to_path_buf(),
                workspace: ws.path().to_path_buf(),
                overrides: Overrides {
                    provider: global.provider.map(|p| p.name().to_owned()),
                    model: global.model.clone(),
                    base_url: global.base_url.clone(),
                    context_window: global.context_window,
                    approval: None,
                },
                env: Env::default(),
                resume: Resume::New,
                interactive: false,
                retry: None,
                front_end: codewhale_engine::FrontEnd::Cli,
                home_hint: None,
                sandbox_helper: None,
            };
            let (handle, mut events) = Engine::spawn(params).unwrap();
            for k in 0..3 {
                handle.submit(Op::UserInput {
                    text: format!("question {k}"),
                    attachments: Vec::new(),
                    images: Vec::new(),
                });
                while let Some(msg) = events.recv().await {
                    if matches!(msg.event, Event::TurnFinished { .. }) {
                        break;
                    }
                }
            }
            handle.submit(Op::Shutdown);
            while let Some(msg) = events.recv().await {
                if matches!(msg.event, Event::ShutdownComplete) {
                    break;
                }
            }
        });
        server.push(Reply::text(SUMMARY));
        let args = CompactArgs { session: None, last: true, focus: Some("shipping".into()) };
        let code = run(home.path(), &global, Some(ws.path()), args).unwrap();
        assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::SUCCESS));
        let summary_request = server.requests().last().unwrap().body.to_string();
        assert!(summary_request.contains("Focus the note on: shipping"));

        let report = codewhale_engine::offline::context(&codewhale_engine::offline::ReportParams {
            home: home.path(),
            cwd: ws.path(),
            resume: Resume::Last,
            overrides: super::super::exec::overrides(&global),
        })
        .unwrap();
        assert_eq!(report.compactions, 1);
        assert!(report.view.iter().any(|v| v.kind == "checkpoint"));
        let args = crate::cli::ContextArgs { session: None, last: true, json: true };
        let code = super::super::context::run(home.path(), &global, Some(ws.path()), args).unwrap();
        assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::SUCCESS));
    }
}
