//! Where in a config file's text a value was written, and the errors that name it: the file,
//! the 1-based line and the dotted key (with its table).
//!
//! Invariant: a line is always one of the file's lines (an error at the very end is on the
//! last line), so an error never points past the file.

use std::ops::Range;

use toml::Spanned;

use crate::config::values::ConfigValue;
use crate::config::ConfigError;

/// How an error names the file, the line (of a span) and the key.
pub(super) type Invalid<'a> = dyn Fn(Option<Range<usize>>, String) -> ConfigError + 'a;

/// `v` checked as a `T`; a failure names `v`'s line and key.
pub(super) fn check<T: ConfigValue>(
    v: Spanned<T::Raw>,
    invalid: &Invalid<'_>,
) -> Result<T, ConfigError> {
    let span = v.span();
    T::check(v.into_inner()).map_err(|reason| invalid(Some(span), reason))
}

/// [`check`] for a key that may be absent.
pub(super) fn checked<T: ConfigValue>(
    v: Option<Spanned<T::Raw>>,
    invalid: &Invalid<'_>,
) -> Result<Option<T>, ConfigError> {
    v.map(|v| check(v, invalid)).transpose()
}

/// The 1-based line of byte `offset` and the dotted key defined on that line (with its table).
pub(super) fn locate(text: &str, offset: usize) -> (usize, String) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or_default();
    // An error at the very end (after a final newline) is on the last line, not past it.
    let line_no = (before.matches('\n').count() + 1).min(text.lines().count().max(1));
    let line = text.lines().nth(line_no - 1).unwrap_or_default().trim();
    let table = before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
    let key = match line.split_once('=') {
        Some((key, _)) => key.trim().to_owned(),
        None => line.trim_matches(|c| c == '[' || c == ']').trim().to_owned(),
    };
    let key = match table {
        Some(table) if !line.starts_with('[') => format!("{table}.{key}"),
        _ => key,
    };
    (line_no, key)
}
