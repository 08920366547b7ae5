//! `recall`'s search: the entries in scope ranked by a query's words.
//!
//! An entry's score is `100 × distinct terms + min(matches, 20)`, over at most
//! [`MAX_MATCHES`] matches; the best [`MAX_HITS`] are listed (among equals, the newest), each
//! with a snippet where most terms meet, and the answer says how many entries matched. A query
//! of two or more words is also a phrase: an entry that holds it as written (any case, any run
//! of whitespace between the words) ranks above every entry that only holds its words, and its
//! snippet is where the phrase stands — the model that quotes an error message finds the entry
//! that printed it, not the ones where its words are merely frequent.
//!
//! How it stays fast on a long session without changing what it answers (docs/compaction.md,
//! *`recall`: the journal is one call away* asks for under a second on a 270 MB session):
//! - the lines in scope are read in runs of a few megabytes ([`Journal::scan_lines`]), never
//!   held, instead of one read per entry and another per tool output;
//! - a user text or tool output whose raw line cannot hold a match is never parsed
//!   ([`Query::may_match`]); one that can is parsed from the bytes already read;
//! - an entry's matches are counted only until more of them cannot change its score, and the
//!   snippet (the costly part: every match placed) is made for the listed hits only.
//!
//! The prefilter is exact in the one direction that matters: it may let through a line that
//! has no match (the entry is then parsed and scored as before), never drop one that has.

use std::ops::ControlFlow;

use codewhale_journal::{EntryId, Journal, LineRef, Payload};

use super::{entry_text, Absence, RecallContext};

/// At most this many hits are listed.
const MAX_HITS: usize = 8;

/// Characters of context on each side of a hit's first match.
pub(super) const SNIPPET_SIDE: usize = 160;

/// Matches looked at per entry: enough to find where the terms meet in a long output.
const MAX_MATCHES: usize = 1_024;

/// Threads a long scope is searched on, at most.
const MAX_THREADS: usize = 4;

/// Entries below which a scope is searched on one thread (a thread costs more than they do).
const PART_MIN: usize = 2_048;

/// Matches past which more of them add nothing to a score.
const COUNTED_MATCHES: usize = 20;

/// What an exact phrase adds to a score: more than any count of words can.
const PHRASE_BONUS: usize = 1_000_000;

/// Words too common to rank by.
const STOPWORDS: [&str; 32] = [
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "is", "was", "what", "which",
    "who", "how", "did", "does", "do", "we", "i", "you", "it", "that", "this", "with", "at", "by",
    "be", "are", "from", "as",
];

/// The words of a query worth ranking by, lowercased, each once.
pub(super) fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split_whitespace() {
        let word = word
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '/')
            .to_lowercase();
        if word.chars().count() < 2 || STOPWORDS.contains(&word.as_str()) || out.contains(&word) {
            continue;
        }
        out.push(word);
    }
    out
}

/// A query, ready to run over many entries.
pub(super) struct Query {
    terms: Vec<String>,
    /// Any term, case-insensitively, over an entry's text.
    finder: regex::Regex,
    /// The same over the bytes of a tool output as it stands in its line.
    raw_finder: regex::bytes::Regex,
    /// Over a raw JSON line: a piece of any term that JSON writes as it is ([`needles`]), or
    /// a `\u` escape. `None` when some term has no such piece; every line is then parsed.
    needles: Option<regex::bytes::Regex>,
    /// True when some term holds a `/`: an output written with `\/` is then decoded first.
    slash: bool,
    /// True when some term holds a quote, a backslash or a control character: every output
    /// is then decoded before it is searched.
    pub(super) decode_all: bool,
    /// `\u` and `\/`, looked for in tool outputs searched undecoded.
    unicode_escape: memchr::memmem::Finder<'static>,
    slash_escape: memchr::memmem::Finder<'static>,
    /// The query as a phrase, when it has two or more words.
    phrase: Option<Phrase>,
}

