//! What the user brought (docs/extending.md): custom slash commands in the popup, in `/help`,
//! run as `Op::RunCommand`, an untrusted workspace's refused with why; `/init` writing the
//! instruction file that is read.

use codewhale_protocol::{CustomCommandInfo, Event, ExtensionSource, Op};

use super::Harness;

fn opened(h: &mut Harness, commands: Vec<CustomCommandInfo>, instructions: Vec<String>) {
    h.engine(
        0,
        Event::SessionConfigured {
            session_id: "0193c0de-0000-7000-8000-000000000003".into(),
            model: "gpt-test".into(),
            path: "sessions/s3.jsonl".into(),
            resumed: false,
            workspace: "project".into(),
            approval: Default::default(),
            instructions,
            commands,
        },
    );
}

/// The screen's words in one line: a notice wrapped at the width reads whole.
fn flat(screen: &str) -> String {
    screen.replace('"', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

fn command(name: &str, source: ExtensionSource, unavailable: Option<&str>) -> CustomCommandInfo {
    CustomCommandInfo {
        name: name.into(),
        description: format!("The {name} command"),
        argument_hint: "<issue>".into(),
        source,
        unavailable: unavailable.map(str::to_owned),
    }
}

#[test]
fn a_custom_command_completes_in_the_popup_and_runs_with_its_arguments() {
    let mut h = Harness::new();
    let found = vec![
        command("fix-issue", ExtensionSource::Workspace, None),
        command("greet", ExtensionSource::Home, None),
    ];
    opened(&mut h, found, Vec::new());
    h.type_str("/fi");
    let screen = h.screen();
    assert!(screen.contains("/fix-issue <issue>"), "{screen}");
    assert!(screen.contains("The fix-issue command (workspace)"), "{screen}");
    h.key(crossterm::event::KeyCode::Tab, crossterm::event::KeyModifiers::NONE);
    assert_eq!(h.app.composer.text(), "/fix-issue ");
    h.type_str("123 \"login bug\"");
    h.enter();
    assert_eq!(
        h.ops(),
        [Op::RunCommand { name: "fix-issue".into(), args: "123 \"login bug\"".into() }]
    );
}

#[test]
fn an_untrusted_workspace_command_is_not_offered_and_saying_it_says_why() {
    let mut h = Harness::new();
    let why = "/deploy is a command of this workspace's .codewhale/commands/, and the workspace \
               is not trusted";
    opened(&mut h, vec![command("deploy", ExtensionSource::Workspace, Some(why))], Vec::new());
    h.type_str("/dep");
    assert!(!h.screen().contains("/deploy <issue>"), "not in the popup");
    h.type_str("loy now");
    h.enter();
    assert!(h.ops().is_empty(), "{:?}", h.ops());
    let screen = flat(&h.screen());
    assert!(screen.contains("and the workspace is not trusted"), "{screen}");
}

#[test]
fn help_lists_custom_commands_and_a_clash_is_named_once() {
    let mut h = Harness::new();
    opened(
        &mut h,
        vec![
            command("compact", ExtensionSource::Home, None),
            command("greet", ExtensionSource::Home, None),
        ],
        Vec::new(),
    );
    let screen = flat(&h.screen());
    assert!(screen.contains("/compact (home) is named like a built-in"), "{screen}");
    assert_eq!(screen.matches("named like a built-in").count(), 1, "{screen}");
    // `/compact` stays the built-in.
    h.type_str("/compact");
    h.enter();
    assert!(matches!(h.ops().as_slice(), [Op::Compact { .. }]), "{:?}", h.ops());
    let help = super::super::slash::help_text(true, &h.app.session.commands);
    assert!(help.contains("/greet <issue>\n      The greet command (home)"), "{help}");
}

#[test]
fn init_writes_claude_md_when_that_is_the_instruction_file_read() {
    let mut h = Harness::new();
    opened(&mut h, Vec::new(), vec!["../AGENTS.md".into(), "CLAUDE.md".into()]);
    h.type_str("/init");
    h.enter();
    let Some(Op::UserInput { text, .. }) = h.ops().pop() else { panic!("{:?}", h.ops()) };
    assert!(text.starts_with("Write CLAUDE.md at the root"), "{text}");
    assert!(!text.contains("AGENTS.md"), "{text}");
    let mut h = Harness::new();
    opened(&mut h, Vec::new(), vec!["../CLAUDE.md".into()]);
    h.type_str("/init");
    h.enter();
    let Some(Op::UserInput { text, .. }) = h.ops().pop() else { panic!("{:?}", h.ops()) };
    assert!(text.starts_with("Write AGENTS.md"), "{text}");
}
