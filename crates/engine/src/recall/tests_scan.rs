//! Tests of `recall`'s fast search on a session read from its file: the raw-line prefilter
//! (words written as JSON escapes, case folding beyond ASCII), and the same answers as the
//! straightforward search that parses every entry and places every match.

use codewhale_journal::{
    load_read_only, AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry,
    EntryId, HeaderPayload, ToolResultPayload, Trigger, UserPayload,
};

use super::search::{snippet, terms};
use super::*;

/// A session file whose conversation is `payloads` (then one exchange), all covered by a
/// compaction, with `tweak` applied to the file's text before it is loaded (to write lines
/// as another JSON writer might). The journal is loaded from the file, so nothing is held.
fn file_session(
    payloads: Vec<Payload>,
    tweak: impl Fn(String) -> String,
) -> (tempfile::TempDir, Journal, Vec<EntryId>) {
    let header = Entry::new(None, HeaderPayload::new("s", "/w"));
    let mut lines = vec![header.to_line().unwrap()];
    let mut ids = Vec::new();
    let mut parent = header.id.clone();
    let count = payloads.len() as u64;
    let tail: Vec<Payload> = vec![
        UserPayload::text("And now?").into(),
        AssistantPayload::new(vec![Block::text("Done.")]).into(),
    ];
    for payload in payloads.into_iter().chain(tail) {
        let e = Entry::new(Some(parent.clone()), payload);
        parent = e.id.clone();
        ids.push(e.id.clone());
        lines.push(e.to_line().unwrap());
    }
    let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
    let last = ids[count as usize - 1].clone();
    record.covers = Some(Covers::new(ids[0].clone(), last, count));
    record.note = "Codewhale handoff note. x\n\n## Objective\nWork.".into();
    record.summary = Some("## Objective\nWork.".into());
    lines.push(Entry::new(Some(header.id.clone()), record).to_line().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, tweak(lines.join("\n") + "\n")).unwrap();
    let journal = load_read_only(&path).unwrap().journal;
    ids.truncate(count as usize);
    (dir, journal, ids)
}

fn query(journal: &Journal, q: &str) -> String {
    let view = codewhale_journal::render(journal, journal.head_id().as_str());
    let redactor = Redactor::default();
    let ctx = RecallContext {
        journal,
        view: &view,
        room_chars: 1 << 20,
        redactor: &redactor,
        trim: None,
    };
    run(&ctx, &json!({"query": q, "max_chars": 1 << 20})).unwrap()
}

fn output(text: &str) -> Payload {
    ToolResultPayload::new("t", text, false).into()
}

#[test]
fn words_written_as_json_escapes_are_found_and_escapes_make_no_false_words() {
    let payloads = vec![
        output("the café opened at nine"),
        output("zeta function"),
        output(r"see path\to\file for the config"),
        UserPayload::text("ÉCOLE normale supérieure").into(),
        output("alpha\nbeta"),
    ];
    // Another writer's escapes: é as \u00e9, the z of zeta as \u007a.
    let (_dir, journal, ids) = file_session(payloads, |text| {
        text.replace("café", r"caf\u00e9").replace("zeta", r"\u007aeta")
    });
    let raw = std::fs::read_to_string(_dir.path().join("s.jsonl")).unwrap();
    assert!(
        raw.contains(r"caf\u00e9") && raw.contains(r"\u007aeta"),
        "the escapes are in the file"
    );
    let first_hit = |q: &str| {
        let out = query(&journal, q);
        let line = out.lines().find(|l| l.starts_with("1. entry ")).unwrap_or_default();
        (line.to_owned(), out)
    };
    for (q, want) in [("CAFÉ", 0), ("Zeta", 1), (r"path\to\file", 2), ("école", 3), ("beta", 4)] {
        let (line, out) = first_hit(q);
        assert!(line.contains(ids[want].as_str()), "{q:?} finds entry {want}: {out}");
        assert!(out.starts_with("1 of the"), "{q:?} matches one entry: {out}");
    }
    // The raw line holds `\nbeta`; the text holds a line break, so no word "nbeta".
    assert!(query(&journal, "nbeta").starts_with("no match"));
    assert!(query(&journal, "u00e9").starts_with("no match"));
}