/// A query's words in order, any run of whitespace between them, case-insensitively: over an
/// entry's text, and over a tool output as it stands in its line (where a newline, a tab, a
/// carriage return or a form feed between the words is a two-byte escape).
struct Phrase {
    text: regex::Regex,
    raw: regex::bytes::Regex,
}

impl Phrase {
    /// The phrase of `words`; `None` for fewer than two, or a pattern that does not build.
    fn new(words: &[&str]) -> Option<Phrase> {
        if words.len() < 2 {
            return None;
        }
        let escaped: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
        let text =
            regex::RegexBuilder::new(&escaped.join(r"\s+")).case_insensitive(true).build().ok()?;
        let raw = regex::bytes::RegexBuilder::new(&escaped.join(r"(?:\s|(?-i:\\[ntrf]))+"))
            .case_insensitive(true)
            .build()
            .ok()?;
        Some(Phrase { text, raw })
    }

    /// Where the phrase first stands in `text`.
    fn find(&self, text: &str) -> Option<usize> {
        self.text.find(text).map(|m| m.start())
    }

    /// Whether the phrase stands in a JSON string as written in its line (no `\u` escape in
    /// it, and no word of the phrase holds a character JSON escapes): a match that starts on
    /// an escape's letter (the `n` of `\n`) is passed over, as in [`Query::score_raw`].
    fn in_raw(&self, bytes: &[u8]) -> bool {
        let mut at = 0;
        while let Some(m) = self.raw.find_at(bytes, at) {
            let backslashes = bytes[..m.start()].iter().rev().take_while(|&&b| b == b'\\').count();
            if backslashes % 2 == 0 {
                return true;
            }
            at = m.start() + 1;
        }
        false
    }
}

/// The words of `query` as a phrase: split at whitespace, the quotes around the whole query
/// taken off (a model often quotes the phrase it looks for).
fn phrase_words(query: &str) -> Vec<&str> {
    let trimmed = query.trim().trim_matches(|c| matches!(c, '"' | '\'' | '`' | '“' | '”'));
    trimmed.split_whitespace().collect()
}

/// Characters a JSON writer may escape (a quote, a backslash, a slash, control characters):
/// in a raw line they need not stand as they do in the text.
fn escapable(c: char) -> bool {
    matches!(c, '"' | '\\' | '/') || c.is_control()
}

/// For each term, its longest run of characters that a JSON writer puts down as they are
/// (except as a `\u` escape, which [`Query::may_match`] looks for separately). A match of the
/// term in an entry's text is, in the line's JSON, a match of its run: each character of the
/// match folds to one of the term's, and none of those is escapable, so none is written as
/// anything but itself or a `\u` escape. `None` when a term is all escapable characters.
fn needles(terms: &[String]) -> Option<Vec<String>> {
    terms
        .iter()
        .map(|t| {
            t.split(escapable)
                .max_by_key(|piece| piece.chars().count())
                .filter(|piece| !piece.is_empty())
                .map(str::to_owned)
        })
        .collect()
}

