//! The engine's folders are its layers (docs/architecture.md, *Layers*): each top-level module
//! of `src/` belongs to one layer, and shipped code imports only its own layer and the ones
//! below. This check reads every path of the source that starts at the crate's root —
//! `crate::…`, a `super::` chain that climbs to it, each item of a `crate::{…}` group, however
//! many lines it spans — and resolves a name the root re-exports (`crate::EngineParams`) to the
//! module it comes from. It fails on an import from a lower layer to a higher one, naming the
//! file and line. Comments and the contents of string literals are not code; a `#[cfg(test)]
//! mod` item and test-only files are left out (tests may reach anywhere), and only they: shipped
//! code after a test module is read like any other. The few upward imports the design still
//! has are listed per site (file and imported path) with their reason; a new site of the same
//! pair of modules fails, and a listed site that is no longer there fails the check too, so the
//! list stays true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom first. Keep in step with docs/architecture.md, *Layers*.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundations",
        &[
            "approval",
            "bounded",
            "branches",
            "call_end",
            "hints",
            "paths",
            "pause_point",
            "plan",
            "plan_mode",
            "probe",
            "protected",
            "redact",
            "sandbox",
            "spend",
            "text_diff",
            "tokens",
            "truncation",
            "trusted",
        ],
    ),
    ("settings", &["budget", "config", "error", "events", "extensions", "recall", "trust"]),
    ("tools", &["checkpoint", "convert", "images", "prompt", "tools"]),
    ("session", &["session"]),
    (
        "on the session",
        &[
            "anchors",
            "attachments",
            "branch_summary",
            "children",
            "history_pages",
            "hooks",
            "importing",
            "user_shell",
        ],
    ),
    ("compaction", &["compaction"]),
    ("operations", &["answers", "context_report", "rewind", "side_question", "subagent", "turn"]),
    ("front", &["engine", "eval", "offline"]),
];

/// Upward imports the design still has, one per site: (file, imported path, why). None is left:
/// the standing the session held is the Compactor's, beside it, and the session is lent to
/// compaction as its conversation port by an adapter in `compaction/`, which looks down at it.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// An import from a lower layer to a higher one.
#[derive(Debug, PartialEq, Eq)]
struct Upward {
    file: String,
    line: usize,
    from: String,
    to: String,
    /// The imported path from the module on (`compaction::standing::Standing`).
    path: String,
}

/// The top-level module a file of `src/` belongs to (`session/open.rs` → `session`).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_owned())
}

/// Whether a file holds tests only.
fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name == "tests.rs" || name.starts_with("tests_") || name.ends_with("_tests.rs")
}