#[test]
fn case_folding_beyond_ascii_matches_in_raw_lines_as_in_text() {
    let payloads = vec![
        output("ПРИВЕТ мир from the server"),
        UserPayload::text("Straße closed; use the ΣΊΣΥΦΟΣ route").into(),
        output("plain ascii only"),
    ];
    let (_dir, journal, ids) = file_session(payloads, |t| t);
    let out = query(&journal, "привет");
    assert!(out.starts_with("1 of the") && out.contains(ids[0].as_str()), "{out}");
    let out = query(&journal, "σίσυφος straße");
    assert!(out.starts_with("1 of the") && out.contains(ids[1].as_str()), "{out}");
    assert!(query(&journal, "мир").contains(ids[0].as_str()));
}

/// The search as it was before the scan was made fast: every entry parsed, every match
/// placed. The fast one must answer exactly as it does.
fn straightforward(ctx: &RecallContext<'_>, query: &str) -> String {
    let terms = terms(query);
    // Two or more words are a phrase, found anywhere whatever the case and the whitespace.
    let words: Vec<String> = query
        .trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '“' | '”'))
        .split_whitespace()
        .map(regex::escape)
        .collect();
    let phrase = (words.len() >= 2).then(|| {
        regex::RegexBuilder::new(&words.join(r"\s+")).case_insensitive(true).build().unwrap()
    });
    let alternation: Vec<String> = terms.iter().map(|t| regex::escape(t)).collect();
    let finder =
        regex::RegexBuilder::new(&alternation.join("|")).case_insensitive(true).build().unwrap();
    let in_scope = ctx.scope();
    let mut hits = Vec::new();
    for &(pos, absence) in &in_scope {
        let entry = ctx.journal.read_entry(pos);
        let Some((kind, text)) = entry_text(&entry.payload) else { continue };
        let mut seen = vec![false; terms.len()];
        let mut found: Vec<(usize, usize)> = Vec::new();
        for m in finder.find_iter(&text) {
            let word = m.as_str().to_lowercase();
            if let Some(i) = terms.iter().position(|t| *t == word) {
                seen[i] = true;
                found.push((m.start(), i));
            }
            if found.len() >= 1_024 {
                break;
            }
        }
        let distinct = seen.iter().filter(|s| **s).count();
        if distinct == 0 {
            continue;
        }
        let at = super::search::densest(&found, terms.len());
        let score = distinct * 100 + found.len().min(20);
        let exact = phrase.as_ref().and_then(|p| p.find(&text)).map(|m| m.start());
        let (score, at) = match exact {
            Some(start) => (score + 1_000_000, start),
            None => (score, at),
        };
        hits.push((score, pos, absence, kind, snippet(&text, at)));
    }
    let searched = in_scope.len();
    if hits.is_empty() {
        return format!(
            "no match for {query:?} among the {searched} entries your context does not carry \
             whole; try other words (an identifier, a path, a phrase from the error)"
        );
    }
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut out = format!(
        "{} of the {searched} entries your context does not carry whole match {query:?}; the \
         best {}:\n",
        hits.len(),
        hits.len().min(8)
    );
    for (n, (score, pos, absence, kind, snippet)) in hits.iter().take(8).enumerate() {
        let id = ctx.journal.id_at(*pos).to_string();
        let exact = if *score >= 1_000_000 { " · exact phrase" } else { "" };
        out.push_str(&format!(
            "\n{}. entry {id} · {kind} · {}{exact}\n   {snippet}\n",
            n + 1,
            absence.as_str()
        ));
    }
    out.push_str("\nRecall one of them with entry=<id> to read it whole.");
    out
}

