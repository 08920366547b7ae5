//! The engines the UI follows: the one on screen and one being opened to replace it.
//!
//! Invariant: the session on screen stays (and stays usable) until the new one is configured;
//! a replaced engine is told to shut down and syncs its journal on its own, never waited for.

use std::time::Duration;

use codewhale_engine::{Engine, EngineHandle, EngineParams, Env, EventReceiver, Resume};
use codewhale_protocol::{Event, EventMsg, Op};

use super::{App, AppEvent, TuiParams};

/// How long a replaced engine gets to sync its journal and stop (in the background).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);
/// A running engine: its handle and its events.
pub(super) struct Link {
    pub(super) handle: EngineHandle,
    pub(super) events: EventReceiver,
}

/// The engines the loop follows: the one on screen, and one being opened to replace it.
#[derive(Default)]
pub(super) struct Links {
    pub(super) current: Option<Link>,
    /// Opening in the background; becomes `current` once its session is configured.
    pub(super) opening: Option<Link>,
}

fn engine_params(params: &TuiParams, resume: Resume) -> EngineParams {
    EngineParams {
        home: params.home.clone(),
        workspace: params.workspace.clone(),
        overrides: params.overrides.clone(),
        env: Env::from_process(),
        resume,
        interactive: true,
        retry: None,
        front_end: codewhale_engine::FrontEnd::Tui,
        home_hint: params.home_hint.clone(),
        sandbox_helper: crate::sandbox_helper::path(),
    }
}

/// Starts opening `resume` off the UI task.
pub(super) fn spawn_engine(params: &TuiParams, resume: Resume) -> Link {
    let (handle, events) = Engine::spawn_opening(engine_params(params, resume));
    Link { handle, events }
}

pub(super) async fn next_event(link: &mut Option<Link>) -> Option<EventMsg> {
    match link {
        Some(l) => l.events.recv().await,
        None => std::future::pending().await,
    }
}

/// An event of the engine being opened: progress, a failure (the current session stays), or
/// the session is open — then it replaces the current one, which stops in the background.
pub(super) fn opening_event(
    links: &mut Links,
    app: &mut App,
    msg: Option<EventMsg>,
) -> Option<AppEvent> {
    let Some(msg) = msg else {
        links.opening = None;
        return Some(AppEvent::SessionOpening(None));
    };
    match msg.event {
        Event::SessionOpening { bytes, .. } => Some(AppEvent::SessionOpening(Some(bytes))),
        Event::Error { message, .. } => {
            Some(AppEvent::SessionOpenFailed(format!("cannot open the session: {message}")))
        }
        Event::ShutdownComplete => {
            links.opening = None;
            None
        }
        Event::SessionConfigured { .. } => {
            let next = links.opening.take()?;
            if let Some(old) = links.current.take() {
                retire(old);
            }
            app.attach(Box::new(next.handle.clone()));
            links.current = Some(next);
            Some(AppEvent::Engine(msg))
        }
        _ => None,
    }
}

/// Stops a replaced engine without waiting for it: it syncs its journal and stops on its own.
fn retire(mut old: Link) {
    old.handle.submit(Op::Shutdown);
    tokio::spawn(async move {
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, async {
            while let Some(msg) = old.events.recv().await {
                if msg.event == Event::ShutdownComplete {
                    break;
                }
            }
        })
        .await;
    });
}

/// `/new` and `/resume`: starts opening the other session off the UI task. The current one
/// stays on screen (and usable) until the new one is open, so a failure changes nothing.
pub(super) fn open_session(params: &TuiParams, app: &mut App, links: &mut Links, resume: Resume) {
    if let (Resume::Id(id), Some(_)) = (&resume, links.current.as_ref()) {
        if !app.session_id().is_empty() && app.session_id().starts_with(id.as_str()) {
            app.handle(AppEvent::SessionOpenFailed("that session is already open".to_owned()));
            return;
        }
    }
    let link = spawn_engine(params, resume);
    if links.current.is_none() {
        // Nothing on screen to keep: ops typed meanwhile wait in the engine for the session.
        app.attach(Box::new(link.handle.clone()));
        links.current = Some(link);
    } else {
        if let Some(previous) = links.opening.replace(link) {
            retire(previous);
        }
        app.handle(AppEvent::SessionOpening(Some(0)));
    }
}
