use super::*;

fn workspace() -> (tempfile::TempDir, PathBuf, GitGuard) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    let guard = GitGuard::new(ws.clone(), vec![ws.join("AGENTS.md")]);
    (dir, ws, guard)
}

/// `src/.git/{HEAD,config,…}` made by a command: `git status` in `src/` would run the planted
/// fsmonitor. The new repository keeps its inert keys only, loses its hooks, and the model and
/// the user are told.
#[test]
fn a_nested_repository_a_command_made_is_scrubbed_and_named() {
    let (_dir, ws, guard) = workspace();
    let before = guard.before();
    let git = ws.join("src/.git");
    for d in ["objects", "refs", "hooks"] {
        std::fs::create_dir_all(git.join(d)).unwrap();
    }
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(git.join("config"), "[core]\n\tbare = false\n\tfsmonitor = \"touch ~/c\"\n")
        .unwrap();
    std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    let found = guard.after(&before);
    assert!(found.changed.is_empty(), "{found:?}");
    let what: Vec<String> = found.scrubbed.iter().map(|r| r.what.clone()).collect();
    assert_eq!(what, ["core.fsmonitor", "the hook"]);
    assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "[core]\n\tbare = false\n");
    let model = found.for_model(&ws).unwrap();
    assert!(model.contains("src/.git/config: core.fsmonitor"), "{model}");
    assert!(found.for_user(&ws, "a command").unwrap().contains("created a .git"));
}

/// A `.git` pointer made to lead outside the workspace is removed; one inside stays.
#[test]
fn a_new_pointer_outside_the_workspace_is_removed() {
    let (_dir, ws, guard) = workspace();
    let outside = tempfile::tempdir().unwrap();
    let before = guard.before();
    std::fs::create_dir_all(ws.join("a")).unwrap();
    std::fs::write(ws.join("a/.git"), format!("gitdir: {}\n", outside.path().display())).unwrap();
    std::fs::create_dir_all(ws.join("b")).unwrap();
    std::fs::write(ws.join("b/.git"), "gitdir: ../.git\n").unwrap();
    let found = guard.after(&before);
    assert!(!ws.join("a/.git").exists());
    assert!(ws.join("b/.git").exists());
    assert_eq!(found.scrubbed.len(), 1, "{found:?}");
    assert!(found.scrubbed[0].what.starts_with("it pointed outside the workspace"));
}

#[test]
fn an_instruction_file_a_command_created_is_reported() {
    let (_dir, ws, guard) = workspace();
    let before = guard.before();
    std::fs::write(ws.join("AGENTS.md"), "new rules").unwrap();
    let found = guard.after(&before);
    assert_eq!(found.new_instructions, [ws.join("AGENTS.md")]);
    assert!(ws.join("AGENTS.md").exists(), "named, not removed");
    assert!(found.for_model(&ws).unwrap().contains("unless the user accepts it"));
}

/// A background command that plants a hook after the last foreground command is checked when
/// it ends: the hook is removed and the model hears of it with its next result.
#[test]
fn a_background_command_is_checked_when_it_ends() {
    let (_dir, ws, guard) = workspace();
    let bg = guard.background_started();
    // A foreground command meanwhile is checked against the same snapshot.
    let fg = guard.before();
    assert!(guard.after(&fg).is_empty());
    std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\ntouch ~/owned\n").unwrap();
    // A foreground command started now would not take the plant for the user's own state.
    let fg = guard.before();
    assert_eq!(guard.after(&fg).changed.len(), 1);
    std::fs::write(ws.join(".git/hooks/post-checkout"), "#!/bin/sh\n").unwrap();
    guard.background_ended("bg-1", &bg);
    assert!(!ws.join(".git/hooks/post-checkout").exists());
    let told = guard.take_for_model().unwrap();
    assert!(
        told.contains("when bg-1 ended") && told.contains(".git/hooks/post-checkout"),
        "{told}"
    );
    assert!(guard.take_for_model().is_none(), "told once");
}

/// The user's own command: named, kept.
#[test]
fn the_users_own_command_is_named_not_put_back() {
    let (_dir, ws, guard) = workspace();
    let before = guard.before();
    std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    assert_eq!(guard.after_user(&before), [".git/hooks/pre-commit"]);
    assert!(ws.join(".git/hooks/pre-commit").exists());
    // And it is the state later commands are checked against.
    let next = guard.before();
    assert!(guard.after(&next).is_empty());
}

/// While a background command runs, what the user changed (a pinned anchor, an approved write)
/// is kept: no later check puts it back.
#[test]
fn what_the_user_accepts_while_a_background_command_runs_is_kept() {
    let (_dir, ws, guard) = workspace();
    std::fs::create_dir_all(ws.join(".codewhale")).unwrap();
    std::fs::write(ws.join(".codewhale/anchors.md"), "one\n").unwrap();
    let bg = guard.background_started();
    std::fs::write(ws.join(".codewhale/anchors.md"), "one\n---\ntwo\n").unwrap();
    guard.accept(&[ws.join(".codewhale/anchors.md")]);
    let fg = guard.before();
    assert!(guard.after(&fg).is_empty(), "the user's anchor stays");
    guard.background_ended("bg-1", &bg);
    assert_eq!(
        std::fs::read_to_string(ws.join(".codewhale/anchors.md")).unwrap(),
        "one\n---\ntwo\n"
    );
}
