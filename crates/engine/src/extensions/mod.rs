//! What users bring (docs/extending.md): custom slash commands from
//! `$CODEWHALE_HOME/commands/` and a trusted workspace's `.codewhale/commands/`, and skills
//! from `$CODEWHALE_HOME/skills/` and a trusted workspace's `.codewhale/skills/`.
//!
//! Owns the [`Catalog`]: every command and skill found, which of them a `/NAME` runs and which
//! the system prompt names. Invariants: a workspace's commands and skills count only in a
//! trusted workspace (before that they are listed as untrusted, with why); a workspace's
//! shadows a home one of the same name, and both stay listed; `.claude/commands/` is never
//! read, only named. Built-in slash commands belong to the front end, which keeps its own
//! names first.

pub mod commands;
pub mod front_matter;
pub mod skills;

use std::path::{Path, PathBuf};

use codewhale_protocol::{CustomCommandInfo, ExtensionSource};

pub use commands::CustomCommand;
pub use skills::Skill;

/// Where a found command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// `/NAME` runs it.
    Active,
    /// A home command the workspace's command of the same name replaces.
    Shadowed,
    /// A workspace command that waits for the workspace to be trusted.
    Untrusted,
}

impl Standing {
    pub fn name(self) -> &'static str {
        match self {
            Standing::Active => "active",
            Standing::Shadowed => "shadowed",
            Standing::Untrusted => "untrusted",
        }
    }
}

/// The custom commands found for one workspace.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Every command found, home ones first, each sorted by name.
    pub commands: Vec<(CustomCommand, Standing)>,
    /// Every skill found, the same way.
    pub skills: Vec<(Skill, Standing)>,
    /// Claude Code command folders found, which Codewhale does not read.
    pub claude_folders: Vec<PathBuf>,
    /// Files that could not be used, one sentence each.
    pub problems: Vec<String>,
}

/// The home's command folder.
pub fn home_commands(home: &Path) -> PathBuf {
    home.join("commands")
}

/// The home's skill folder.
pub fn home_skills(home: &Path) -> PathBuf {
    home.join("skills")
}

/// The workspace's skill folder.
pub fn workspace_skills(workspace: &Path) -> PathBuf {
    workspace.join(".codewhale").join("skills")
}

/// The workspace's command folder.
pub fn workspace_commands(workspace: &Path) -> PathBuf {
    workspace.join(".codewhale").join("commands")
}

impl Catalog {
    /// Finds the commands of `home` and `workspace`; the workspace's count only when
    /// `trusted`.
    pub fn discover(home: &Path, workspace: &Path, trusted: bool) -> Catalog {
        let mut problems = Vec::new();
        let home_found = commands::scan(&home_commands(home), ExtensionSource::Home, &mut problems);
        let ws_found = if same_dir(&home_commands(home), &workspace_commands(workspace)) {
            Vec::new()
        } else {
            commands::scan(
                &workspace_commands(workspace),
                ExtensionSource::Workspace,
                &mut problems,
            )
        };
        let mut all = Vec::new();
        for c in home_found {
            let shadowed = trusted && ws_found.iter().any(|w| w.name == c.name);
            all.push((c, if shadowed { Standing::Shadowed } else { Standing::Active }));
        }
        for c in ws_found {
            all.push((c, if trusted { Standing::Active } else { Standing::Untrusted }));
        }
        let mut claude_folders = vec![workspace.join(".claude").join("commands")];
        if let Some(user) = dirs::home_dir() {
            claude_folders.push(user.join(".claude").join("commands"));
        }
        claude_folders.dedup();
        claude_folders.retain(|p| p.is_dir());
        let home_found = skills::scan(&home_skills(home), ExtensionSource::Home, &mut problems);
        let ws_skills = if same_dir(&home_skills(home), &workspace_skills(workspace)) {
            Vec::new()
        } else {
            skills::scan(&workspace_skills(workspace), ExtensionSource::Workspace, &mut problems)
        };
        let mut found_skills = Vec::new();
        for s in home_found {
            let shadowed = trusted && ws_skills.iter().any(|w| w.name == s.name);
            found_skills.push((s, if shadowed { Standing::Shadowed } else { Standing::Active }));
        }
        for s in ws_skills {
            found_skills.push((s, if trusted { Standing::Active } else { Standing::Untrusted }));
        }
        Catalog { commands: all, skills: found_skills, claude_folders, problems }
    }

    /// The skills the model is told about, sorted by name.
    pub fn active_skills(&self) -> Vec<&Skill> {
        let mut active: Vec<&Skill> =
            self.skills.iter().filter(|(_, s)| *s == Standing::Active).map(|(s, _)| s).collect();
        active.sort_by(|a, b| a.name.cmp(&b.name));
        active
    }

    /// The system prompt's part about the skills, within 2 % of `usable_input`.
    pub fn skill_listing(&self, usable_input: u64) -> skills::Listing {
        skills::listing(&self.active_skills(), usable_input / 50)
    }

    /// What `/context` says about the skills: those the system prompt names and those it
    /// leaves out.
    pub fn skills_report(&self, usable_input: u64) -> codewhale_protocol::report::SkillsReport {
        let listing = self.skill_listing(usable_input);
        let listed = self
            .active_skills()
            .into_iter()
            .map(|s| s.name.clone())
            .filter(|n| !listing.left_out.contains(n))
            .collect();
        codewhale_protocol::report::SkillsReport { listed, left_out: listing.left_out }
    }

    /// The active skill whose folder holds `path` (absolute; links followed): its files are
    /// read without asking.
    pub fn skill_holding(&self, path: &Path) -> Option<&Skill> {
        let real = crate::paths::real_location(path);
        self.active_skills()
            .into_iter()
            .find(|s| real.starts_with(crate::paths::real_location(&s.dir)))
    }

