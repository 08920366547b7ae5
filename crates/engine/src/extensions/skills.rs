//! Skills (docs/extending.md, *Skills*): a folder holding `SKILL.md` — front matter `name` and
//! `description`, then instructions — and whatever files those instructions point to.
//!
//! Owns finding them ([`scan`]) and the part of the system prompt that names them
//! ([`listing`]): only names, descriptions and paths, each description cut to
//! [`MAX_DESCRIPTION_CHARS`], at most [`MAX_LISTED`] skills and together at most 2 % of the
//! usable input; the rest are named for `/context`. The model reads a body with `read_file`
//! when it needs it. Invariants: `SKILL.md` is read through a bound; a folder that cannot be
//! used is one sentence naming its file and line, and the others are still found.

use std::path::{Path, PathBuf};

use codewhale_protocol::ExtensionSource;

use super::front_matter;
use crate::bounded::Bounded;

/// How much of a `SKILL.md` is read to find its front matter.
const MAX_SKILL_BYTES: usize = 64 * 1024;
/// At most this many skills are listed in the system prompt.
pub const MAX_LISTED: usize = 50;
/// A description is cut to this many characters in the system prompt.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// The most skill folders one root yields.
const MAX_FOLDERS: usize = 500;

/// One skill found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder (every file under it is the skill's).
    pub dir: PathBuf,
    /// Its `SKILL.md`.
    pub file: PathBuf,
    pub source: ExtensionSource,
}

/// Every skill under `root` (`root/NAME/SKILL.md`), sorted by name.
pub fn scan(root: &Path, source: ExtensionSource, problems: &mut Vec<String>) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.truncate(MAX_FOLDERS);
    let mut found: Vec<Skill> =
        dirs.into_iter().filter_map(|dir| read(dir, source, problems)).collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn read(dir: PathBuf, source: ExtensionSource, problems: &mut Vec<String>) -> Option<Skill> {
    let file = dir.join("SKILL.md");
    let text = match crate::bounded::read(&file, MAX_SKILL_BYTES) {
        Ok(Bounded::Read { bytes, .. }) => String::from_utf8_lossy(&bytes).into_owned(),
        Ok(Bounded::Missing) => return None,
        Ok(Bounded::NotRegular(kind)) => {
            problems.push(crate::bounded::skipped_notice(&file, kind));
            return None;
        }
        Err(e) => {
            problems.push(format!("cannot read {}: {e}; check its permissions", file.display()));
            return None;
        }
    };
    let parsed = match front_matter::parse(&text) {
        Ok(parsed) => parsed,
        Err(bad) => {
            problems.push(format!(
                "{}:{}: bad front matter: {}; fix that line, so the skill is offered",
                file.display(),
                bad.line,
                bad.reason
            ));
            return None;
        }
    };
    let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = parsed.get("name").filter(|n| !n.trim().is_empty()).unwrap_or(&folder).trim();
    let Some(description) = parsed.get("description").map(str::trim).filter(|d| !d.is_empty())
    else {
        problems.push(format!(
            "{}:1: the skill has no `description` in its front matter, so the model would not \
             know when to read it; add one",
            file.display()
        ));
        return None;
    };
    Some(Skill { name: name.to_owned(), description: description.to_owned(), dir, file, source })
}

/// What the system prompt says about the skills, and those left out of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The system prompt's block; empty when there are no skills.
    pub block: String,
    /// Skills not listed (past 50, or past 2 % of the usable input), by name.
    pub left_out: Vec<String>,
}

const INTRO: &str = "# Skills\n\nSkills are instructions for particular kinds of task, kept in \
files. When a task matches a skill's description, read its SKILL.md with `read_file` (the path \
given) before you start and follow it; read the other files of its folder when SKILL.md points \
to them. Reading a skill's files never needs approval.\n";

/// The block for `skills` within `budget_tokens` (2 % of the usable input).
pub fn listing(skills: &[&Skill], budget_tokens: u64) -> Listing {
    if skills.is_empty() {
        return Listing::default();
    }
    let mut block = INTRO.to_owned();
    let mut used = u64::from(crate::tokens::estimate(&block));
    let mut left_out = Vec::new();
    let mut listed = 0;
    for skill in skills {
        let mut description: String =
            skill.description.chars().take(MAX_DESCRIPTION_CHARS).collect();
        if description.len() < skill.description.len() {
            description.push('…');
        }
        let line = format!(
            "- `{}`: {} (read `{}`)\n",
            skill.name,
            description.replace('\n', " "),
            skill.file.display()
        );
        let cost = u64::from(crate::tokens::estimate(&line));
        if listed >= MAX_LISTED || used + cost > budget_tokens {
            left_out.push(skill.name.clone());
            continue;
        }
        used += cost;
        listed += 1;
        block.push_str(&line);
    }
    if listed == 0 {
        return Listing { block: String::new(), left_out };
    }
    Listing { block: block.trim_end().to_owned(), left_out }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn skills_are_found_by_their_skill_md_and_bad_ones_named() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        skill(r, "pdf", "---\nname: pdf-forms\ndescription: Fill PDF forms\n---\nUse pdftk.");
        skill(r, "plain", "---\ndescription: Plain one\n---\nBody");
        skill(r, "nodesc", "---\nname: x\n---\nBody");
        skill(r, "broken", "---\nname x\n---\n");
        std::fs::create_dir(r.join("empty")).unwrap();
        let mut problems = Vec::new();
        let found = scan(r, ExtensionSource::Home, &mut problems);
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pdf-forms", "plain"]);
        assert_eq!(found[0].file, r.join("pdf/SKILL.md"));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("broken/SKILL.md:2: bad front matter")));
        assert!(problems.iter().any(|p| p.contains("nodesc/SKILL.md:1: the skill has no")));
    }

    #[test]
    fn the_listing_cuts_descriptions_and_keeps_to_its_budget() {
        let dir = PathBuf::from("/s");
        let make = |i: usize, description: String| Skill {
            name: format!("s{i:02}"),
            description,
            dir: dir.clone(),
            file: dir.join(format!("s{i:02}/SKILL.md")),
            source: ExtensionSource::Home,
        };
        let long = make(0, "d".repeat(500));
        let l = listing(&[&long], 10_000);
        assert!(l.block.contains(&format!("{}…", "d".repeat(200))), "{}", l.block);
        assert!(!l.block.contains(&"d".repeat(201)));
        // 60 skills: 50 listed, the rest named.
        let many: Vec<Skill> = (0..60).map(|i| make(i, "short".into())).collect();
        let refs: Vec<&Skill> = many.iter().collect();
        let l = listing(&refs, 100_000);
        assert_eq!(l.block.matches("\n- `").count(), 50);
        assert_eq!(l.left_out.len(), 10);
        // A small budget lists what fits.
        let l = listing(&refs, 200);
        assert!(!l.left_out.is_empty() && l.block.contains("`s00`"));
        assert!(u64::from(crate::tokens::estimate(&l.block)) <= 200);
        assert_eq!(listing(&refs, 10).block, "", "nothing fits: no block at all");
    }
}
