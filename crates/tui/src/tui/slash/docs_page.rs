//! The generator of `docs/commands.md`: the command table, the custom commands, the keys and
//! the behaviour notes, in that order. The page is compared with this text by a test, so the
//! docs cannot drift from the table; the behaviour notes are prose kept here because nothing
//! else generates them.

use super::{all, KEYS};

/// The page's title, where it comes from, and the head of the command table.
const HEADER: &str = "# Commands\n\n\
     Generated from the slash-command table of the terminal UI (`crates/tui/src/tui/slash/mod.rs`);\n\
     a test keeps this file equal to it.\n\n\
     ## Slash commands\n\n\
     | command | what it does | while a turn runs |\n\
     |---|---|---|\n";

/// What custom slash commands are and how they join the built-ins.
const CUSTOM_COMMANDS: &str =
    "\nCustom slash commands — Markdown prompts in `$CODEWHALE_HOME/commands/` and a \
     trusted workspace's `.codewhale/commands/` ([extending.md](extending.md)) — join the \
     popup after these, with their description and where they come from, and `/help` lists \
     them; `/NAME args` sends the body with `$ARGUMENTS` and `$1`…`$9` filled in (queued \
     like a message while a turn runs). One named like a built-in is said once and the \
     built-in runs; an untrusted workspace's is not offered, and typing it says why.\n";

