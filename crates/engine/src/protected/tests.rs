use super::*;

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    (dir, ws)
}

/// The paths of the round that went around the old list: `.git/commondir` and its target,
/// a nested repository, a submodule's config, `anchors.md`, instruction files at any depth.
#[test]
fn every_place_git_or_codewhale_executes_is_protected_by_structure() {
    let (_dir, ws) = workspace();
    let cases = [
        (".git/cc/config", Protection::Git),
        (".git/cc/objects/info/alternates", Protection::Git),
        (".git/commondir", Protection::Git),
        (".git/modules/sub/config", Protection::Git),
        ("src/.git/HEAD", Protection::Git),
        ("src/.git/config", Protection::Git),
        ("src/.git", Protection::Git),
        (".codewhale/anchors.md", Protection::Codewhale),
        (".codewhale/config.toml", Protection::Codewhale),
        (".codewhale/commands/x.md", Protection::Codewhale),
        ("AGENTS.md", Protection::Instructions),
        ("docs/deep/CLAUDE.md", Protection::Instructions),
    ];
    for (rel, want) in cases {
        assert_eq!(is_protected(&ws, &ws.join(rel)), Some(want), "{rel}");
    }
    for rel in ["src/main.rs", "README.md", "gitconfig", "x/.gitignore", "notes/agents.txt"] {
        assert_eq!(is_protected(&ws, &ws.join(rel)), None, "{rel}");
    }
}

/// `ln -s .git/hooks d`, then `d/pre-commit`: the link leads into `.git`.
#[test]
fn a_link_or_a_hardlink_never_reaches_a_protected_place() {
    let (_dir, ws) = workspace();
    std::os::unix::fs::symlink(ws.join(".git/hooks"), ws.join("d")).unwrap();
    assert_eq!(is_protected(&ws, &ws.join("d/pre-commit")), Some(Protection::Git));
    std::os::unix::fs::symlink(ws.join(".codewhale"), ws.join("cwd")).unwrap();
    std::fs::create_dir_all(ws.join(".codewhale")).unwrap();
    assert_eq!(is_protected(&ws, &ws.join("cwd/config.toml")), Some(Protection::Codewhale));
    std::fs::hard_link(ws.join(".git/config"), ws.join("innocent.txt")).unwrap();
    assert_eq!(is_protected(&ws, &ws.join("innocent.txt")), Some(Protection::Git));
    std::fs::write(ws.join("plain.txt"), "x").unwrap();
    std::fs::hard_link(ws.join("plain.txt"), ws.join("plain2.txt")).unwrap();
    assert_eq!(is_protected(&ws, &ws.join("plain2.txt")), None, "other hardlinks are not");
}

/// A folder laid out as a repository is one, whatever it is called (`gitdir: store` points
/// git at it), and a `core.hooksPath` inside the workspace is git's hooks folder.
#[test]
fn a_repository_folder_by_another_name_and_a_hooks_path_are_protected() {
    let (_dir, ws) = workspace();
    for d in ["store/objects", "store/refs"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("store/HEAD"), "ref: refs/heads/main\n").unwrap();
    assert_eq!(is_protected(&ws, &ws.join("store/config")), Some(Protection::Git));
    assert_eq!(is_protected(&ws, &ws.join("store/hooks/pre-commit")), Some(Protection::Git));
    std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = .husky/_\n").unwrap();
    std::fs::create_dir_all(ws.join(".husky/_")).unwrap();
    assert_eq!(is_protected(&ws, &ws.join(".husky/_/pre-commit")), Some(Protection::HooksPath));
    assert_eq!(is_protected(&ws, &ws.join(".husky/readme.md")), None);
}

#[test]
fn the_read_only_binds_cover_each_git_its_targets_and_codewhale_once() {
    let (_dir, ws) = workspace();
    std::fs::create_dir_all(ws.join(".git/modules/sub")).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    std::fs::create_dir_all(ws.join("vendor/lib/.git")).unwrap();
    std::fs::create_dir_all(ws.join("cc")).unwrap();
    std::fs::write(ws.join(".git/commondir"), "../cc\n").unwrap();
    std::fs::create_dir_all(ws.join(".codewhale")).unwrap();
    std::fs::write(ws.join("AGENTS.md"), "rules").unwrap();
    // A `.git` linking to the workspace itself is never bound (it would make all of it
    // read-only); the scrub deals with it.
    std::fs::create_dir_all(ws.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", ws.join("loop/.git")).unwrap();
    let mut walk = walk::Walk::default();
    let survey = Survey::take(&ws, &mut walk);
    let instructions = [ws.join("AGENTS.md"), ws.join(".codewhale/instructions.md")];
    let ro = survey.read_only(&ws, &instructions, false);
    let want: Vec<PathBuf> =
        [".codewhale", ".git", "AGENTS.md", "cc", "sub/.git", "vendor/lib/.git"]
            .iter()
            .map(|p| ws.join(p))
            .collect();
    assert_eq!(ro, want);
    let writable = survey.read_only(&ws, &instructions, true);
    assert_eq!(writable, [ws.join(".codewhale"), ws.join("AGENTS.md")]);
}