impl Query {
    pub(super) fn new(query: &str) -> Result<Query, String> {
        let words = phrase_words(query);
        let mut terms = terms(query);
        if terms.is_empty() && words.len() >= 2 {
            // A phrase of common words ("to be or not to be"): its words are searched after
            // all, and the phrase ranks.
            for word in &words {
                let word = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
                if !word.is_empty() && !terms.contains(&word) {
                    terms.push(word);
                }
            }
        }
        if terms.is_empty() {
            return Err("the query has no word to search for; name the thing you need (an \
                        identifier, a path, an error message)"
                .to_owned());
        }
        let either =
            |words: &[String]| words.iter().map(|t| regex::escape(t)).collect::<Vec<_>>().join("|");
        let finder = regex::RegexBuilder::new(&either(&terms))
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("the query cannot be searched for: {e}; use plain words"))?;
        let raw_finder = regex::bytes::RegexBuilder::new(&either(&terms))
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("the query cannot be searched for: {e}; use plain words"))?;
        // The same case folding as `finder`, on UTF-8 bytes, and any `\u` escape, in one
        // pass. A pattern that does not build (too large) just turns the prefilter off.
        let needles = needles(&terms).and_then(|n| {
            let pattern = format!(r"{}|\\u", either(&n));
            regex::bytes::RegexBuilder::new(&pattern).case_insensitive(true).build().ok()
        });
        let phrase = Phrase::new(&words);
        // The phrase's words hold the terms and the characters trimmed off them: with a
        // phrase, those decide which outputs are searched undecoded.
        let spelled: Vec<&str> = if phrase.is_some() {
            words.clone()
        } else {
            terms.iter().map(String::as_str).collect()
        };
        let slash = spelled.iter().any(|t| t.contains('/'));
        let decode_all = spelled.iter().any(|t| t.chars().any(|c| c != '/' && escapable(c)));
        Ok(Query {
            terms,
            finder,
            raw_finder,
            needles,
            slash,
            decode_all,
            unicode_escape: memchr::memmem::Finder::new(br"\u"),
            slash_escape: memchr::memmem::Finder::new(br"\/"),
            phrase,
        })
    }

    /// False only when `raw`, the JSON line of a user message or a tool result, cannot hold
    /// a match in its text: none of the terms' runs is in it, and it has no `\u` escape (which
    /// could spell a term's character some other way). Assistant lines are not asked: their
    /// text includes tool-call inputs re-encoded, which need not read as the line does.
    pub(super) fn may_match(&self, raw: &[u8]) -> bool {
        match &self.needles {
            None => true,
            Some(needles) => needles.is_match(raw),
        }
    }

    /// The score of a tool output from its JSON string as it stands in the line (`raw`,
    /// between the quotes), the same as [`Query::score`] of the decoded text; `None` for no
    /// match, or (the outer `None`) when the string has an escape this cannot see through.
    ///
    /// Why it is the same: with no `\u` escape in `raw`, every escape is two bytes and
    /// decodes to a quote, a backslash, a slash or a control character; when no term holds
    /// such a character (nor one that folds to it), no match of the decoded text holds one.
    /// The decoded text is then the runs of `raw` between escapes, joined by characters no
    /// match crosses, and its matches are those of each run searched alone. A match of the
    /// search over `raw` never holds a backslash, so it lies in one run unless it starts on
    /// an escape's letter (the `n` of `\n` followed by the rest of a term): that one is
    /// passed over, and the search goes on in the next run, right after it.
    ///
    /// The bytes are not checked to be UTF-8 (a check would cost as much as the search): in
    /// a damaged output, what is not UTF-8 matches no term, and the rest is searched.
    pub(super) fn score_raw(&self, bytes: &[u8]) -> Option<Option<usize>> {
        if self.decode_all
            || self.unicode_escape.find(bytes).is_some()
            || (self.slash && self.slash_escape.find(bytes).is_some())
        {
            return None;
        }
        let mut count = Counter::new(self.terms.len());
        let mut at = 0;
        while let Some(m) = self.raw_finder.find_at(bytes, at) {
            let backslashes = bytes[..m.start()].iter().rev().take_while(|&&b| b == b'\\').count();
            if backslashes % 2 == 1 {
                // On an escape's letter: the next run starts right after it.
                at = m.start() + 1;
                continue;
            }
            at = m.end();
            let word = std::str::from_utf8(m.as_bytes()).ok();
            if let Some(i) = word.and_then(|w| self.term_of(w)) {
                if count.add(i) {
                    break;
                }
            }
        }
        let phrase = self.phrase.as_ref().filter(|_| count.distinct > 0);
        let bonus = phrase.is_some_and(|p| p.in_raw(bytes));
        Some(count.score().map(|s| if bonus { s + PHRASE_BONUS } else { s }))
    }

    /// The term `word` (a match of `finder`) is, when it is one as lowercase.
    fn term_of(&self, word: &str) -> Option<usize> {
        // Terms are lowercase; most matches are ASCII and compare without allocating.
        if word.is_ascii() {
            self.terms.iter().position(|t| t.eq_ignore_ascii_case(word))
        } else {
            let lower = word.to_lowercase();
            self.terms.iter().position(|t| *t == lower)
        }
    }

    /// The score of `text`, `None` when no term is in it. Matches are counted only until
    /// more of them cannot change the score.
    pub(super) fn score(&self, text: &str) -> Option<usize> {
        let mut count = Counter::new(self.terms.len());
        for m in self.finder.find_iter(text) {
            if let Some(i) = self.term_of(m.as_str()) {
                if count.add(i) {
                    break;
                }
            }
        }
        // The phrase holds every term: an entry without any cannot hold it.
        let phrase = self.phrase.as_ref().filter(|_| count.distinct > 0);
        let bonus = phrase.is_some_and(|p| p.find(text).is_some());
        count.score().map(|s| if bonus { s + PHRASE_BONUS } else { s })
    }

    /// The snippet of a hit: where the phrase stands, else where most terms meet among its
    /// first [`MAX_MATCHES`] matches.
    fn snippet(&self, text: &str) -> String {
        if let Some(at) = self.phrase.as_ref().and_then(|p| p.find(text)) {
            return snippet(text, at);
        }
        let mut found: Vec<(usize, usize)> = Vec::new();
        for m in self.finder.find_iter(text) {
            if let Some(i) = self.term_of(m.as_str()) {
                found.push((m.start(), i));
                if found.len() >= MAX_MATCHES {
                    break;
                }
            }
        }
        snippet(text, densest(&found, self.terms.len()))
    }
}