/// The behaviour notes that close the page.
const BEHAVIOUR: &str =
    "\n## Behaviour\n\n\
     - `codewhale resume [SESSION | --last]` opens the terminal UI on an existing session; \
     without an argument it opens a picker of this workspace's sessions. A resumed session \
     shows its conversation at HEAD, newest last; scrolling to the top loads the page \
     before. What the active compaction covers is dimmed (the model reads it only through \
     the note), and the compaction's capsule sits where its note is. The session loads in \
     the background: a large one shows \"opening session (1.2 GB)…\" while keys keep \
     working, and `/resume` keeps the current session on screen until the next one is open.\n\
     - `/fork` and `/rewind` without an argument open a picker of the earlier messages \
     with previews; `/fork`, `/checkout` and `/rewind` also take an entry id or a unique \
     prefix of it (`/context` lists the ids in the current view). The notice of a HEAD \
     move stays in the transcript, and so does everything shown before the point HEAD went \
     back to (turn footers, diffs, notices); only what followed it goes. `/undo` moves no \
     HEAD: the transcript stays whole and the restore is said once under it.\n\
     - Going back to a user message with `/fork` or `/rewind` moves HEAD to before it and \
     puts its text back in the composer for editing; it is never merged into the next \
     prompt. When tools changed files after that point, a question lists them and asks \
     what to take back: the conversation (c), the code (k) or both (b). A file someone \
     else changed since (its content is neither what a tool wrote nor what it found) is \
     overwritten only on a second yes. `/undo` takes back the last turn's file changes the \
     same way. Each restore is noted in the transcript and told to the model; restoring \
     twice changes nothing. `write_file` and `edit_file` are always checkpointed; a \
     `shell` command's edits are too when the workspace is a git work tree (snapshots of \
     the worktree before and after the command, `.gitignore` honoured, kept in \
     Codewhale's own store, never in the repository). Outside git, a command's edits \
     cannot be taken back: they read as changed by someone else, and a restore over them says \
     so.\n\
     - From the shell, `codewhale rewind [--session ID | --last] --to ENTRY [--code | \
     --both] [--force]` moves HEAD back to before ENTRY (the conversation, by default), \
     with `--code` takes back only the files tools changed from ENTRY on (HEAD stays), with \
     `--both` both. It prints what it did; a file changed by someone else since is left as \
     it is and named on stderr with exit code 1, unless `--force` overwrites it; the same \
     command run again with `--force` takes back exactly those files, even though HEAD has \
     already moved. It needs no model provider: without one, files and HEAD are restored \
     and only the branch summary is skipped, with the reason on stderr. A rewind killed \
     halfway is completed by the next open of the session (the same command, `resume`, \
     `exec --last`), which says so. When the \
     rewind leaves a branch worth a summary (below), it waits for that branch's summary \
     (at most `compaction.branch_summary_timeout_sec`, default 60 s) and says whether one \
     was written; none (a timeout, a provider error) is said on stderr and does not change \
     the exit code.\n\
     - Leaving a branch that holds a tool call or more than one user turn (a rewind, a \
     fork, a checkout, an Esc Esc edit) has the summarizer write a short account of what \
     was tried there, in the background; a one-turn chat branch (one message and its \
     reply, no tool call) is simply dropped: the \
     status line says \"summarizing the branch you left…\" and keys keep working. The model \
     on the new branch reads it, and the transcript shows it as a folded cell (Ctrl+O \
     unfolds it); a message sent meanwhile waits for it. A provider error, an empty or \
     over-long reply or the timeout writes none, and a notice says why.\n\
     - `/checkout` of a branch whose files a code rewind took back (the disk does not hold \
     what the branch's tools last wrote) names those files in its notice and offers to \
     restore them: Enter restores, Esc leaves them; a file changed by someone else since \
     is overwritten only on a second yes.\n\
     - Plan mode (`--approval plan`, `/approval plan`, Shift+Tab: plan → ask → auto-edit → \
     full): the status line says `plan mode`; the model reads and runs commands with the \
     workspace read-only, and its writes are refused. When it presents a plan \
     (`update_plan`) and ends its turn, \"Plan ready — start in: auto-edit / ask / stay in \
     plan\" opens with `ask` selected: Enter switches to the mode chosen and sends \"Carry \
     out the plan.\" as the next turn; \"stay in plan\" or Esc sends nothing.\n\
     - `/btw QUESTION` answers a side question from the conversation so far, with the \
     session's model, in an overlay (Esc closes it) and as a cell in the transcript with \
     its cost; neither the question nor the answer joins what the model reads later, and \
     a resumed session shows it where it was asked.\n\
     - A compaction capsule reads \"compacted N messages · 182k → 9k tokens\": N counts the \
     model-visible messages the checkpoint replaced. Ctrl+O unfolds it to the note.\n\
     - `/compact` runs like a turn: the status line says \"compacting… · Ctrl+C cancels\"; \
     Ctrl+C or Esc cancels it and nothing is written; a message sent meanwhile is queued and \
     goes out when the pass ends.\n\
     - The status line's context gauge and `/context` show the same figures: the engine's \
     pressure as a percentage of usable input, labelled reported or estimated, with the \
     model and window requests use now (after `/model`, `/compact`, a HEAD move, an anchor \
     change and on resume, not only after a reply).\n\
     - `/anchor rm N` removes the pin from `.codewhale/anchors.md` and withdraws it from the \
     conversation: the next request leaves it out and tells the model once that it no \
     longer applies. `/anchor list` says which pins the model reads now.\n\
     - `/context` during a turn is answered when the turn ends.\n\
     - A message sent while a turn runs is queued (shown above the prompt) and sent when \
     the turn ends; Ctrl+S interrupts the turn to send it at once.\n\
     - A message the model never answered (the request failed, or was interrupted before \
     the reply began) is taken back: it returns to the composer and is not merged into the \
     next prompt. A message the last run journaled and never got a reply to (a crash, a \
     kill) is set aside the same way when the session is opened again (a `head` record of \
     reason `unanswered`); `codewhale exec` then says so on stderr.\n\
     - The gauge, `/context`, `codewhale context` and the compaction capsule read one \
     breakdown and agree to the token, rounded the same way.\n\
     - Up walks the prompt history; a recalled `/command` opens no pop-up, so Up goes on \
     walking until you type. A notice that arrives while a reply streams goes above the \
     reply, which stays one cell (Ctrl+Y copies it whole).\n\
     - `/anchor X` and `/anchor add X` both pin X; in a request a pinned note is a labelled \
     text block of its own.\n\
     - A paste of more than 5 lines or 2,000 bytes shows as a chip such as \
     `[pasted 4,812 lines · 212 KB]` and is sent in full; Backspace removes it, Ctrl+X \
     unfolds it. A message larger than the model's usable input asks before it is sent.\n\
     - `@` opens a fuzzy picker of the workspace's files (honouring `.gitignore`); the \
     chosen file's content is attached to the message as a separate entry the model reads \
     with it, which compaction may later prune like tool output.\n\
     - Prompts are kept per workspace in `$CODEWHALE_HOME/history/` (at most 1,000; \
     nothing that looks like a secret, nothing over 16 KB).\n\
     - The UI does not capture the mouse at start, so the terminal's own text selection \
     keeps working; Alt+M turns capture on for wheel scrolling (and off again). With it \
     off, most terminals turn the wheel into Up/Down on the alternate screen, which walks \
     the prompt history instead of scrolling.\n\
     - Approvals: `y` once; `a` always for this exact command (for a write or edit: every \
     edit inside the workspace); `p` always for commands that start with the program and \
     subcommand shown (`cargo test …`), offered only where it means something; `n` deny, \
     `r` deny with a reason the model reads. A compound command, pipe or redirection is \
     covered only if every part is; no grant covers Codewhale's own settings. Writes and \
     edits show their diff (scroll with Up/Down, PageUp/PageDown); the path and the keys \
     stay visible at any height; on a small terminal the reason line goes and the keys \
     shrink to a word each before the diff drops below six rows, and the diff's \
     `---`/`+++` lines, which repeat the path, are not shown. `/approval` lists the grants and shows the sandbox mode; \
     `d` revokes one. When the sandbox refused a command a write, the same view asks \
     whether to rerun it once without the sandbox: only `u` does.\n\
     - Tool calls show live output and elapsed time while they run; when folded, how they \
     ended (exit code, denied, interrupted, failed); unfolded, the first and last 20 lines \
     with the count left out. ANSI colours in output are drawn, never printed raw.\n\
     - Each turn ends with its time and, where the provider reports them, tokens in and \
     out. Retries show in the status line (\"retrying in 4 s · attempt 2/5\").\n\
     - SIGTERM, SIGHUP and a crash restore the terminal; the session is saved first.\n\
     - Quitting (Ctrl+C twice, Ctrl+D, `/quit`) asks the engine to sync the journal and \
     stop first; pressing Ctrl+C once more while it finishes leaves at once.\n\
     - When the model sets its plan (`update_plan`), the transcript shows it as a cell (✓ \
     done, ▸ in progress, · pending) and the status line shows `plan 2/5` (steps done of \
     all); the plan follows HEAD across forks, checkouts and resumes. The model's `recall` \
     calls show like any tool call; neither tool ever asks for approval.\n\
     - `!CMD` runs your own command (no approval, the session's sandbox). Its cell shows the \
     first 10 lines of the output under it, and \"… N more lines\" when there are more: \
     Ctrl+O unfolds the rest (head and tail), Ctrl+T opens all of it — live, and the same \
     after a resume.\n\
     - `/export FILE` writes the conversation as you saw it to FILE as Markdown: each \
     message under `## You` or `## Assistant`, each tool call folded to the line its cell \
     shows (✓ shell command=cargo test · 12 lines), your `!CMD` with its output, each \
     compaction as a quote of its capsule line and its note, where it happened, and the \
     turns it covers before it; reasoning the model showed is left out. A relative FILE is \
     inside the workspace, `~/` is your home; FILE is replaced whole (written beside it, \
     then renamed), readable by you alone. Without FILE the same text goes to the \
     clipboard through the terminal (OSC 52, as Ctrl+Y copies; a terminal that caps OSC 52 \
     may keep less of a long conversation: `/export FILE` has all of it). \
     During a turn the export follows when the turn ends. `codewhale export` writes the \
     same text from the shell, or JSON.\n\
     - `/cost` shows `/status`'s cost lines alone: this run's requests and tokens, and the \
     session's cost. A model without a known price shows tokens only — no dollar figure, \
     not even `$0.0000` — with where to add a price (`[pricing]` in config.toml). `/exit` \
     is `/quit`.\n\
     - `/model` without a name lists the models; typing narrows the list (fuzzy, best \
     match first), Backspace edits the filter, Esc clears it and a second Esc closes the \
     list. A window neither the catalog nor the server states (the session only guesses \
     it) shows as `?`.\n\
     - `/context` says where the window came from: `window 8192 (from Ollama's /api/ps)`, \
     `(learned from an overflow)`, `(from the model catalog)`, `(configured)`, or \
     `(unverified: a guess, …)`; `codewhale context` says the same.\n\
     - `/clear` names the conversation it kept by the shortest prefix of its id that no \
     other session shares (ids of one moment share their first characters), so `/resume \
     PREFIX` brings that one back.\n";

