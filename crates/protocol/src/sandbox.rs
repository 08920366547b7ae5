//! How much the commands the model runs may change: the mode a session reports and a front end
//! shows. How a mode is enforced (Landlock) is the engine's.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much the commands the model runs may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Unconfined: commands can do anything the user can.
    Off,
    /// Writes only under the workspace, the system temp dir and `writable`.
    WorkspaceWrite,
    /// No writes at all (bar `/dev/null` and its kind).
    ReadOnly,
}

impl SandboxMode {
    /// The spelling used in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }

    /// Whether this mode confines at least as much as `other` (off < workspace-write <
    /// read-only): a workspace that is not trusted may only choose such a mode.
    pub fn at_least_as_strict_as(self, other: SandboxMode) -> bool {
        let rank = |m: SandboxMode| match m {
            SandboxMode::Off => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
        };
        rank(self) >= rank(other)
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(SandboxMode::Off),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "read-only" => Ok(SandboxMode::ReadOnly),
            other => Err(format!(
                "unknown sandbox mode {other:?}; use one of: off, workspace-write, read-only"
            )),
        }
    }
}
