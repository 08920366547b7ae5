//! A token figure and where it came from: every number shown to the user says whether the
//! provider reported it or Codewhale estimated it.

use serde::{Deserialize, Serialize};

/// Where a number came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Reported by the provider for a real request.
    Reported,
    /// Counted or estimated by Codewhale.
    #[default]
    Estimated,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Reported => "reported",
            Source::Estimated => "estimated",
        }
    }
}

/// A token figure with its provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figure {
    pub tokens: u64,
    pub source: Source,
}

impl Figure {
    /// An estimated figure.
    pub fn estimated(tokens: u64) -> Figure {
        Figure { tokens, source: Source::Estimated }
    }

    /// A figure the provider reported.
    pub fn reported(tokens: u64) -> Figure {
        Figure { tokens, source: Source::Reported }
    }

    /// The figure as a whole percentage of `usable_input`, rounded to nearest: the one
    /// rounding the status line and `/context` both show.
    pub fn percent_of(&self, usable_input: u64) -> u64 {
        let usable = usable_input.max(1);
        (self.tokens.saturating_mul(100) + usable / 2) / usable
    }
}