/// The text of `docs/commands.md`.
pub fn commands_markdown() -> String {
    let mut out = String::from(HEADER);
    push_command_rows(&mut out);
    out.push_str(CUSTOM_COMMANDS);
    push_key_rows(&mut out);
    out.push_str(BEHAVIOUR);
    out
}

/// One row per built-in command, in table order.
fn push_command_rows(out: &mut String) {
    for c in all() {
        let busy = if c.allowed_during_turn() { "yes" } else { "no" };
        let usage = c.usage().replace('|', "\\|");
        out.push_str(&format!("| `{usage}` | {} | {busy} |\n", c.description()));
    }
}

/// The keys section: its heading and one row per key.
fn push_key_rows(out: &mut String) {
    out.push_str("\n## Keys\n\n| key | action |\n|---|---|\n");
    for (key, what) in KEYS {
        out.push_str(&format!("| {key} | {what} |\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_commands_md_is_generated_from_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/commands.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        if std::env::var_os("CODEWHALE_WRITE_DOCS").is_some() {
            std::fs::write(path, commands_markdown()).unwrap();
            return;
        }
        assert_eq!(
            on_disk,
            commands_markdown(),
            "run with CODEWHALE_WRITE_DOCS=1 to regenerate docs/commands.md"
        );
    }
}