/// Entries made of a few words in several cases and scripts, some long enough for more than
/// a thousand matches, some with escapes; the same queries against the session read from its
/// file (raw lines, prefiltered) and held in memory (parsed entries) answer exactly as the
/// straightforward search does.
#[test]
fn the_fast_search_answers_exactly_as_the_straightforward_one() {
    const WORDS: [&str; 12] = [
        "parser",
        "PARSER",
        "Token",
        "span",
        "\"quoted\"",
        "path\\to",
        "café",
        "CAFÉ",
        "42",
        "module_42",
        "\n",
        "résumé\t",
    ];
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut payloads: Vec<Payload> = Vec::new();
    for i in 0..60 {
        let len = if i % 17 == 0 { 3_000 } else { 5 + next(60) };
        let text: Vec<&str> = (0..len).map(|_| WORDS[next(WORDS.len())]).collect();
        let text = text.join(" ");
        payloads.push(match i % 3 {
            0 => output(&text),
            1 => UserPayload::text(text).into(),
            _ => AssistantPayload::new(vec![
                Block::text(text.clone()),
                Block::tool_use(format!("t{i}"), "shell", json!({"command": text})),
            ])
            .into(),
        });
    }
    // As written (outputs searched undecoded), and as another writer might (every é a `\u`
    // escape: those lines are decoded first).
    let (_dir, journal, _) = file_session(payloads.clone(), |t| t);
    let (_dir2, escaped, _) = file_session(payloads, |t| t.replace("é", r"\u00e9"));
    let mut held = Journal::new(journal.header_entry().clone()).unwrap();
    for pos in 1..journal.len() as u32 {
        held.push(journal.read_entry(pos).into_owned());
    }
    let queries = [
        "parser",
        "token span",
        "café résumé",
        "\"quoted\" path\\to",
        "module_42 42",
        "CAFÉ parser token span 42",
        "nothing-like-this",
        "u00e9",
        "résumé",
        "span\nparser",
        "\"token span café\"",
    ];
    for journal in [&journal, &escaped, &held] {
        let view = codewhale_journal::render(journal, journal.head_id().as_str());
        let redactor = Redactor::default();
        let ctx = RecallContext {
            journal,
            view: &view,
            room_chars: 1 << 20,
            redactor: &redactor,
            trim: None,
        };
        for q in queries {
            let fast = super::search::search(&ctx, q).unwrap();
            assert_eq!(fast, straightforward(&ctx, q), "query {q:?}");
        }
        // Sanity: the comparison is over real hits, not empty answers.
        assert!(super::search::search(&ctx, "parser").unwrap().contains("the best 8"));
    }
}

/// The pieces the property below builds texts and queries from: words, their case and
/// folding variants (the Kelvin sign, the long s), and every character JSON escapes.
const PIECES: [&str; 18] = [
    "beta",
    "nbeta",
    "test",
    "TEST",
    "teſt",
    "kelvin",
    "\u{212a}elvin",
    "café",
    "CAFÉ",
    "u00e9",
    "/",
    "src/lib",
    "\n",
    "\t",
    "\"",
    "\\",
    " ",
    "x",
];

proptest::proptest! {
    /// A tool output searched as it stands in its line scores as its decoded text does,
    /// whatever escapes fall inside or next to a match; and it is searched undecoded whenever
    /// the query allows (no quote, backslash or control character in a term).
    #[test]
    fn an_output_scores_undecoded_as_decoded(
        text in proptest::collection::vec(proptest::sample::select(PIECES.to_vec()), 0..40),
        words in proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(PIECES.to_vec()), 1..3), 1..4),
        foreign in proptest::bool::ANY,
    ) {
        let text = text.concat();
        let words: Vec<String> = words.iter().map(|w| w.concat()).collect();
        let Ok(q) = super::search::Query::new(&words.join(" ")) else { return Ok(()) };
        let json = serde_json::to_string(&text).unwrap();
        let mut raw = json[1..json.len() - 1].to_owned();
        if foreign {
            // Another writer: slashes escaped, and é as a `\u` escape.
            raw = raw.replace('/', r"\/").replace('é', r"\u00e9");
        }
        let undecoded = q.score_raw(raw.as_bytes());
        if let Some(score) = undecoded {
            proptest::prop_assert_eq!(score, q.score(&text), "{:?} in {:?}", words, raw);
        } else if !foreign {
            // Only a query with such a character, or what reads like a `\u` or `\/` escape
            // (here an escaped backslash before a u or a slash), makes it decode.
            let looks_escaped = raw.contains(r"\u") || raw.contains(r"\/");
            proptest::prop_assert!(q.decode_all || looks_escaped, "{:?} in {:?}", words, raw);
        }
    }
}
