//! One module per subcommand. Each exposes a `run` returning the process exit code.

pub mod anchor;
pub mod compact;
pub mod context;
pub mod exec;
pub mod interactive;
pub mod journal_check;
pub mod resume;
pub mod sessions;
pub mod survival_check;
