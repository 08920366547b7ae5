//! The context report in words (`codewhale context`, `/context`) and a branch as pickers and
//! reports show it: the text both surfaces print, so they agree to the character.

use codewhale_protocol::{BackgroundState, BranchInfo, ContextReport, Figure};

const BAR_WIDTH: u64 = 50;

/// Where the window came from, in words, from the report's `window_source`
/// (`config`, `catalog`, `default`, `overflow`, `overflow-unnumbered`, `truncation`,
/// `probe:…`); `None` when the report does not say.
pub fn window_origin(source: &str) -> Option<String> {
    let said = match source {
        "" => return None,
        "config" => "configured",
        "catalog" => "from the model catalog",
        "default" => "unverified: a guess, the catalog does not know this model",
        "overflow" => "learned from an overflow",
        "overflow-unnumbered" => "learned from an overflow that named no window",
        "truncation" => "learned from a prompt the server cut short",
        "probe:ollama-ps" => "from Ollama's /api/ps",
        "probe:llamacpp-props" => "from llama.cpp's /props",
        "probe:lmstudio" => "from LM Studio's /api/v0/models",
        other => match other.strip_prefix("probe:") {
            Some(probe) => return Some(format!("from the server ({probe})")),
            None => return Some(format!("source: {other}")),
        },
    };
    Some(said.to_owned())
}

/// The human-readable report.
pub fn human(r: &ContextReport) -> String {
    let mut out = head(r);
    push_breakdown(&mut out, r);
    push_compaction(&mut out, r);
    push_anchors_and_branches(&mut out, r);
    push_background_and_stores(&mut out, r);
    out
}

/// The session, the model, and the window with where it came from and how it is divided.
fn head(r: &ContextReport) -> String {
    let origin = match window_origin(&r.window_source) {
        Some(origin) => format!(" ({origin})"),
        None if r.window_unverified => " (unverified)".to_owned(),
        None => String::new(),
    };
    format!(
        "session {}  model {}\nwindow {}{origin} · reserved output {} · usable input {} · \
         auto-compaction at {}\n\n",
        r.session, r.model, r.context_window, r.reserved_output, r.usable_input, r.threshold
    )
}

