//! Serde plumbing shared by every JSON object of the format.
//!
//! Journal objects must keep the fields they do not know (a newer Codewhale may have added them)
//! and must be fast to parse. `#[serde(flatten)]` does the first but buffers the whole object
//! into an intermediate tree, which is slow for large payloads and breaks `RawValue` (used to
//! keep provider-opaque blocks byte-for-byte). So every object is declared with [`record!`],
//! which generates a direct map visitor: known keys are parsed in place, any other key goes to
//! `extra` and is written back after the known ones.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// A map key that borrows from the input when it can (keys are almost never escaped).
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Declares a JSON object struct with an `extra` map for unknown fields.
///
/// Field modes: `req` must be present; `opt` is an `Option` written only when `Some`; `flag` is
/// a `bool` written only when true; `list` is a `Vec` written only when non-empty; `always`
/// defaults when absent but is always written. `info`, `info_opt` and `info_flag` are
/// `always`, `opt` and `flag` for informational fields: read tolerantly (see
/// [`crate::lenient`]), written exactly.
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty = $key:literal $mode:ident
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            /// Fields this version does not know, kept and written back unchanged.
            pub extra: serde_json::Map<String, serde_json::Value>,
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                $( record!(@ser m, self.$field, $key, $mode); )*
                for (k, v) in &self.extra {
                    if $( k != $key && )* true {
                        m.serialize_entry(k, v)?;
                    }
                }
                m.end()
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $( let mut $field: Option<$ty> = None; )*
                        let mut extra = serde_json::Map::new();
                        while let Some(key) = map.next_key::<$crate::json_object::Key<'de>>()? {
                            match key.0.as_ref() {
                                $( $key => $field = Some(record!(@de map, $ty, $key, $mode)), )*
                                _ => {
                                    let v: serde_json::Value = map.next_value()?;
                                    extra.insert(key.0.into_owned(), v);
                                }
                            }
                        }
                        Ok($name {
                            $( $field: record!(@take $field, $key, $mode), )*
                            extra,
                        })
                    }
                }
                d.deserialize_map(V)
            }
        }
    };

    (@de $map:ident, $ty:ty, $key:literal, info) => { record!(@lax $map, $ty, $key) };
    (@de $map:ident, $ty:ty, $key:literal, info_opt) => { record!(@lax $map, $ty, $key) };
    (@de $map:ident, $ty:ty, $key:literal, info_flag) => { record!(@lax $map, $ty, $key) };
    (@de $map:ident, $ty:ty, $key:literal, $mode:ident) => { $map.next_value::<$ty>()? };
    (@lax $map:ident, $ty:ty, $key:literal) => {{
        let mark = $crate::lenient::mark();
        let v = $map.next_value::<$crate::lenient::Lax<$ty>>()?.0;
        if $crate::lenient::mark() != mark {
            $crate::lenient::name_since(mark, $key);
        }
        v
    }};

    (@ser $m:ident, $v:expr, $key:literal, req) => { $m.serialize_entry($key, &$v)?; };
    (@ser $m:ident, $v:expr, $key:literal, info) => { $m.serialize_entry($key, &$v)?; };
    (@ser $m:ident, $v:expr, $key:literal, info_opt) => {
        if let Some(v) = &$v { $m.serialize_entry($key, v)?; }
    };
    (@ser $m:ident, $v:expr, $key:literal, info_flag) => {
        if $v { $m.serialize_entry($key, &true)?; }
    };
    (@ser $m:ident, $v:expr, $key:literal, always) => { $m.serialize_entry($key, &$v)?; };
    (@ser $m:ident, $v:expr, $key:literal, opt) => {
        if let Some(v) = &$v { $m.serialize_entry($key, v)?; }
    };
    (@ser $m:ident, $v:expr, $key:literal, flag) => {
        if $v { $m.serialize_entry($key, &true)?; }
    };
    (@ser $m:ident, $v:expr, $key:literal, list) => {
        if !$v.is_empty() { $m.serialize_entry($key, &$v)?; }
    };

    (@take $f:ident, $key:literal, req) => {
        match $f {
            Some(v) => v,
            None => return Err(<A::Error as serde::de::Error>::missing_field($key)),
        }
    };
    (@take $f:ident, $key:literal, $other:ident) => { $f.unwrap_or_default() };
}

/// Declares a string enum that keeps values it does not know as `Other(String)`.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $s:literal ),* $(,)? }
        default $default:ident
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value written by a newer version, kept as is.
            Other(String),
        }

        impl $name {
            /// The value as written in the journal.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $s, )*
                    $name::Other(s) => s,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $( $s => $name::$variant, )*
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let k = $crate::json_object::Key::deserialize(d)?;
                Ok($name::from(k.0.as_ref()))
            }
        }

        /// What an absent value reads as.
        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }

        impl $crate::lenient::Lenient for $name {
            fn from_loose(loose: $crate::lenient::Loose<'_>) -> Self {
                $crate::lenient::string_or_default(loose, stringify!($name), |s| $name::from(s))
            }
        }

        impl $crate::lenient::Lenient for Option<$name> {
            fn from_loose(loose: $crate::lenient::Loose<'_>) -> Self {
                match loose {
                    $crate::lenient::Loose::Null => None,
                    other => Some(<$name as $crate::lenient::Lenient>::from_loose(other)),
                }
            }
        }
    };
}

pub(crate) use {record, string_enum};
