//! [`KindCode`]: an entry's kind as one byte, and what each kind means to the journal (whether it
//! is on the chain, kept parsed, read by the model). Below the entry and its metadata: it knows
//! the payloads and nothing else.

use crate::payload::Payload;

/// An entry's kind as a byte. [`KindCode::Unknown`] covers every kind this version does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumIter, strum::FromRepr)]
#[repr(u8)]
pub(crate) enum KindCode {
    Header = 0,
    User = 1,
    Assistant = 2,
    ToolResult = 3,
    Compaction = 4,
    BranchSummary = 5,
    System = 6,
    Head = 7,
    Unknown = 8,
    Side = 9,
}

impl KindCode {
    pub(crate) fn of(payload: &Payload) -> KindCode {
        match payload {
            Payload::Header(_) => KindCode::Header,
            Payload::User(_) => KindCode::User,
            Payload::Assistant(_) => KindCode::Assistant,
            Payload::ToolResult(_) => KindCode::ToolResult,
            Payload::Compaction(_) => KindCode::Compaction,
            Payload::BranchSummary(_) => KindCode::BranchSummary,
            Payload::System(_) => KindCode::System,
            Payload::Head(_) => KindCode::Head,
            Payload::Side(_) => KindCode::Side,
            Payload::Unknown { .. } => KindCode::Unknown,
        }
    }

    /// The code of a `kind::*` name ([`KindCode::Unknown`] for any other).
    pub(crate) fn of_name(name: &str) -> KindCode {
        <KindCode as strum::IntoEnumIterator>::iter()
            .find(|k| k.name() == name)
            .unwrap_or(KindCode::Unknown)
    }

    /// The `kind::*` name (`unknown` for [`KindCode::Unknown`]).
    pub(crate) fn name(self) -> &'static str {
        use crate::payload::kind;
        match self {
            KindCode::Header => kind::HEADER,
            KindCode::User => kind::USER,
            KindCode::Assistant => kind::ASSISTANT,
            KindCode::ToolResult => kind::TOOL_RESULT,
            KindCode::Compaction => kind::COMPACTION,
            KindCode::BranchSummary => kind::BRANCH_SUMMARY,
            KindCode::System => kind::SYSTEM,
            KindCode::Head => kind::HEAD,
            KindCode::Side => kind::SIDE,
            KindCode::Unknown => "unknown",
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<KindCode> {
        KindCode::from_repr(b)
    }

    /// Entries the model reads (`Payload::is_model_visible`).
    pub(crate) fn is_model_visible(self) -> bool {
        matches!(
            self,
            KindCode::User | KindCode::Assistant | KindCode::ToolResult | KindCode::BranchSummary
        )
    }

    /// Conversation entries (`journal::is_chain`).
    pub(crate) fn is_chain(self) -> bool {
        !matches!(self, KindCode::Compaction | KindCode::Head)
    }

    /// Records kept parsed for as long as the journal is open: few, small, and consulted as a
    /// whole (HEAD replay, the active compaction, the model switches).
    pub(crate) fn is_kept(self) -> bool {
        matches!(
            self,
            KindCode::Header
                | KindCode::Compaction
                | KindCode::BranchSummary
                | KindCode::System
                | KindCode::Head
        )
    }
}
