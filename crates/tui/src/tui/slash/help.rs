//! What `/help` shows: the keys table and the help text built from the command table. The
//! key rows are the one list of keys; `/help` and `docs/commands.md` both print them, and the
//! newline row is the one that changes with what the terminal can report.

use codewhale_protocol::CustomCommandInfo;

use super::{all, custom_usage, Completion, SlashCommand};

/// The row of [`KEYS`] that needs keyboard enhancement.
const SHIFT_ENTER: &str = "Shift+Enter, Alt+Enter, Ctrl+J";

/// The keys, shown by `/help` and in the docs.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message (or run the command); while a turn runs, queue it"),
    (
        SHIFT_ENTER,
        "insert a newline (Shift+Enter where the terminal reports it: kitty, WezTerm, foot, \
         Ghostty, iTerm2 and others with the kitty keyboard protocol)",
    ),
    ("Left / Right", "move by character (a whole emoji or accented letter)"),
    ("Ctrl+Left / Ctrl+Right, Alt+Left / Alt+Right, Alt+B / Alt+F", "move by word"),
    ("Up / Down", "move between rows; on the first/last row, walk the history"),
    ("Home / End, Ctrl+A / Ctrl+E", "start / end of the line"),
    ("Ctrl+U / Ctrl+K", "delete to the start / end of the line"),
    ("Ctrl+W, Alt+Backspace, Ctrl+Backspace", "delete the word before the cursor"),
    ("Alt+D, Ctrl+Delete", "delete the word after the cursor"),
    ("Ctrl+R", "search the prompt history (kept per workspace across sessions)"),
    ("Ctrl+G", "edit the draft in $VISUAL / $EDITOR"),
    ("Ctrl+X", "unfold the pasted-text chip before the cursor into its text"),
    (
        "@",
        "mention a workspace file: pick it, and its content goes with the message (an image — \
         .png, .jpg, .gif, .webp — goes as an image)",
    ),
    (
        "Ctrl+V",
        "attach the image on the clipboard (wl-paste, xclip or pngpaste); pasting an image \
         file's path attaches it too",
    ),
    (
        "! (first)",
        "run the rest of the line as your own shell command: no approval, in the sandbox; its \
         output shows as a cell, its first 10 lines unfolded (Ctrl+O shows the rest), and the \
         model reads it with your next message",
    ),
    ("Tab", "complete a slash command or an @ file"),
    ("PageUp / PageDown", "scroll the transcript; at the top it loads earlier messages"),
    (
        "Home / End (Ctrl+Home / Ctrl+End while typing)",
        "jump to the start of the conversation / back to the newest row",
    ),
    (
        "Alt+M",
        "capture the mouse so the wheel scrolls the transcript; again to give the terminal its \
         selection back (off at start; with it off most terminals send the wheel as Up/Down, \
         which walks the prompt history)",
    ),
    ("Ctrl+F", "search the transcript: Enter or Up for an older match, Down for a newer one"),
    ("Alt+Up / Alt+Down", "focus an earlier / later tool call, compaction or thinking cell"),
    ("Ctrl+O", "unfold / fold the focused (or last) cell, keeping what you read in place"),
    ("Alt+O", "unfold / fold every cell"),
    ("Ctrl+T", "open the focused (or last) tool call's whole output in a pager (a subagent's: its conversation)"),
    ("Ctrl+Y", "copy the last reply or one of its code blocks to the clipboard (OSC 52)"),
    (
        "Esc",
        "close a pop-up or view; interrupt the running turn or compaction; twice on a draft: \
         clear it; twice on an empty composer: pick an earlier message to edit and send again \
         (Enter forks before it, its text in the composer)",
    ),
    (
        "Ctrl+C",
        "interrupt the running turn or compaction; clear the composer; twice on an empty \
         composer: quit",
    ),
    ("Ctrl+S", "with messages queued: interrupt the turn so they are sent now"),
    (
        "Shift+Tab",
        "cycle the approval mode: plan → ask → auto-edit → full (shown in the status line; applies from \
         the next tool call, also while a turn runs)",
    ),
    ("Ctrl+Z", "suspend (back with `fg`)"),
    ("Ctrl+D", "quit (on an empty composer)"),
    (
        "y / a / p / n / r",
        "in an approval: once / always for this exact command (or for edits in the workspace) / \
         always for commands starting with the program and subcommand shown / deny / deny with \
         a reason the model reads",
    ),
    (
        "u",
        "after the sandbox refused a command a write: run that one call again without the \
         sandbox (n, Esc or r keep the refused result; y does nothing there)",
    ),
];

/// `/help`'s text; without keyboard enhancement the terminal cannot tell Shift+Enter from
/// Enter, so the newline keys listed are the ones that work. The custom commands found for
/// the workspace follow the built-ins, an untrusted workspace's with why they do not run.
pub fn help_text(keyboard_enhanced: bool, custom: &[CustomCommandInfo]) -> String {
    let mut out = String::from("Commands:\n");
    for c in all() {
        let busy = if c.allowed_during_turn() { "" } else { " (not while a turn runs)" };
        out.push_str(&format!("  {}\n      {}{busy}\n", c.usage(), c.description()));
    }
    if !custom.is_empty() {
        out.push_str("Custom commands (codewhale commands lists where each comes from):\n");
        for c in custom {
            let what = match (&c.unavailable, SlashCommand::from_name(&c.name)) {
                (_, Some(_)) => "named like a built-in command, which wins".to_owned(),
                (Some(why), None) => why.clone(),
                (None, None) => Completion::Custom(c).description(),
            };
            out.push_str(&format!("  {}\n      {what}\n", custom_usage(c)));
        }
    }
    out.push_str("Keys:\n");
    for (key, what) in KEYS {
        let (key, what) = if *key == SHIFT_ENTER && !keyboard_enhanced {
            (
                "Alt+Enter, Ctrl+J",
                "insert a newline (this terminal reports Shift+Enter as Enter, so it sends)",
            )
        } else {
            (*key, *what)
        };
        out.push_str(&format!("  {key}\n      {what}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_the_newline_keys_that_work_in_this_terminal() {
        assert!(help_text(true, &[]).contains("Shift+Enter, Alt+Enter, Ctrl+J"));
        let plain = help_text(false, &[]);
        assert!(!plain.contains("Shift+Enter,"));
        assert!(plain.contains("Alt+Enter, Ctrl+J"));
    }
}