/// `source` with comments and the contents of string and character literals blanked (line
/// breaks kept, so offsets and line numbers still match): what is left is code.
fn code_only(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && ident(b[i - 1]);
        if b[i..].starts_with(b"//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !prev_ident && (b[i] == b'r' || b[i..].starts_with(b"br")) {
            // A raw string: r"…", r#"…"#, br"…".
            let start = if b[i] == b'r' { i + 1 } else { i + 2 };
            let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
            if b.get(start + hashes) == Some(&b'"') {
                let body = start + hashes + 1;
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let end = b[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |n| body + n);
                blank(&mut out, body, end);
                i = (end + close.len()).min(b.len());
            } else {
                i += 1;
            }
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{1F40B}', '{'); anything else is a lifetime.
            let rest = &source[i + 1..];
            let len = if rest.starts_with('\\') {
                rest.find('\'').filter(|&n| n > 1)
            } else {
                rest.chars().next().map(char::len_utf8).filter(|&n| rest[n..].starts_with('\''))
            };
            match len {
                Some(n) => {
                    blank(&mut out, i + 1, i + 1 + n);
                    i += n + 2;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// One token of code: an identifier, `::`, or one other character.
#[derive(Debug)]
struct Token<'a> {
    at: usize,
    text: &'a str,
}

fn tokens(code: &str) -> Vec<Token<'_>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let n = b[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
            out.push(Token { at: i, text: &code[i..i + n] });
            i += n;
        } else if b[i..].starts_with(b"::") {
            out.push(Token { at: i, text: "::" });
            i += 2;
        } else {
            let n = code[i..].chars().next().map_or(1, char::len_utf8);
            out.push(Token { at: i, text: &code[i..i + n] });
            i += n;
        }
    }
    out
}

/// The code of `source` without its `#[cfg(test)] mod` items (each blanked from its attribute
/// to its closing brace); everything else stays, a test module in the middle included.
fn without_test_modules(code: &str) -> String {
    let toks = tokens(code);
    let mut out = code.as_bytes().to_vec();
    let mut i = 0;
    while i < toks.len() {
        let is_cfg_test = ["#", "[", "cfg", "(", "test", ")", "]"]
            .iter()
            .enumerate()
            .all(|(k, t)| toks.get(i + k).is_some_and(|tok| tok.text == *t));
        if !is_cfg_test {
            i += 1;
            continue;
        }
        let start = toks[i].at;
        let mut j = i + 7;
        // Further attributes and a visibility may sit between the attribute and `mod`.
        while toks.get(j).is_some_and(|t| t.text == "#") {
            let mut depth = 0;
            j += 1;
            while let Some(t) = toks.get(j) {
                j += 1;
                match t.text {
                    "[" => depth += 1,
                    "]" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        if toks.get(j).is_some_and(|t| t.text == "pub") {
            j += 1;
            if toks.get(j).is_some_and(|t| t.text == "(") {
                while toks.get(j).is_some_and(|t| t.text != ")") {
                    j += 1;
                }
                j += 1;
            }
        }
        let is_mod_block = toks.get(j).is_some_and(|t| t.text == "mod")
            && toks.get(j + 2).is_some_and(|t| t.text == "{");
        if !is_mod_block {
            i += 1;
            continue;
        }
        let (mut depth, mut k) = (0, j + 2);
        while let Some(t) = toks.get(k) {
            match t.text {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        let end = toks.get(k).map_or(code.len(), |t| t.at + 1);
        for c in &mut out[start..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        i = k + 1;
    }
    String::from_utf8(out).unwrap()
}

/// The items of the use tree or path at `toks[i]`: for each, the index of its first segment
/// and its segments; and where the tree ends.
fn use_tree(toks: &[Token<'_>], mut i: usize, prefix: &[usize]) -> (Vec<Vec<usize>>, usize) {
    let mut items = Vec::new();
    match toks.get(i).map(|t| t.text) {
        Some("{") => {
            i += 1;
            while let Some(t) = toks.get(i) {
                match t.text {
                    "}" => return (items, i + 1),
                    "," => i += 1,
                    _ => {
                        let (more, next) = use_tree(toks, i, prefix);
                        items.extend(more);
                        i = next.max(i + 1);
                    }
                }
            }
            (items, i)
        }
        Some(text) if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            let mut segments = prefix.to_vec();
            segments.push(i);
            i += 1;
            if toks.get(i).is_some_and(|t| t.text == "::") {
                return use_tree(toks, i + 1, &segments);
            }
            if toks.get(i).is_some_and(|t| t.text == "as") {
                segments.push(i + 1);
                i += 2;
            }
            (vec![segments], i)
        }
        _ => (vec![prefix.to_vec()].into_iter().filter(|p| !p.is_empty()).collect(), i + 1),
    }
}

/// What the crate's root re-exports from its modules: the name a path uses after `crate::`,
/// and the module it comes from.
fn reexports(lib: &str, modules: &BTreeSet<&str>) -> BTreeMap<String, String> {
    let code = without_test_modules(&code_only(lib));
    let toks = tokens(&code);
    let mut out = BTreeMap::new();
    for (i, t) in toks.iter().enumerate() {
        if t.text != "use" {
            continue;
        }
        let (items, _) = use_tree(&toks, i + 1, &[]);
        for item in items {
            let first = toks[item[0]].text;
            let last = toks[*item.last().unwrap()].text;
            if modules.contains(first) && item.len() > 1 {
                out.insert(last.to_owned(), first.to_owned());
            }
        }
    }
    out
}

/// The module path of a file of `src/` (`session/open.rs` → `session::open`; a `mod.rs` is
/// its folder's module).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The top-level modules the file at `rel` reaches through paths from the crate's root, with
/// the line and the path (`compaction::standing::Standing`) of each.
fn imports(
    source: &str,
    rel: &Path,
    modules: &BTreeSet<&str>,
    reexported: &BTreeMap<String, String>,
) -> Vec<(usize, String, String)> {
    let code = without_test_modules(&code_only(source));
    let toks = tokens(&code);
    let depth = module_path(rel).len();
    let line_of = |at: usize| code[..at].bytes().filter(|&c| c == b'\n').count() + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // `crate::` (or `$crate::` in a macro), or as many `super::` as climb to the root.
        let root = match toks[i].text {
            "crate" if toks.get(i + 1).is_some_and(|t| t.text == "::") => Some(i + 2),
            "super" if i == 0 || !matches!(toks[i - 1].text, "::") => {
                let mut j = i;
                let mut climbs = 0;
                while toks.get(j).is_some_and(|t| t.text == "super")
                    && toks.get(j + 1).is_some_and(|t| t.text == "::")
                {
                    climbs += 1;
                    j += 2;
                }
                (climbs == depth).then_some(j)
            }
            _ => None,
        };
        let Some(at) = root else {
            i += 1;
            continue;
        };
        let (items, next) = use_tree(&toks, at, &[]);
        for item in items {
            let head = toks[item[0]].text;
            let module = if modules.contains(head) {
                Some(head.to_owned())
            } else {
                reexported.get(head).cloned()
            };
            if let Some(module) = module {
                // A local name given with `as` is not part of the path.
                let mut path: Vec<&str> = item
                    .iter()
                    .filter(|&&k| k == 0 || toks[k - 1].text != "as")
                    .map(|&k| toks[k].text)
                    .collect();
                if path[0] != module {
                    path.insert(0, &module);
                }
                out.push((line_of(toks[item[0]].at), module.clone(), path.join("::")));
            }
        }
        i = next.max(i + 1);
    }
    out
}

/// Every upward import of the files under `src`, and the top-level modules no layer lists.
fn check(src: &Path) -> (Vec<Upward>, BTreeSet<String>) {
    let layer: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, modules))| modules.iter().map(move |m| (*m, i)))
        .collect();
    let modules: BTreeSet<&str> = layer.keys().copied().collect();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let reexported = reexports(&lib, &modules);
    let mut upward = Vec::new();
    let mut unlisted = BTreeSet::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
        let Some(from) = module_of(&rel) else { continue };
        let Some(&from_layer) = layer.get(from.as_str()) else {
            unlisted.insert(from);
            continue;
        };
        if is_test_file(&rel) {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for (line, to, imported) in imports(&source, &rel, &modules, &reexported) {
            if layer[to.as_str()] > from_layer {
                upward.push(Upward {
                    file: rel.display().to_string(),
                    line,
                    from: from.clone(),
                    to,
                    path: imported,
                });
            }
        }
    }
    (upward, unlisted)
}

/// The upward imports no exception covers, and the exceptions that cover none.
fn judge<'a>(
    upward: &'a [Upward],
    exceptions: &'a [(&'a str, &'a str, &'a str)],
) -> (Vec<&'a Upward>, Vec<&'a (&'a str, &'a str, &'a str)>) {
    let covers = |e: &(&str, &str, &str), u: &Upward| e.0 == u.file && e.1 == u.path;
    let wrong = upward.iter().filter(|u| !exceptions.iter().any(|e| covers(e, u))).collect();
    let unused = exceptions.iter().filter(|e| !upward.iter().any(|u| covers(e, u))).collect();
    (wrong, unused)
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (upward, unlisted) = check(&src);
    assert!(
        unlisted.is_empty(),
        "modules in no layer (add each to LAYERS and the doc): {unlisted:?}"
    );
    let (wrong, unused) = judge(&upward, EXCEPTIONS);
    let wrong: Vec<String> = wrong
        .iter()
        .map(|u| {
            format!(
                "{}:{}: {} imports {} ({}), a layer above it",
                u.file, u.line, u.from, u.to, u.path
            )
        })
        .collect();
    assert!(wrong.is_empty(), "imports from a lower layer to a higher one:\n{}", wrong.join("\n"));
    let unused: Vec<String> =
        unused.iter().map(|(file, path, _)| format!("{file} no longer imports {path}")).collect();
    assert!(unused.is_empty(), "take these exceptions out of the list and the doc: {unused:?}");
}

/// A source tree of `files` (path, text) in a temporary folder.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_check_finds_an_upward_import_and_ignores_tests_and_comments() {
    let dir = tree(&[
        (
            "tools/mod.rs",
            "// crate::engine in a comment\nuse crate::config;\nfn f() { crate::turn::run(); }\n\
             #[cfg(test)]\nmod tests { use crate::engine; }\n\
             const S: &str = \"crate::engine\"; const C: char = '{';\n",
        ),
        ("tools/tests.rs", "use crate::engine::Engine;\n"),
        ("newcomer.rs", ""),
    ]);
    let (upward, unlisted) = check(dir.path());
    let found: Vec<(usize, &str)> = upward.iter().map(|u| (u.line, u.to.as_str())).collect();
    assert_eq!(found, [(3, "turn")]);
    assert_eq!(unlisted.into_iter().collect::<Vec<_>>(), ["newcomer"]);
}