/// The kinds of tokens the next request holds, with the mark each draws in the bar.
fn parts(r: &ContextReport) -> [(char, &'static str, u64); 8] {
    let t = &r.tokens;
    [
        ('S', "system", t.system),
        ('X', "tool schemas", t.tools),
        ('A', "anchors", t.anchors),
        ('C', "checkpoint", t.checkpoint),
        ('R', "retained", t.retained),
        ('H', "history", t.history),
        ('T', "tool results", t.tool_results),
        ('I', "images", t.images),
    ]
}

/// The bar of the window, the total, what the last request left out and one line per kind.
fn push_breakdown(out: &mut String, r: &ContextReport) {
    let t = &r.tokens;
    let parts = parts(r);
    let scale = r.context_window.max(1);
    let mut bar = String::new();
    for (mark, _, n) in parts {
        bar.extend(std::iter::repeat_n(mark, (n * BAR_WIDTH / scale) as usize));
    }
    let reserved = (r.reserved_output * BAR_WIDTH / scale) as usize;
    let free = (BAR_WIDTH as usize).saturating_sub(bar.chars().count() + reserved);
    bar.extend(std::iter::repeat_n('.', free));
    bar.extend(std::iter::repeat_n('o', reserved));
    // A conversation past its window would draw past the bar's end.
    let bar: String = bar.chars().take(BAR_WIDTH as usize).collect();
    let percent = Figure { tokens: t.total, source: t.source }.percent_of(r.usable_input);
    out.push_str(&format!(
        "[{bar}]\n{} tokens ({}), {percent}% of usable input\n",
        t.total,
        t.source.as_str()
    ));
    if t.left_out > 0 {
        out.push_str(&format!(
            "the last request left out {} tokens of the oldest messages to fit the window (the \
             journal keeps them whole; the next turn tries to compact again)\n",
            t.left_out
        ));
    }
    for (mark, name, n) in parts {
        // A conversation without images has no line for them.
        if mark == 'I' && n == 0 {
            continue;
        }
        out.push_str(&format!("  {mark} {name:<13} {n:>8} (estimated)\n"));
    }
    out.push_str(&format!("  o {:<13} {:>8}\n", "reserved output", r.reserved_output));
    out.push_str(&format!("  . {:<13} {:>8}\n\n", "free", r.usable_input.saturating_sub(t.total)));
}

/// The active compaction, the records of all of them, and the last round kept.
fn push_compaction(out: &mut String, r: &ContextReport) {
    match &r.compaction {
        Some(c) => {
            let covered = c.covers.as_ref().map_or(0, |v| v.count);
            let figures = match (c.tokens_before, c.tokens_after) {
                (Some(b), Some(a)) => format!("{b} → {a} tokens"),
                _ => "figures not recorded".to_owned(),
            };
            out.push_str(&format!(
                "active compaction: {} ({}) at {}, covers {covered} entries, {} retained, {figures}, model {}\n",
                c.path.as_str(),
                c.trigger.as_str(),
                c.when,
                c.retained,
                c.model.as_deref().unwrap_or("none")
            ));
        }
        None => out.push_str("no active compaction\n"),
    }
    out.push_str(&format!("compaction records in this session: {}\n", r.compactions));
    let lr = &r.last_round;
    out.push_str(&format!(
        "last round: {} messages, {} tool results, {} assistant messages\n",
        lr.messages, lr.tool_results, lr.assistant_kept
    ));
}

/// The anchors pinned and whether the model reads them, and the branches when there are several.
fn push_anchors_and_branches(out: &mut String, r: &ContextReport) {
    let a = &r.anchors;
    if a.count == 0 {
        out.push_str("anchors: none (add one with `codewhale anchor add TEXT`)\n");
    } else {
        let state = if a.present {
            "present verbatim in the view"
        } else {
            "NOT in the view yet; the next checkpoint restates them"
        };
        out.push_str(&format!("anchors: {} ({} characters), {state}\n", a.count, a.chars));
    }
    if r.branches.len() > 1 {
        out.push_str(&format!(
            "branches: {} (newest first; `/checkout` takes the id ending shown)\n",
            r.branches.len()
        ));
        for b in &r.branches {
            let here = if b.current { "  ← HEAD" } else { "" };
            out.push_str(&format!("  {}{here}\n", branch_label(b)));
        }
    }
}

/// The background note, the file checkpoints' store and the skills named or left out.
fn push_background_and_stores(out: &mut String, r: &ContextReport) {
    if let Some(b) = &r.background {
        let state = match b.state {
            BackgroundState::Writing => "being written",
            BackgroundState::Ready => "ready, waiting for the threshold",
        };
        out.push_str(&format!(
            "background note: {state} (committed when pressure reaches {}; never journaled if \
             unused)\n",
            r.threshold
        ));
    }
    if r.file_store_bytes > 0 {
        out.push_str(&format!(
            "file checkpoints: {} bytes in the session's store (what /rewind and /undo take back)\n",
            r.file_store_bytes
        ));
    }
    if !r.skills.listed.is_empty() {
        out.push_str(&format!(
            "skills named in the system prompt: {}\n",
            r.skills.listed.join(", ")
        ));
    }
    if !r.skills.left_out.is_empty() {
        out.push_str(&format!(
            "skills left out of the system prompt (past 50, or past 2 % of usable input): {}\n",
            r.skills.left_out.join(", ")
        ));
    }
}

/// A branch as pickers and reports show it: "…id-ending  YYYY-MM-DD HH:MM  preview".
pub fn branch_label(b: &BranchInfo) -> String {
    let when = b.when.get(..16).unwrap_or(&b.when).replace('T', " ");
    format!("…{}  {when}  {}", id_ending(&b.tip), b.preview)
}

/// The last characters of an entry id: what pickers show, and what `/checkout`, `/fork` and
/// `/rewind` accept back. UUIDv7 ids of one session share their first characters (a
/// timestamp), so the ending is the part that tells them apart.
pub fn id_ending(id: &str) -> &str {
    let at = id.len().saturating_sub(ID_ENDING);
    id.get(at..).unwrap_or(id)
}

/// Characters of an entry id shown by pickers and reports.
const ID_ENDING: usize = 8;

#[cfg(test)]
mod tests {
    use codewhale_protocol::report::{
        ActiveReport, AnchorsReport, CoversReport, LastRound, Tokens,
    };
    use codewhale_protocol::{CompactionKind, CompactionTrigger, Source};

    use super::*;

    #[test]
    fn the_human_report_names_every_part_and_its_source() {
        let report = ContextReport {
            session: "s-1".into(),
            head: "h".into(),
            model: "m".into(),
            context_window: 1_000,
            window_source: "default".to_owned(),
            window_unverified: true,
            reserved_output: 250,
            usable_input: 750,
            threshold: 600,
            tokens: Tokens {
                total: 500,
                source: Source::Reported,
                system: 60,
                tools: 40,
                anchors: 20,
                checkpoint: 80,
                retained: 40,
                history: 160,
                tool_results: 100,
                images: 0,
                left_out: 0,
            },
            compaction: Some(ActiveReport {
                id: "c".into(),
                path: CompactionKind::Summary,
                trigger: CompactionTrigger::Manual,
                covers: Some(CoversReport { first: "a".into(), last: "b".into(), count: 12 }),
                retained: 2,
                tokens_before: Some(900),
                tokens_after: Some(300),
                model: Some("m".into()),
                when: "2026-11-29T18:00:00Z".into(),
            }),
            compactions: 3,
            last_round: LastRound { messages: 5, tool_results: 2, assistant_kept: 2 },
            anchors: AnchorsReport { count: 2, chars: 40, present: true },
            plan: None,
            background: Some(codewhale_protocol::report::BackgroundReport {
                state: BackgroundState::Ready,
            }),
            view: Vec::new(),
            branches: Vec::new(),
            file_store_bytes: 0,
            skills: Default::default(),
        };
        let text = human(&report);
        for needle in [
            "window 1000 (unverified: a guess",
            "500 tokens (reported), 67% of usable input",
            "checkpoint",
            "summary (manual)",
            "covers 12 entries, 2 retained, 900 → 300 tokens",
            "compaction records in this session: 3",
            "last round: 5 messages, 2 tool results",
            "anchors: 2 (40 characters), present verbatim",
            "background note: ready, waiting for the threshold (committed when pressure reaches 600",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
        }
        let bar = text.lines().find(|l| l.starts_with('[')).unwrap();
        assert_eq!(bar.chars().count(), BAR_WIDTH as usize + 2);
    }

    /// `/context` and `codewhale context` say where the window came from, as `/status` does.
    #[test]
    fn the_window_says_where_it_came_from() {
        let said = |source: &str| window_origin(source).unwrap_or_default();
        assert_eq!(said("probe:ollama-ps"), "from Ollama's /api/ps");
        assert_eq!(said("overflow"), "learned from an overflow");
        assert_eq!(said("catalog"), "from the model catalog");
        assert_eq!(said("config"), "configured");
        assert_eq!(said("probe:vllm"), "from the server (vllm)");
        assert_eq!(window_origin(""), None);
    }
}
