//! One stderr line for every engine event a user of the command line should see: what the UI
//! shows as a notice (a torn tail moved aside, lines skipped, a request trimmed, an output
//! limit) and one line per compaction pass — how it ended, with tokens before → after (a long
//! turn that compacts several times says so once per pass, not per request). `exec` and
//! `compact` print them as they arrive, so nothing the engine reports is only in `--json` or
//! the log.

use codewhale_protocol::{Event, NoticeLevel};

/// The line for `event`, without the `codewhale: ` prefix, or `None` for events that are not
/// notices (streamed text, tool calls, usage, errors, which are printed once at the end).
pub fn line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Notice { level: NoticeLevel::Info, message } => message.clone(),
        Event::Notice { level: NoticeLevel::Warning, message } => format!("warning: {message}"),
        Event::CompactionFinished { path, tokens_before, tokens_after, covered, .. } => {
            let what = if *covered > 0 {
                format!("{covered} entries summarized")
            } else {
                "long outputs shortened".to_owned()
            };
            format!("compacted ({path}, {what}): {tokens_before} → {tokens_after} tokens")
        }
        Event::CompactionFailed { reason } => {
            format!("warning: compaction failed, nothing was changed: {reason}")
        }
        Event::CompactionRefused { reason } => format!("nothing to compact: {reason}"),
        Event::CompactionCancelled => "compaction cancelled; nothing was changed".to_owned(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use codewhale_protocol::{CompactionKind, CompactionTrigger};

    use super::*;

    #[test]
    fn notices_and_compaction_steps_have_lines_and_deltas_do_not() {
        let warn = Event::Notice { level: NoticeLevel::Warning, message: "line 3: torn".into() };
        assert_eq!(line(&warn).unwrap(), "warning: line 3: torn");
        let done = Event::CompactionFinished {
            id: "c".into(),
            trigger: CompactionTrigger::Manual,
            path: CompactionKind::Summary,
            tokens_before: 9_000,
            tokens_after: 2_000,
            covered: 12,
            retained: 1,
            note: "Codewhale handoff note.".into(),
            background: false,
        };
        assert_eq!(
            line(&done).unwrap(),
            "compacted (summary, 12 entries summarized): 9000 → 2000 tokens"
        );
        let refused = Event::CompactionRefused { reason: "too few".into() };
        assert_eq!(line(&refused).unwrap(), "nothing to compact: too few");
        assert_eq!(line(&Event::TextDelta { text: "x".into() }), None);
        let started = Event::CompactionStarted { trigger: CompactionTrigger::Auto };
        assert_eq!(line(&started), None, "one line per pass: its end");
    }
}