/// Each hole the first version of this check had, planted: a name laundered through the root's
/// re-export, shipped code after a test module, a group spanning lines, a `super::` chain to the
/// root, and a second site of a module pair one site of which is excepted. Each must be found.
#[test]
fn the_holes_of_a_text_scan_are_closed() {
    let dir = tree(&[
        ("lib.rs", "mod engine;\nmod tools;\npub use engine::{Engine, EngineParams as Params};\n"),
        (
            "tools/mod.rs",
            "use crate::Params;\n\
             #[cfg(test)]\nmod tests {\n    fn t() { let _ = '}'; }\n}\n\
             fn shipped() { crate::turn::run(); }\n\
             use crate::{\n    config,\n    engine::Engine,\n};\n",
        ),
        (
            "tools/deep/inner.rs",
            "fn f() { super::super::super::turn::run(); super::super::turn::own(); }\n",
        ),
        ("session/mod.rs", "use crate::compaction::standing::Standing;\n"),
        ("session/open.rs", "use crate::compaction::backoff::replay;\n"),
    ]);
    let (upward, _) = check(dir.path());
    let found: Vec<(&str, usize, &str)> =
        upward.iter().map(|u| (u.file.as_str(), u.line, u.path.as_str())).collect();
    assert_eq!(
        found,
        [
            ("session/mod.rs", 1, "compaction::standing::Standing"),
            ("session/open.rs", 1, "compaction::backoff::replay"),
            ("tools/deep/inner.rs", 1, "turn::run"),
            ("tools/mod.rs", 1, "engine::Params"),
            ("tools/mod.rs", 6, "turn::run"),
            ("tools/mod.rs", 9, "engine::Engine"),
        ]
    );
    let one_site = [("session/mod.rs", "compaction::standing::Standing", "")];
    let (wrong, unused) = judge(&upward, &one_site);
    assert!(wrong.iter().any(|u| u.file == "session/open.rs"), "the other site of the pair");
    assert!(unused.is_empty());
    let gone = [("session/locate.rs", "engine::EngineParams", "")];
    assert_eq!(judge(&upward, &gone).1.len(), 1, "an exception no site uses");
}
