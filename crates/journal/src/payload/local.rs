//! The payloads the model never reads: `system` notices (with the hook runs they report),
//! `side` questions and explicit `head` moves. Field names are part of the format
//! (docs/journal-format.md), as everywhere in `payload`.

use super::{FileChange, Reads, Usage};
use crate::entry_id::EntryId;
use crate::json_object::{record, string_enum};

string_enum! {
    /// Severity of a local notice.
    pub enum Level { Info = "info", Warning = "warning", Error = "error" }
    default Info
}

record! {
    /// `system`: a local notice (refusal, error, command output). Never shown to the model.
    pub struct SystemPayload {
        text: String = "text" info,
        level: Level = "level" info,
        /// Optional: the model requests use from here on (a model switch).
        model: Option<String> = "model" info_opt,
        /// Optional: a context window learned for this session and model (a provider's
        /// overflow error, a silent cut, a local server's answer).
        context_window: Option<u64> = "context_window" info_opt,
        /// Optional: where that window came from (`overflow`, `overflow-unnumbered`,
        /// `truncation`, `probe:ollama-ps`, `probe:ollama-show`, `probe:llamacpp-props`,
        /// `probe:lmstudio`).
        window_source: Option<String> = "window_source" info_opt,
        /// Optional: the window the learned one replaced.
        window_before: Option<u64> = "window_before" info_opt,
        /// Optional: a compaction pass could not get a usable summary from the model (auto
        /// passes back off; replayed when the session is opened again).
        summary_failed: bool = "summary_failed" info_flag,
        /// Optional: the restore this entry reports (a rewind or `/undo` that took files back);
        /// the id of its intent, so a restore a kill interrupted is journaled once.
        restore_id: Option<String> = "restore_id" info_opt,
        /// Optional: the files that restore left as they were (changed by someone else since),
        /// each with the content it would have gone back to (`before`) and the last content a
        /// tool recorded (`after`); a later forced restore of the same point takes them back.
        left: Option<Vec<FileChange>> = "left" info_opt,
        /// Optional: the entry reports one run of a user's hook (`[[hooks.EVENT]]`).
        hook: Option<HookRun> = "hook" info_opt,
    }
}

record! {
    /// One run of a user's hook: its event, its command line, its exit code (absent when it
    /// was killed: past its timeout or its output bound, or by a signal) and how long it ran.
    #[derive(Default)]
    pub struct HookRun {
        event: String = "event" req,
        command: String = "command" req,
        exit: Option<i64> = "exit" info,
        duration_ms: u64 = "duration_ms" info,
    }
}

record! {
    /// `side`: a side question (`/btw`) and its answer, from the context HEAD had then. On the
    /// chain like a `system` notice (its parent is HEAD, so it moves HEAD) and never in the
    /// model's view: what the model reads next is what it would have read without it.
    #[derive(Default)]
    pub struct SidePayload {
        question: String = "question" info,
        answer: String = "answer" info,
        /// The model that answered.
        model: Option<String> = "model" info,
        usage: Option<Usage> = "usage" info,
        /// The view the answer was read from.
        reads: Option<Reads> = "reads" info,
    }
}

string_enum! {
    /// Why HEAD was moved explicitly.
    pub enum HeadReason {
        Checkout = "checkout",
        Fork = "fork",
        Retry = "retry",
        Edit = "edit",
        Rewind = "rewind",
        /// A last user message that never got a reply (the process ended first) is set
        /// aside, so that it is offered back and never merged into the next prompt.
        Unanswered = "unanswered",
    }
    default Checkout
}

record! {
    /// `head`: an explicit HEAD move. Not a DAG node: nothing is ever parented on it.
    pub struct HeadPayload {
        to: EntryId = "to" req,
        reason: HeadReason = "reason" info,
    }
}