    /// The active skill whose `SKILL.md` is `path` (absolute; links followed).
    pub fn skill_of_file(&self, path: &Path) -> Option<&Skill> {
        let real = crate::paths::real_location(path);
        self.active_skills().into_iter().find(|s| crate::paths::real_location(&s.file) == real)
    }

    /// The command `/name` runs, if any.
    pub fn active(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|(c, s)| *s == Standing::Active && c.name == name).map(|(c, _)| c)
    }

    /// What `/name` runs, filled in with `args`; or why it cannot run.
    pub fn expand(&self, name: &str, args: &str) -> Result<Expanded, String> {
        if let Some(c) = self.active(name) {
            return Ok(Expanded { text: commands::expand(&c.body, args), model: c.model.clone() });
        }
        if self.commands.iter().any(|(c, s)| *s == Standing::Untrusted && c.name == name) {
            return Err(untrusted_reason(name));
        }
        Err(format!(
            "no custom command /{name}: none is in {} or this workspace's .codewhale/commands/",
            "$CODEWHALE_HOME/commands/"
        ))
    }

    /// The commands a front end offers, as the protocol carries them: the active ones and an
    /// untrusted workspace's (with why they cannot run), sorted by name.
    pub fn infos(&self) -> Vec<CustomCommandInfo> {
        let mut out: Vec<CustomCommandInfo> = self
            .commands
            .iter()
            .filter(|(_, s)| *s != Standing::Shadowed)
            .filter(|(c, s)| *s != Standing::Untrusted || self.active(&c.name).is_none())
            .map(|(c, s)| CustomCommandInfo {
                name: c.name.clone(),
                description: c.description.clone(),
                argument_hint: c.argument_hint.clone(),
                source: c.source,
                unavailable: (*s == Standing::Untrusted).then(|| untrusted_reason(&c.name)),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The lines the trust question shows for the workspace's own commands.
    pub fn trust_lines(workspace: &Path) -> Vec<String> {
        let mut problems = Vec::new();
        let found = commands::scan(
            &workspace_commands(workspace),
            ExtensionSource::Workspace,
            &mut problems,
        );
        let skills =
            skills::scan(&workspace_skills(workspace), ExtensionSource::Workspace, &mut problems);
        found
            .iter()
            .map(|c| format!("# custom command /{} ({})", c.name, shown(workspace, &c.path)))
            .chain(
                skills
                    .iter()
                    .map(|s| format!("# skill {} ({})", s.name, shown(workspace, &s.file))),
            )
            .collect()
    }
}

/// Why an untrusted workspace's command does not run.
pub fn untrusted_reason(name: &str) -> String {
    format!(
        "/{name} is a command of this workspace's .codewhale/commands/, and the workspace is not \
         trusted, so it does not run; trust the workspace (/trust in the terminal UI) to use it"
    )
}

fn shown(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace).unwrap_or(path).display().to_string()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A command filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    /// The message sent.
    pub text: String,
    /// The model its turn runs on, when the command names one.
    pub model: Option<String>,
}

/// Whether the user trusts `workspace` (docs/configuration.md, *Workspace trust*): its
/// commands run only then. `listed` is the user file's `trusted_workspaces`.
pub fn workspace_trusted(home: &Path, workspace: &Path, listed: &[String]) -> bool {
    let text = crate::config::read(&crate::config::workspace_file(workspace), &mut Vec::new())
        .ok()
        .flatten()
        .unwrap_or_default();
    crate::trusted::is_trusted(home, workspace, &text, listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_trusted_workspace_shadows_home_and_an_untrusted_one_is_refused_with_why() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(&home.path().join("commands/review.md"), "home review $1");
        write(&home.path().join("commands/greet.md"), "Say hello to $1.");
        write(&ws.path().join(".codewhale/commands/review.md"), "workspace review $1");
        write(&ws.path().join(".codewhale/commands/ship.md"), "ship it");
        let trusted = Catalog::discover(home.path(), ws.path(), true);
        assert_eq!(trusted.expand("review", "7").unwrap().text, "workspace review 7");
        assert_eq!(trusted.expand("greet", "Bob").unwrap().text, "Say hello to Bob.");
        let standing: Vec<_> =
            trusted.commands.iter().map(|(c, s)| (c.name.as_str(), c.source, *s)).collect();
        assert!(standing.contains(&("review", ExtensionSource::Home, Standing::Shadowed)));
        assert!(standing.contains(&("review", ExtensionSource::Workspace, Standing::Active)));
        assert_eq!(trusted.infos().len(), 3);

        let untrusted = Catalog::discover(home.path(), ws.path(), false);
        assert_eq!(untrusted.expand("review", "7").unwrap().text, "home review 7");
        let why = untrusted.expand("ship", "").unwrap_err();
        assert!(why.contains("not trusted"), "{why}");
        let ship = untrusted.infos().into_iter().find(|i| i.name == "ship").unwrap();
        assert!(ship.unavailable.is_some());
        let review = untrusted.infos().into_iter().find(|i| i.name == "review").unwrap();
        assert_eq!((review.source, review.unavailable), (ExtensionSource::Home, None));
        assert!(untrusted.expand("nothing", "").unwrap_err().contains("no custom command"));
    }

    #[test]
    fn claude_code_commands_are_named_not_read() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(&ws.path().join(".claude/commands/old.md"), "old");
        let c = Catalog::discover(home.path(), ws.path(), true);
        assert!(c.active("old").is_none());
        assert!(c.claude_folders.contains(&ws.path().join(".claude/commands")));
    }
}
