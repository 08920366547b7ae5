//! The code's citations of the docs resolve: every `docs/<file>.md` a comment names exists, and
//! every section cited after it (`docs/<file>.md, *Section*`) is a heading of that file. A
//! comment that sends the reader to a page or a section that is not there is a wrong comment.
//!
//! Comments are read from every crate's `src/`, `tests/` and `benches/` and the fuzz targets;
//! the comment lines of one block are joined first, so a citation wrapped across lines counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One citation found in a comment.
#[derive(Debug, PartialEq)]
struct Citation {
    file: String,
    section: Option<String>,
    /// `path:line` of the comment block that holds it.
    at: String,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of each block of consecutive full-line comments (`//`, `///`, `//!`), its
/// whitespace collapsed, with the line it starts on.
fn comment_blocks(source: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (n, line) in source.lines().enumerate() {
        let comment = line
            .trim_start()
            .strip_prefix("//")
            .map(|rest| rest.trim_start_matches(['/', '!']).trim());
        match (comment, open.as_mut()) {
            (Some(text), Some((_, parts))) => parts.push(text),
            (Some(text), None) => open = Some((n + 1, vec![text])),
            (None, _) => blocks.extend(open.take()),
        }
    }
    blocks.extend(open);
    blocks
        .into_iter()
        .map(|(line, parts)| {
            (line, parts.join(" ").split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// The citations in one comment block's text.
fn citations(text: &str, at: &str) -> Vec<Citation> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("docs/") {
        rest = &rest[start + "docs/".len()..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        let name = rest[..name_len].trim_end_matches('.');
        if !name.ends_with(".md") || name.len() <= ".md".len() {
            continue;
        }
        let after = &rest[name.len()..];
        let section = after
            .strip_prefix(", *")
            .and_then(|s| s.split_once('*'))
            .map(|(section, _)| section.to_owned());
        found.push(Citation { file: name.to_owned(), section, at: at.to_owned() });
    }
    found
}

/// The headings of a markdown text (outside fenced code), without their `#`s.
fn headings(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let text = line.trim_start_matches('#').trim();
            out.push(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    out
}

/// What is wrong with each citation, against the docs given as (file name → its headings).
fn unresolved(found: &[Citation], docs: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for c in found {
        match (docs.get(&c.file), &c.section) {
            (None, _) => wrong.push(format!("{}: docs/{} does not exist", c.at, c.file)),
            (Some(heads), Some(section)) if !heads.contains(section) => wrong.push(format!(
                "{}: docs/{} has no heading *{section}* (its headings: {})",
                c.at,
                c.file,
                heads.join(" | ")
            )),
            _ => {}
        }
    }
    wrong
}

#[test]
fn every_docs_citation_in_a_comment_names_a_page_and_a_heading_that_exist() {
    let root = workspace_root();
    let mut docs = BTreeMap::new();
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            docs.insert(name, headings(&std::fs::read_to_string(&path).unwrap()));
        }
    }
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        for dir in ["src", "tests", "benches"] {
            rust_files(&krate.path().join(dir), &mut files);
        }
    }
    rust_files(&root.join("fuzz"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        for (line, text) in comment_blocks(&source) {
            found.extend(citations(&text, &format!("{shown}:{line}")));
        }
    }
    // The scan sees the code's citations (hundreds of them), not nothing.
    let with_section = found.iter().filter(|c| c.section.is_some()).count();
    assert!(found.len() > 100 && with_section > 50, "{} citations found", found.len());
    let wrong = unresolved(&found, &docs);
    assert!(wrong.is_empty(), "citations that do not resolve:\n{}", wrong.join("\n"));
}

#[test]
fn a_wrapped_citation_is_read_whole_and_a_wrong_one_is_named() {
    // Built from lines so that no line of this file is itself a comment the scan would read.
    let source = [
        "fn f() {}",
        "/// The cut (docs/compaction.md, *The",
        "/// cut*) and docs/nope.md.",
        // Split so that no scan of this file, ours or another, reads a citation here.
        concat!("/// Also (docs/", "compaction.md, *No such part*)."),
        "fn g() {}\n",
    ]
    .join("\n");
    let source = source.as_str();
    let blocks = comment_blocks(source);
    assert_eq!(blocks.len(), 1);
    let found = citations(&blocks[0].1, "x.rs:2");
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].section.as_deref(), Some("The cut"));
    let docs = BTreeMap::from([(
        "compaction.md".to_owned(),
        headings("# Compaction\n```\n# not a heading\n```\n## The cut\n"),
    )]);
    assert_eq!(docs["compaction.md"], ["Compaction", "The cut"]);
    let wrong = unresolved(&found, &docs);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong[0].contains("docs/nope.md does not exist"));
    assert!(wrong[1].contains("no heading *No such part*"));
}
