//! The engine's folders are its layers (docs/architecture.md, *Layers*): each top-level module
//! of `src/` belongs to one layer, and shipped code imports only its own layer and the ones
//! below. This check reads every `crate::<module>` path of the source (tests left out: they may
//! reach anywhere) and fails on an import from a lower layer to a higher one, naming the file
//! and line. The few upward imports the design still has are listed with their reason; one
//! that is no longer there fails the check too, so the list stays true.

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
            "importing",
            "user_shell",
        ],
    ),
    ("compaction", &["compaction"]),
    ("operations", &["answers", "rewind", "side_question", "subagent", "turn"]),
    ("front", &["engine", "eval", "offline"]),
];

/// Upward imports the design still has: (from, to, why).
const EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "session",
    "compaction",
    "the session holds compaction's standing (backoff, the background note's slot, the \
         summary clock), whose types are compaction's",
)];

/// An import from a lower layer to a higher one.
#[derive(Debug, PartialEq, Eq)]
struct Upward {
    file: String,
    line: usize,
    from: String,
    to: String,
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

/// The modules `source` (a file of module `from`) names as `crate::<module>`, with their
/// line; test modules at the end of the file and comments are left out.
fn imports(source: &str, modules: &BTreeSet<&str>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if modules.contains(name.as_str()) {
                out.push((n + 1, name));
            }
        }
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
        for (line, to) in imports(&source, &modules) {
            if layer[to.as_str()] > from_layer {
                upward.push(Upward {
                    file: rel.display().to_string(),
                    line,
                    from: from.clone(),
                    to,
                });
            }
        }
    }
    (upward, unlisted)
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
    let allowed = |u: &&Upward| EXCEPTIONS.iter().any(|(f, t, _)| *f == u.from && *t == u.to);
    let wrong: Vec<String> = upward
        .iter()
        .filter(|u| !allowed(u))
        .map(|u| format!("{}:{}: {} imports {}, a layer above it", u.file, u.line, u.from, u.to))
        .collect();
    assert!(wrong.is_empty(), "imports from a lower layer to a higher one:\n{}", wrong.join("\n"));
    for (from, to, _) in EXCEPTIONS {
        let used = upward.iter().any(|u| u.from == *from && u.to == *to);
        assert!(
            used,
            "{from} no longer imports {to}: take the exception out of the list and the doc"
        );
    }
}

#[test]
fn the_check_finds_an_upward_import_and_ignores_tests_and_comments() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("tools")).unwrap();
    std::fs::write(
        src.join("tools/mod.rs"),
        "// crate::engine in a comment\nuse crate::config;\nfn f() { crate::turn::run(); }\n\
         #[cfg(test)]\nmod tests { use crate::engine; }\n",
    )
    .unwrap();
    std::fs::write(src.join("tools/tests.rs"), "use crate::engine::Engine;\n").unwrap();
    std::fs::write(src.join("newcomer.rs"), "").unwrap();
    let (upward, unlisted) = check(src);
    let found: Vec<(usize, &str)> = upward.iter().map(|u| (u.line, u.to.as_str())).collect();
    assert_eq!(found, [(3, "turn")]);
    assert_eq!(unlisted.into_iter().collect::<Vec<_>>(), ["newcomer"]);
}
