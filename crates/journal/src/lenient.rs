//! Reading informational fields tolerantly (docs/journal-format.md, "read tolerantly, write
//! exactly").
//!
//! Only what the view needs — ids, parents, kinds, `covers`, content blocks — can make a line
//! invalid. Every other field is informational: a receipt counter, a usage figure, a model name,
//! a timestamp. Other tools write these files too, and one that writes `"assistant_kept": true`
//! where Codewhale writes a number must not make a whole compaction record disappear. So such
//! fields are read through [`Lax`], which takes any JSON value, converts what it can (`true` →
//! 1, `"12"` → 12, `3.0` → 3, a number → its text) and falls back to the field's default
//! otherwise.
//!
//! Every conversion is noted, with the field's name, in a per-thread log that the loader empties
//! after each line ([`take_coercions`]); `journal check` reports the notes as warnings with the
//! line number. A `null` or absent informational field is simply unset and noted nowhere.
//! Writing is unaffected: Codewhale always writes the declared type.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// At most this many notes are kept per line; a line that needs more is noted as such.
const MAX_NOTES: usize = 8;

thread_local! {
    static NOTES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// How many notes the log holds (so a caller can name the fields noted after this point).
pub(crate) fn mark() -> usize {
    NOTES.with(|n| n.borrow().len())
}

/// Prefixes the notes taken since `mark` with the field they were found in.
pub(crate) fn name_since(mark: usize, field: &str) {
    NOTES.with(|n| {
        for note in n.borrow_mut().iter_mut().skip(mark) {
            if note.starts_with('`') {
                // Already named by a nested record: extend the path.
                *note = format!("`{field}.{}", &note[1..]);
            } else {
                *note = format!("`{field}`: {note}");
            }
        }
    });
}

fn note(text: String) {
    NOTES.with(|n| {
        let mut n = n.borrow_mut();
        if n.len() < MAX_NOTES {
            n.push(text);
        }
    });
}

/// Empties the log, returning what it held: the conversions of the line just parsed.
pub fn take_coercions() -> Vec<String> {
    NOTES.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

/// A field read tolerantly: see the module docs.
pub(crate) struct Lax<T>(pub(crate) T);

/// A type that can be read from any JSON value, converting or defaulting (and noting it).
pub(crate) trait Lenient: Sized {
    fn from_loose(loose: Loose<'_>) -> Self;
}

impl<'de, T: Lenient> Deserialize<'de> for Lax<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Lax(T::from_loose(d.deserialize_any(LooseVisitor)?)))
    }
}

/// Any JSON value, with containers kept only when a lenient type may want them.
pub(crate) enum Loose<'de> {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(Cow<'de, str>),
    /// An object or array, kept as a tree (informational containers are small).
    Tree(Value),
}

impl Loose<'_> {
    fn describe(&self) -> String {
        match self {
            Loose::Null => "null".into(),
            Loose::Bool(b) => format!("the boolean {b}"),
            Loose::U64(n) => format!("the number {n}"),
            Loose::I64(n) => format!("the number {n}"),
            Loose::F64(n) => format!("the number {n}"),
            Loose::Str(s) => format!("the string {:?}", excerpt(s)),
            Loose::Tree(Value::Array(_)) => "an array".into(),
            Loose::Tree(_) => "an object".into(),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Loose::Null => Value::Null,
            Loose::Bool(b) => Value::Bool(b),
            Loose::U64(n) => Value::from(n),
            Loose::I64(n) => Value::from(n),
            Loose::F64(n) => Value::from(n),
            Loose::Str(s) => Value::String(s.into_owned()),
            Loose::Tree(v) => v,
        }
    }
}

fn excerpt(s: &str) -> String {
    s.chars().take(40).collect()
}