/// What a score counts: the terms seen, and the matches.
struct Counter {
    seen: Vec<bool>,
    distinct: usize,
    matches: usize,
}

impl Counter {
    fn new(terms: usize) -> Counter {
        Counter { seen: vec![false; terms], distinct: 0, matches: 0 }
    }

    /// Counts a match of term `i`; true when more matches cannot change the score (every
    /// term seen and [`COUNTED_MATCHES`] counted), or [`MAX_MATCHES`] were looked at.
    fn add(&mut self, i: usize) -> bool {
        if !std::mem::replace(&mut self.seen[i], true) {
            self.distinct += 1;
        }
        self.matches += 1;
        self.matches >= MAX_MATCHES
            || (self.distinct == self.seen.len() && self.matches >= COUNTED_MATCHES)
    }

    /// `100 × distinct terms + min(matches, 20)`; `None` when no term was seen.
    fn score(&self) -> Option<usize> {
        (self.distinct > 0).then(|| self.distinct * 100 + self.matches.min(COUNTED_MATCHES))
    }
}

/// An entry that matched.
struct Hit {
    pos: u32,
    score: usize,
    absence: Absence,
}

pub(super) fn search(ctx: &RecallContext<'_>, query: &str) -> Result<String, String> {
    let q = Query::new(query)?;
    let journal = ctx.journal;
    let in_scope = ctx.scope();
    // Long scopes are cut in contiguous parts, one thread each, so that each still reads
    // its part of the file in order.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
    let part = in_scope.len().div_ceil(threads).max(PART_MIN);
    let mut hits: Vec<Hit> = std::thread::scope(|s| {
        let parts: Vec<_> =
            in_scope.chunks(part).map(|chunk| s.spawn(|| scan(journal, &q, chunk))).collect();
        parts.into_iter().try_fold(Vec::new(), |mut all, part| {
            all.extend(part.join().map_err(|_| {
                "recall's search stopped on an internal error (it is logged); try again, or recall an entry by its id"
                    .to_owned()
            })?);
            Ok::<_, String>(all)
        })
    })?;
    let searched = in_scope.len();
    if hits.is_empty() {
        return Ok(format!(
            "no match for {query:?} among the {searched} entries your context does not carry \
             whole; try other words (an identifier, a path, a phrase from the error)"
        ));
    }
    // Best first; among equals, the newest.
    hits.sort_unstable_by(|a, b| b.score.cmp(&a.score).then(b.pos.cmp(&a.pos)));
    let total = hits.len();
    let mut out = format!(
        "{total} of the {searched} entries your context does not carry whole match {query:?}; \
         the best {}:\n",
        total.min(MAX_HITS)
    );
    for (n, hit) in hits.iter().take(MAX_HITS).enumerate() {
        let entry = journal.read_entry(hit.pos);
        let (kind, text) = entry_text(&entry.payload).unwrap_or(("entry", "".into()));
        let id = EntryId::from(&*journal.id_at(hit.pos));
        let exact = if hit.score >= PHRASE_BONUS { " · exact phrase" } else { "" };
        out.push_str(&format!(
            "\n{}. entry {id} · {kind} · {}{exact}\n   {}\n",
            n + 1,
            hit.absence.as_str(),
            q.snippet(&text)
        ));
    }
    out.push_str("\nRecall one of them with entry=<id> to read it whole.");
    Ok(out)
}

