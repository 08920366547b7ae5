//! `codewhale commands [--json]`: the custom slash commands, skills and project instruction
//! files found for this workspace, and where each comes from (docs/extending.md). Reads files only:
//! never contacts a provider, needs no key.
//!
//! The built-in commands are this binary's (`crate::tui::slash`): a custom command named like
//! one is listed as a clash, since the built-in always wins.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::offline::extensions::{self, Found, Standing};

use crate::tui::slash::SlashCommand;

/// Lists what was found; a file that could not be used is named on stderr (exit 0).
pub fn run(home: &Path, workspace: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(workspace)?;
    let found = extensions::found(home, &workspace)?;
    if json {
        let value = to_json(&found);
        outln!("{}", serde_json::to_string(&value).context("cannot encode the list")?);
    } else {
        out!("{}", human(&found));
    }
    for problem in &found.catalog.problems {
        errln!("codewhale: {problem}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What a custom command's standing is called, a clash with a built-in first.
fn standing(name: &str, standing: Standing) -> &'static str {
    if SlashCommand::from_name(name).is_some() {
        "clash"
    } else {
        standing.name()
    }
}

fn to_json(found: &Found) -> serde_json::Value {
    let commands: Vec<serde_json::Value> = found
        .catalog
        .commands
        .iter()
        .map(|(c, s)| {
            serde_json::json!({
                "name": c.name,
                "description": c.description,
                "argument_hint": c.argument_hint,
                "model": c.model,
                "source": c.source.name(),
                "path": c.path.display().to_string(),
                "status": standing(&c.name, *s),
            })
        })
        .collect();
    let skills: Vec<serde_json::Value> = found
        .catalog
        .skills
        .iter()
        .map(|(s, standing)| {
            serde_json::json!({
                "name": s.name,
                "description": s.description,
                "source": s.source.name(),
                "path": s.file.display().to_string(),
                "status": standing.name(),
            })
        })
        .collect();
    let claude: Vec<String> =
        found.catalog.claude_folders.iter().map(|p| p.display().to_string()).collect();
    let hooks: Vec<serde_json::Value> = found
        .hooks
        .iter()
        .map(|h| {
            serde_json::json!({
                "event": h.event,
                "command": h.command,
                "matcher": h.matcher,
                "timeout_sec": h.timeout_sec,
                "file": h.file.display().to_string(),
                "line": h.line,
            })
        })
        .collect();
    serde_json::json!({
        "trusted": found.trusted,
        "commands": commands,
        "hooks": hooks,
        "hooks_untrusted": found.hooks_untrusted,
        "skills": skills,
        "instructions": found.instructions,
        "claude_commands": claude,
        "problems": found.catalog.problems,
    })
}

/// The text listing.
pub fn human(found: &Found) -> String {
    let mut out = String::new();
    push_commands(&mut out, found);
    push_skills(&mut out, found);
    push_hooks(&mut out, found);
    push_instructions(&mut out, found);
    out
}

/// The custom commands with their standing, and the Claude Code folders not read.
fn push_commands(out: &mut String, found: &Found) {
    out.push_str("Custom commands:\n");
    if found.catalog.commands.is_empty() {
        out.push_str(
            "  none: add NAME.md to $CODEWHALE_HOME/commands/ or .codewhale/commands/ \
             (docs/extending.md)\n",
        );
    }
    for (c, s) in &found.catalog.commands {
        let usage = if c.argument_hint.is_empty() {
            format!("/{}", c.name)
        } else {
            format!("/{} {}", c.name, c.argument_hint)
        };
        let note = match standing(&c.name, *s) {
            "clash" => " — named like a built-in command, which wins: rename the file",
            "shadowed" => " — shadowed by the workspace's command of the same name",
            "untrusted" => {
                " — not offered: the workspace is not trusted (/trust in the terminal UI)"
            }
            _ => "",
        };
        let model = c.model.as_deref().map(|m| format!(" [model {m}]")).unwrap_or_default();
        out.push_str(&format!("  {usage}  ({}){model}{note}\n", c.source.name()));
        if !c.description.is_empty() {
            out.push_str(&format!("      {}\n", c.description));
        }
        out.push_str(&format!("      {}\n", c.path.display()));
    }
    for dir in &found.catalog.claude_folders {
        out.push_str(&format!(
            "  {} holds Claude Code commands, which Codewhale does not read: move or link them \
             into .codewhale/commands/ (or $CODEWHALE_HOME/commands/ for your own)\n",
            dir.display()
        ));
    }
}

/// The skills with their standing.
fn push_skills(out: &mut String, found: &Found) {
    out.push_str("Skills:\n");
    if found.catalog.skills.is_empty() {
        out.push_str(
            "  none: add NAME/SKILL.md to $CODEWHALE_HOME/skills/ or .codewhale/skills/ \
             (docs/extending.md)\n",
        );
    }
    for (s, standing) in &found.catalog.skills {
        let note = match standing {
            Standing::Shadowed => " — shadowed by the workspace's skill of the same name",
            Standing::Untrusted => {
                " — not offered: the workspace is not trusted (/trust in the terminal UI)"
            }
            Standing::Active => "",
        };
        out.push_str(&format!("  {}  ({}){note}\n", s.name, s.source.name()));
        out.push_str(&format!("      {}\n      {}\n", s.description, s.file.display()));
    }
}

/// The hooks in the order they run, and whether the workspace's are left out.
fn push_hooks(out: &mut String, found: &Found) {
    out.push_str("Hooks (run in config order, the home's first):\n");
    if found.hooks.is_empty() {
        out.push_str("  none\n");
    }
    for h in &found.hooks {
        let matcher = h.matcher.as_deref().map(|m| format!(" matching {m}")).unwrap_or_default();
        out.push_str(&format!(
            "  {}{matcher}: {}  ({}:{}, timeout {} s)\n",
            h.event,
            h.command,
            h.file.display(),
            h.line,
            h.timeout_sec
        ));
    }
    if found.hooks_untrusted {
        out.push_str(
            "  the workspace's hooks are not run: the workspace is not trusted (/trust in the \
             terminal UI)\n",
        );
    }
}

/// The project instruction files read.
fn push_instructions(out: &mut String, found: &Found) {
    out.push_str("Project instructions:\n");
    if found.instructions.is_empty() {
        out.push_str("  none: add AGENTS.md (or CLAUDE.md) to the workspace\n");
    }
    for name in &found.instructions {
        out.push_str(&format!("  {name}\n"));
    }
}
