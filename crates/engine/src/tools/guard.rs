//! The guard around every command (docs/security.md, *What git and Codewhale execute is out of the model's reach*): what git and
//! Codewhale execute never changes because the model ran a command, with namespaces or
//! without.
//!
//! Before a command the guard surveys the workspace ([`crate::protected::Survey`]: every
//! `.git`, the repositories they lead to, `core.hooksPath`, `.codewhale/`, the instruction
//! files) — what the sandbox binds read-only — and snapshots those places. After it, every
//! recorded place is put back byte for byte and mode for mode (with namespaces nothing there
//! could change, except a `.codewhale/` that did not exist yet), a `.git` the command created
//! keeps only its inert config keys and no hook, one that points outside the workspace is
//! removed, and an instruction file the command created is reported, so the session can keep
//! it out of the system prompt until the user says yes. Everything is named ([`Findings`]).
//!
//! A background command is checked when it ends, against the snapshot taken when it started;
//! while one runs, a foreground command is checked against that same snapshot rather than a
//! fresh one (which would take whatever the background command planted for the user's own
//! state). The user's own `!CMD` is only described ([`GitGuard::after_user`]), never put back.
//! Invariant: the walk is cached between commands (`protected::walk`), so a survey costs one
//! `stat` per folder of the workspace.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::protected::snapshot::{Change, Snapshot};
use crate::protected::walk::Walk;
use crate::protected::{scrub, Survey};

/// The workspace's places before a command.
#[derive(Debug, Clone)]
pub struct Before {
    survey: Survey,
    snapshot: Arc<Snapshot>,
    /// Which instruction files existed.
    instructions: Vec<(PathBuf, bool)>,
}

