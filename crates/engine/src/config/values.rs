//! The kinds of value config keys hold, as types: each has one check and the words its error
//! uses, so a key of a kind is checked the same way wherever it appears (`[compaction]`,
//! `[provider]`, an `[mcp_servers.NAME]` table) and a new key of that kind cannot forget the
//! check.
//!
//! A value is checked where the file is read ([`super::file`]); the error there names the file,
//! the line and the key, and the sentence after it is [`ConfigValue::check`]'s.

use std::time::Duration;

/// A value read from a config file and checked once.
pub(crate) trait ConfigValue: Sized {
    /// What TOML holds for it.
    type Raw;
    /// The value, or why `raw` is not one (the sentence the error ends with).
    fn check(raw: Self::Raw) -> Result<Self, String>;
}

/// A fraction in (0, 1]: of usable input, for the compaction marks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fraction(f64);

impl Fraction {
    pub(crate) fn get(self) -> f64 {
        self.0
    }
}

impl ConfigValue for Fraction {
    type Raw = f64;
    fn check(raw: f64) -> Result<Self, String> {
        if raw > 0.0 && raw <= 1.0 {
            Ok(Fraction(raw))
        } else {
            Err(format!("{raw} is not a fraction in (0, 1]"))
        }
    }
}

/// A positive, finite number of seconds, fractions allowed (`2.5`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Seconds(Duration);

impl Seconds {
    pub(crate) fn get(self) -> Duration {
        self.0
    }
}

impl ConfigValue for Seconds {
    type Raw = f64;
    fn check(raw: f64) -> Result<Self, String> {
        if raw > 0.0 && raw.is_finite() {
            Duration::try_from_secs_f64(raw).map(Seconds).map_err(|_| too_long(raw))
        } else {
            Err("must be a positive number of seconds".into())
        }
    }
}

/// A finite number of seconds where 0 turns the feature off (idle compaction).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SecondsOrOff(Duration);

impl SecondsOrOff {
    pub(crate) fn get(self) -> Duration {
        self.0
    }
}

impl ConfigValue for SecondsOrOff {
    type Raw = f64;
    fn check(raw: f64) -> Result<Self, String> {
        if raw >= 0.0 && raw.is_finite() {
            Duration::try_from_secs_f64(raw).map(SecondsOrOff).map_err(|_| too_long(raw))
        } else {
            Err("must be a number of seconds, 0 to turn idle compaction off".into())
        }
    }
}

/// Why a finite number of seconds is refused: more than a duration holds (about 584 billion
/// years), so a typo's extra digits get a sentence, never a crash.
fn too_long(raw: f64) -> String {
    format!("{raw} seconds is longer than any wait Codewhale can keep; use a smaller number")
}

/// A positive number of milliseconds (the `_ms` spelling of a timeout).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Millis(Duration);

impl Millis {
    pub(crate) fn get(self) -> Duration {
        self.0
    }
}

impl ConfigValue for Millis {
    type Raw = u64;
    fn check(raw: u64) -> Result<Self, String> {
        if raw > 0 {
            Ok(Millis(Duration::from_millis(raw)))
        } else {
            Err("must be a positive number of milliseconds".into())
        }
    }
}

/// A positive number of tokens (a context window, the output reserve).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tokens(u64);

impl Tokens {
    pub(crate) fn get(self) -> u64 {
        self.0
    }
}

impl ConfigValue for Tokens {
    type Raw = u64;
    fn check(raw: u64) -> Result<Self, String> {
        if raw > 0 {
            Ok(Tokens(raw))
        } else {
            Err("must be a positive number of tokens".into())
        }
    }
}

/// The name of an environment variable: letters, digits and `_`, not starting with a digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvName(String);

impl EnvName {
    pub(crate) fn into_inner(self) -> String {
        self.0
    }
}

impl ConfigValue for EnvName {
    type Raw = String;
    fn check(raw: String) -> Result<Self, String> {
        let valid = !raw.is_empty()
            && !raw.starts_with(|c: char| c.is_ascii_digit())
            && raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(EnvName(raw))
        } else {
            Err(format!("{raw:?} is not an environment variable name"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_takes_its_range_and_refuses_the_rest() {
        assert_eq!(Fraction::check(1.0).map(Fraction::get), Ok(1.0));
        assert_eq!(Fraction::check(0.25).map(Fraction::get), Ok(0.25));
        for bad in [0.0, -0.5, 1.01, f64::NAN, f64::INFINITY] {
            let e = Fraction::check(bad).unwrap_err();
            assert!(e.ends_with("is not a fraction in (0, 1]"), "{bad}: {e}");
        }
        assert_eq!(Seconds::check(2.5).map(Seconds::get), Ok(Duration::from_millis(2500)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(Seconds::check(bad), Err("must be a positive number of seconds".into()));
        }
        assert_eq!(SecondsOrOff::check(0.0).map(SecondsOrOff::get), Ok(Duration::ZERO));
        assert!(SecondsOrOff::check(-1.0).is_err() && SecondsOrOff::check(f64::NAN).is_err());
        // More than a duration holds is refused with a sentence, not a panic.
        for check in [|v| Seconds::check(v).map(|_| ()), |v| SecondsOrOff::check(v).map(|_| ())] {
            let e = check(1e30).unwrap_err();
            assert!(e.contains("longer than any wait"), "{e}");
        }
        assert_eq!(Millis::check(1).map(Millis::get), Ok(Duration::from_millis(1)));
        assert!(Millis::check(0).is_err());
        assert_eq!(Tokens::check(8).map(Tokens::get), Ok(8));
        assert_eq!(Tokens::check(0), Err("must be a positive number of tokens".into()));
        assert_eq!(
            EnvName::check("MY_KEY_2".into()).map(EnvName::into_inner),
            Ok("MY_KEY_2".into())
        );
        for bad in ["", "2KEY", "MY-KEY", "A B"] {
            assert!(EnvName::check(bad.into()).is_err(), "{bad:?}");
        }
    }
}