/// Scores the entries of `part` (of the scope, in order), reading their lines in runs.
fn scan(journal: &Journal, q: &Query, part: &[(u32, Absence)]) -> Vec<Hit> {
    let positions: Vec<u32> = part.iter().map(|(p, _)| *p).collect();
    let mut hits = Vec::new();
    let mut index = 0;
    journal.scan_lines(&positions, |pos, line| {
        // `scan_lines` hands the positions over in order, once each.
        let absence = part[index].1;
        index += 1;
        let score = match line {
            LineRef::Entry(entry) => score_of(q, &entry.payload),
            LineRef::Raw(raw) => {
                let kind = journal.kind_at(pos);
                let output = (kind == "tool_result").then(|| journal.raw_output(pos, raw));
                match output.flatten().and_then(|o| q.score_raw(o)) {
                    Some(score) => score,
                    None if matches!(kind, "user" | "tool_result") && !q.may_match(raw) => None,
                    None => score_of(q, &journal.parse_raw(pos, raw).payload),
                }
            }
        };
        if let Some(score) = score {
            hits.push(Hit { pos, score, absence });
        }
        ControlFlow::Continue(())
    });
    hits
}

fn score_of(q: &Query, payload: &Payload) -> Option<usize> {
    let (_, text) = entry_text(payload)?;
    q.score(&text)
}

/// The position of the match whose snippet window holds the most distinct terms (the first
/// such one), so a hit shows the line that matters rather than the first stray word.
pub(super) fn densest(found: &[(usize, usize)], terms: usize) -> usize {
    let mut best = (0usize, found.first().map_or(0, |f| f.0));
    let mut seen = vec![false; terms];
    for (i, &(start, _)) in found.iter().enumerate() {
        seen.iter_mut().for_each(|s| *s = false);
        let window = found[i..].iter().take_while(|(p, _)| *p < start + SNIPPET_SIDE);
        let mut distinct = 0;
        for &(_, term) in window {
            if !std::mem::replace(&mut seen[term], true) {
                distinct += 1;
            }
        }
        if distinct > best.0 {
            best = (distinct, start);
        }
        if distinct == terms {
            break;
        }
    }
    best.1
}

/// About [`SNIPPET_SIDE`] characters on each side of byte `at`, on one line.
pub(super) fn snippet(text: &str, at: usize) -> String {
    let mut start = text.floor_char_boundary(at.saturating_sub(SNIPPET_SIDE * 2));
    // Count characters, not bytes, on the left.
    let left: Vec<(usize, char)> = text[start..at.min(text.len())].char_indices().collect();
    if left.len() > SNIPPET_SIDE {
        start += left[left.len() - SNIPPET_SIDE].0;
    }
    let end = text[at.min(text.len())..]
        .char_indices()
        .nth(SNIPPET_SIDE)
        .map_or(text.len(), |(i, _)| at + i);
    let body: String = text[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < text.len() { "…" } else { "" };
    format!("{lead}{body}{tail}")
}