fn coerced(found: &Loose<'_>, expected: &str, read_as: impl fmt::Display) {
    note(format!("expected {expected}, found {}; read as {read_as}", found.describe()));
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Loose<'de>, E> {
        Ok(Loose::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Loose<'de>, E> {
        Ok(Loose::U64(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Loose<'de>, E> {
        Ok(Loose::I64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Loose<'de>, E> {
        Ok(Loose::F64(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Loose<'de>, E> {
        Ok(Loose::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Loose<'de>, E> {
        Ok(Loose::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Loose<'de>, E> {
        Ok(Loose::Str(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Loose<'de>, E> {
        Ok(Loose::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Loose<'de>, E> {
        Ok(Loose::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Loose<'de>, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose<'de>, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = map.next_value::<Value>()?;
            out.insert(key.into_owned(), value);
        }
        Ok(Loose::Tree(Value::Object(out)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose<'de>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        Ok(Loose::Tree(Value::Array(out)))
    }
}

impl Lenient for u64 {
    fn from_loose(loose: Loose<'_>) -> u64 {
        let expected = "a non-negative integer";
        match &loose {
            Loose::Null => 0,
            Loose::U64(n) => *n,
            Loose::Bool(b) => {
                coerced(&loose, expected, u64::from(*b));
                u64::from(*b)
            }
            Loose::I64(_) => {
                coerced(&loose, expected, 0);
                0
            }
            Loose::F64(f) if f.is_finite() && *f >= 0.0 => {
                let n = f.trunc() as u64;
                if f.fract() != 0.0 {
                    coerced(&loose, expected, n);
                }
                n
            }
            Loose::Str(s) => match s.trim().parse::<u64>() {
                Ok(n) => {
                    coerced(&loose, expected, n);
                    n
                }
                Err(_) => {
                    coerced(&loose, expected, 0);
                    0
                }
            },
            _ => {
                coerced(&loose, expected, 0);
                0
            }
        }
    }
}

impl Lenient for u32 {
    fn from_loose(loose: Loose<'_>) -> u32 {
        u32::try_from(u64::from_loose(loose)).unwrap_or(u32::MAX)
    }
}

impl Lenient for bool {
    fn from_loose(loose: Loose<'_>) -> bool {
        let expected = "true or false";
        match &loose {
            Loose::Null => false,
            Loose::Bool(b) => *b,
            Loose::U64(n) => {
                coerced(&loose, expected, *n != 0);
                *n != 0
            }
            Loose::Str(s) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") => {
                let b = s.eq_ignore_ascii_case("true");
                coerced(&loose, expected, b);
                b
            }
            _ => {
                coerced(&loose, expected, false);
                false
            }
        }
    }
}

impl Lenient for Option<bool> {
    fn from_loose(loose: Loose<'_>) -> Option<bool> {
        match loose {
            Loose::Null => None,
            other => Some(bool::from_loose(other)),
        }
    }
}

impl Lenient for String {
    fn from_loose(loose: Loose<'_>) -> String {
        Option::<String>::from_loose(loose).unwrap_or_default()
    }
}

impl Lenient for Option<String> {
    fn from_loose(loose: Loose<'_>) -> Option<String> {
        match loose {
            Loose::Null => None,
            Loose::Str(s) => Some(s.into_owned()),
            other => {
                let text = match &other {
                    Loose::Tree(v) => v.to_string(),
                    _ => other.describe(),
                };
                let shown = match &other {
                    Loose::Bool(b) => b.to_string(),
                    Loose::U64(n) => n.to_string(),
                    Loose::I64(n) => n.to_string(),
                    Loose::F64(n) => n.to_string(),
                    _ => text,
                };
                coerced(&other, "a string", format!("{shown:?}"));
                Some(shown)
            }
        }
    }
}

impl Lenient for Option<u64> {
    fn from_loose(loose: Loose<'_>) -> Option<u64> {
        match loose {
            Loose::Null => None,
            other => Some(u64::from_loose(other)),
        }
    }
}

impl Lenient for Option<i64> {
    fn from_loose(loose: Loose<'_>) -> Option<i64> {
        match loose {
            Loose::Null => None,
            Loose::I64(n) => Some(n),
            Loose::U64(n) => Some(i64::try_from(n).unwrap_or(i64::MAX)),
            other => {
                coerced(&other, "an integer", "absent");
                None
            }
        }
    }
}

impl Lenient for Option<f64> {
    fn from_loose(loose: Loose<'_>) -> Option<f64> {
        let expected = "a non-negative number";
        match loose {
            Loose::Null => None,
            Loose::U64(n) => Some(n as f64),
            Loose::F64(f) if f.is_finite() && f >= 0.0 => Some(f),
            other => {
                coerced(&other, expected, "absent");
                None
            }
        }
    }
}

impl Lenient for Option<u32> {
    fn from_loose(loose: Loose<'_>) -> Option<u32> {
        match loose {
            Loose::Null => None,
            other => Some(u32::from_loose(other)),
        }
    }
}

impl Lenient for Vec<String> {
    fn from_loose(loose: Loose<'_>) -> Vec<String> {
        match loose {
            Loose::Null => Vec::new(),
            Loose::Tree(Value::Array(items)) => items
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    Value::Null => None,
                    other => {
                        note(format!(
                            "expected a list of strings, found {other} in it; read as text"
                        ));
                        Some(other.to_string())
                    }
                })
                .collect(),
            other => {
                coerced(&other, "a list of strings", "an empty list");
                Vec::new()
            }
        }
    }
}

/// A string-valued enum: its text, or the default (noted) for anything else.
pub(crate) fn string_or_default<T: Default>(
    loose: Loose<'_>,
    what: &str,
    from: impl FnOnce(&str) -> T,
) -> T {
    match &loose {
        Loose::Str(s) => from(s),
        Loose::Null => T::default(),
        other => {
            note(format!(
                "expected a {what} name, found {}; read as the default",
                other.describe()
            ));
            T::default()
        }
    }
}

/// Types read through their own strict `Deserialize`, falling back to the default (noted) when
/// the value does not fit: small informational objects (`usage`, `reads`, `receipt`), ids and
/// timestamps.
pub(crate) trait ViaValue: for<'de> Deserialize<'de> + Default {
    const EXPECTED: &'static str;
}

impl<T: ViaValue> Lenient for T {
    fn from_loose(loose: Loose<'_>) -> T {
        if matches!(loose, Loose::Null) {
            return T::default();
        }
        let described = loose.describe();
        match T::deserialize(loose.into_value()) {
            Ok(v) => v,
            Err(e) => {
                note(format!("expected {}, found {described} ({e}); ignored", T::EXPECTED));
                T::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: Lenient>(json: &str) -> (T, Vec<String>) {
        take_coercions();
        let v: Lax<T> = serde_json::from_str(json).unwrap();
        (v.0, take_coercions())
    }

    #[test]
    fn numbers_accept_what_can_be_read_as_one() {
        assert_eq!(read::<u64>("7"), (7, vec![]));
        assert_eq!(read::<u64>("null"), (0, vec![]));
        let (n, notes) = read::<u64>("true");
        assert_eq!(n, 1);
        assert!(notes[0].contains("found the boolean true; read as 1"), "{notes:?}");
        assert_eq!(read::<u64>("\"12\"").0, 12);
        assert_eq!(read::<u64>("3.0"), (3, vec![]));
        assert_eq!(read::<u64>("-4").0, 0);
        assert_eq!(read::<u64>("{\"a\":1}").0, 0);
        assert_eq!(read::<Option<u64>>("null"), (None, vec![]));
    }

    #[test]
    fn strings_and_flags_are_read_as_best_they_can_be() {
        assert_eq!(read::<Option<String>>("\"m\"").0.as_deref(), Some("m"));
        assert_eq!(read::<Option<String>>("5").0.as_deref(), Some("5"));
        assert!(read::<bool>("\"true\"").0);
        assert!(read::<bool>("1").0);
        assert!(!read::<bool>("[1]").0);
        assert_eq!(read::<Vec<String>>("[\"a\",2]").0, vec!["a".to_owned(), "2".to_owned()]);
    }

    #[test]
    fn names_are_prefixed_outermost_last() {
        take_coercions();
        let m = mark();
        let _: Lax<u64> = serde_json::from_str("true").unwrap();
        name_since(m, "assistant_kept");
        name_since(m, "receipt");
        let notes = take_coercions();
        assert!(notes[0].starts_with("`receipt.assistant_kept`: expected"), "{notes:?}");
    }
}
