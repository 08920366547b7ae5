//! Opening the session an [`super::EngineParams`] names: the configuration loaded for the
//! workspace the session works in, the provider resolved (or, for a command that needs no
//! model, its absence recorded on the session), then [`Session::open`], and a restore a kill
//! interrupted is completed ([`crate::rewind::intent`]).

use super::EngineParams;
use crate::config;
use crate::error::EngineError;
use crate::session::{Session, SessionParams};

/// Whether opening needs a model provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    Model,
    NoModel,
}

/// Loads the configuration and opens (or creates) the session `params` names.
pub(super) fn open(params: &EngineParams, need: Need) -> Result<Session, EngineError> {
    // A resumed session works (and is configured) in the directory it was started in.
    let workspace =
        crate::session::workspace::for_resume(&params.home, &params.resume, &params.workspace);
    let config = config::load(&params.home, &workspace, &params.overrides)?;
    let (provider, no_model) = match (config.resolve_provider(&params.env), need) {
        (Ok(Some(provider)), _) => (provider, None),
        (Ok(None), Need::Model) => return Err(EngineError::NoProvider),
        (Err(e), Need::Model) => return Err(e.into()),
        (Ok(None), Need::NoModel) => {
            (config::ResolvedProvider::unconfigured(), Some(EngineError::NoProvider.to_string()))
        }
        (Err(e), Need::NoModel) => (config::ResolvedProvider::unconfigured(), Some(e.to_string())),
    };
    let mut session = Session::open(SessionParams {
        home: params.home.clone(),
        workspace: params.workspace.clone(),
        config,
        provider,
        resume: params.resume.clone(),
        retry: params.retry.clone(),
        front_end: params.front_end,
        home_hint: params.home_hint.clone(),
        model_explicit: params.overrides.model.is_some(),
        sandbox_helper: params.sandbox_helper.clone(),
    })?;
    session.set_no_model(no_model);
    // A rewind or /undo a kill interrupted is completed before the session is used: it may
    // change files the system prompt reads (AGENTS.md) and moves HEAD, so both are read again.
    if let Some(notice) = crate::rewind::intent::finish(&mut session) {
        session.push_notice(notice.0, notice.1);
        session.refresh_system_prompt();
        session.replay_budget();
    }
    Ok(session)
}