/// What the guard found after a command.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    /// Protected places the command changed (put back, or only named).
    pub changed: Vec<Change>,
    /// What was removed from a `.git` the command created.
    pub scrubbed: Vec<scrub::Removed>,
    /// Instruction files the command created.
    pub new_instructions: Vec<PathBuf>,
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.scrubbed.is_empty() && self.new_instructions.is_empty()
    }

    fn changed_list(&self, ws: &Path) -> String {
        let names: Vec<String> = self
            .changed
            .iter()
            .map(|c| {
                let name = shown(ws, &c.path);
                match (&c.note, c.undone) {
                    (Some(note), _) => format!("{name} ({note})"),
                    (None, false) => format!("{name} (changed, and too big to put back)"),
                    (None, true) => name,
                }
            })
            .collect();
        names.join(", ")
    }

    fn scrubbed_list(&self, ws: &Path) -> String {
        let names: Vec<String> =
            self.scrubbed.iter().map(|r| format!("{}: {}", shown(ws, &r.path), r.what)).collect();
        names.join("; ")
    }

    fn instructions_list(&self, ws: &Path) -> String {
        let names: Vec<String> = self.new_instructions.iter().map(|p| shown(ws, p)).collect();
        names.join(", ")
    }

    /// What the model reads after the command's output (`None`: nothing to say).
    pub fn for_model(&self, ws: &Path) -> Option<String> {
        let mut lines = Vec::new();
        if !self.changed.is_empty() {
            lines.push(format!(
                "[Codewhale put back {}: only the user may change what git and Codewhale execute \
                 (git hooks, git config, .codewhale/) and the instruction files. If the change \
                 is needed, tell the user what it is and why; they can make it themselves.]",
                self.changed_list(ws)
            ));
        }
        if !self.scrubbed.is_empty() {
            lines.push(format!(
                "[Codewhale removed from a .git your command created what git would run outside \
                 the sandbox: {}]",
                self.scrubbed_list(ws)
            ));
        }
        if !self.new_instructions.is_empty() {
            lines.push(format!(
                "[{} was created; it is not read into the instructions of this session unless \
                 the user accepts it.]",
                self.instructions_list(ws)
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// The warning the user sees, after a command of `whose` (`a command`, `bg-1`).
    pub fn for_user(&self, ws: &Path, whose: &str) -> Option<String> {
        let mut parts = Vec::new();
        if !self.changed.is_empty() {
            parts.push(format!(
                "{whose} changed {}, which only you may change (git runs hooks and config \
                 outside the sandbox; .codewhale/ and instruction files steer Codewhale); \
                 Codewhale put it back",
                self.changed_list(ws)
            ));
        }
        if !self.scrubbed.is_empty() {
            parts.push(format!(
                "{whose} created a .git; Codewhale removed what git would run from it: {}",
                self.scrubbed_list(ws)
            ));
        }
        if !self.new_instructions.is_empty() {
            parts.push(format!(
                "{whose} created {}: it is not read into the model's instructions in this \
                 session without your yes",
                self.instructions_list(ws)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

fn shown(ws: &Path, path: &Path) -> String {
    path.strip_prefix(ws).unwrap_or(path).display().to_string()
}

#[derive(Debug, Default)]
struct State {
    walk: Walk,
    /// The snapshot the running background commands are checked against.
    shared: Option<Arc<Snapshot>>,
    background: usize,
    /// What the end of a background command found, for the model's next tool result.
    for_model: Vec<String>,
    /// The walk stopped at its limit (said once).
    truncation_said: bool,
}

/// The guard of one session's workspace.
#[derive(Debug)]
pub struct GitGuard {
    workspace: PathBuf,
    /// The instruction files the system prompt reads.
    instructions: Vec<PathBuf>,
    state: Mutex<State>,
    /// Where the end of a background command is told (the session's events).
    sink: Mutex<Option<crate::events::EventSink>>,
}

impl GitGuard {
    /// The guard of `workspace` (canonical); `instructions` are the instruction files the
    /// system prompt reads, absolute.
    pub fn new(workspace: PathBuf, instructions: Vec<PathBuf>) -> GitGuard {
        GitGuard {
            workspace,
            instructions,
            state: Mutex::new(State::default()),
            sink: Mutex::new(None),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where what a background command's end finds is told.
    pub fn set_sink(&self, sink: crate::events::EventSink) {
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = Some(sink);
    }

    /// Surveys and snapshots the workspace before a command (while a background command runs,
    /// the snapshot is the one it is checked against).
    pub fn before(&self) -> Before {
        let mut state = self.state();
        let survey = Survey::take(&self.workspace, &mut state.walk);
        if survey.truncated && !state.truncation_said {
            state.truncation_said = true;
            tracing::warn!(
                "the workspace has more than {} folders; .git folders past them are not guarded",
                crate::protected::walk::MAX_DIRS
            );
        }
        let snapshot = match (&state.shared, state.background) {
            (Some(shared), n) if n > 0 => shared.clone(),
            _ => {
                let fresh =
                    Arc::new(Snapshot::take(&survey.places(&self.workspace, &self.instructions)));
                state.shared = Some(fresh.clone());
                fresh
            }
        };
        let instructions = self.instructions.iter().map(|p| (p.clone(), p.exists())).collect();
        Before { survey, snapshot, instructions }
    }

    /// What a command's namespace binds read-only (`git_writable`: the `.git`s left out).
    pub fn read_only(&self, before: &Before, git_writable: bool) -> Vec<PathBuf> {
        before.survey.read_only(&self.workspace, &self.instructions, git_writable)
    }

    /// Checks the workspace after a command of the model: puts back what it changed, scrubs
    /// what it created.
    pub fn after(&self, before: &Before) -> Findings {
        let mut state = self.state();
        // The walk after the command knows where a moved `.git` went (needed only then).
        if !before.snapshot.gits_in_place() {
            Survey::take(&self.workspace, &mut state.walk);
        }
        let changed = before.snapshot.undo(&state.walk);
        let now = Survey::take(&self.workspace, &mut state.walk);
        drop(state);
        let mut findings = Findings { changed, ..Findings::default() };
        self.scrub_new(&before.survey, &now, &mut findings);
        findings.new_instructions = before
            .instructions
            .iter()
            .filter(|(path, existed)| !existed && path.exists())
            .map(|(path, _)| path.clone())
            .collect();
        findings
    }

    /// What the user's own command changed in the protected places, named and kept.
    pub fn after_user(&self, before: &Before) -> Vec<String> {
        let changes = before.snapshot.compare();
        let paths: Vec<PathBuf> = changes.iter().map(|c| c.path.clone()).collect();
        // The user's changes are the new state of things.
        self.accept(&paths);
        changes.iter().map(|c| shown(&self.workspace, &c.path)).collect()
    }

    /// The user changed `paths` (an approved write of a protected path, a pinned anchor): while
    /// a background command runs, the snapshot it and the other commands are checked against
    /// takes them as they are now, so no later check puts them back.
    pub fn accept(&self, paths: &[PathBuf]) {
        let mut state = self.state();
        if state.background == 0 {
            state.shared = None;
            return;
        }
        if let Some(shared) = &state.shared {
            let paths: Vec<PathBuf> =
                paths.iter().map(|p| crate::paths::real_location(p)).collect();
            state.shared = Some(Arc::new(shared.with_current(&paths)));
        }
    }

    fn scrub_new(&self, before: &Survey, now: &Survey, findings: &mut Findings) {
        let ws = &self.workspace;
        for r in &now.resolved {
            let known = before
                .gits
                .iter()
                .any(|g| g.path == r.entry.path && g.kind == r.entry.kind && g.id == r.entry.id);
            if known {
                continue;
            }
            if let Some(target) = &r.target {
                if !target.starts_with(ws) && r.entry.path.starts_with(ws) {
                    findings.scrubbed.extend(scrub::outside_pointer(&r.entry.path, target));
                }
            }
        }
        for dir in now.repositories.iter().filter(|d| !before.repositories.contains(d)) {
            findings.scrubbed.extend(scrub::repository(dir));
            if dir.starts_with(ws) {
                findings.scrubbed.extend(scrub::outside_common_dir(dir, ws));
            }
        }
    }

    /// A background command starts: its snapshot, checked when it ends.
    pub fn background_started(&self) -> Before {
        let before = self.before();
        self.state().background += 1;
        before
    }

    /// A background command (`id`) ended: what it changed is put back and scrubbed, the user
    /// is told, and the model reads it with its next tool result.
    pub fn background_ended(&self, id: &str, before: &Before) {
        // Checked against what the user accepted meanwhile, not only the state at its start.
        let shared = self.state().shared.clone();
        let findings = match shared {
            Some(snapshot) => self.after(&Before { snapshot, ..before.clone() }),
            None => self.after(before),
        };
        {
            let mut state = self.state();
            state.background = state.background.saturating_sub(1);
            if state.background == 0 {
                state.shared = None;
            }
            if let Some(text) = findings.for_model(&self.workspace) {
                state.for_model.push(format!("[when {id} ended:]\n{text}"));
            }
        }
        if let Some(message) = findings.for_user(&self.workspace, id) {
            tracing::warn!(%message, "a background command changed protected places");
            let sink = self.sink.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(sink) = sink {
                sink.emit(
                    codewhale_protocol::SubmissionId(0),
                    codewhale_protocol::Event::Notice {
                        level: codewhale_protocol::NoticeLevel::Warning,
                        message,
                    },
                );
            }
        }
    }

    /// A background command that was to start did not: nothing is waited for.
    pub fn background_abandoned(&self) {
        let mut state = self.state();
        state.background = state.background.saturating_sub(1);
        if state.background == 0 {
            state.shared = None;
        }
    }

    /// What the ends of background commands found since the model last heard.
    pub fn take_for_model(&self) -> Option<String> {
        let mut state = self.state();
        let text = state.for_model.join("\n");
        state.for_model.clear();
        (!text.is_empty()).then_some(text)
    }
}

#[cfg(test)]
mod tests;
