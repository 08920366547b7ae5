//! `task{description, prompt, tools?}` as the model sees it: the name, the schema, the
//! arguments, the limits, and what a child session knows of its parent ([`Link`]). Running a
//! call is `crate::subagent`'s (docs/subagents.md).

use std::path::{Path, PathBuf};

use codewhale_provider::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Value};

/// The tool's name.
pub const TOOL: &str = "task";

/// How many children run at once in the process unless `[tools] max_subagents` says.
pub const DEFAULT_MAX_SUBAGENTS: u32 = 4;

/// The most of a child's answer the parent reads, in tokens; the rest stays in its journal.
pub const RESULT_TOKENS: u32 = 4_000;

/// What a child is offered unless its call asks for more in `auto-edit` or `full`.
pub const READ_ONLY_TOOLS: [&str; 6] =
    ["read_file", "list_dir", "search", "web_fetch", "recall", "update_plan"];

/// What a child session knows of its parent.
#[derive(Debug, Clone)]
pub struct Link {
    /// The parent's journal: the child's file changes are checkpointed in its store.
    parent_journal: PathBuf,
    /// The tools the child is offered.
    tools: Vec<String>,
}

impl Link {
    pub fn new(parent_journal: PathBuf, tools: Vec<String>) -> Link {
        Link { parent_journal, tools }
    }

    /// The parent's journal file.
    pub fn parent_journal(&self) -> &Path {
        &self.parent_journal
    }

    /// Whether the child is offered tool `name`.
    pub fn offers(&self, name: &str) -> bool {
        name != TOOL && self.tools.iter().any(|t| t == name)
    }
}

/// A `task` call's arguments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub description: String,
    pub prompt: String,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
}

/// The arguments of a `task` call, or what the model reads about them.
pub fn parse(input: &Value) -> Result<Request, String> {
    let request: Request = serde_json::from_value(input.clone()).map_err(|e| {
        format!(
            "task needs {{description, prompt, tools?}}: {e}; send a short description, the \
             prompt the subagent works on, and optionally a list of tool names"
        )
    })?;
    if request.prompt.trim().is_empty() {
        return Err("task needs a prompt: say what the subagent should do and report".to_owned());
    }
    Ok(request)
}

/// The schema the model is offered (terse in a small window, docs/compaction.md).
pub fn spec(compact: bool) -> ToolSpec {
    let spec = ToolSpec {
        name: TOOL.to_owned(),
        description: "Delegate a self-contained piece of work to a subagent. It runs in a fresh \
                      context of its own (it cannot see this conversation), with read-only tools \
                      unless you list more, and returns only its final answer, so reading twenty \
                      files or a long search costs you one short result. Several task calls in \
                      one reply run at once."
            .to_owned(),
        input_schema: json!({"type": "object", "properties": {
            "description": {"type": "string", "description": "A few words naming the work, shown to the user."},
            "prompt": {"type": "string", "description": "Everything the subagent needs to know: the goal, where to look, and what to report back."},
            "tools": {"type": "array", "items": {"type": "string"}, "description": "Names of tools beyond the read-only ones it always has (reading, listing and searching files, fetching pages, recall and the plan); granted only in the auto-edit and full approval modes."}
        }, "required": ["description", "prompt"], "additionalProperties": false}),
    };
    if compact {
        // A small window's prefix is counted to the token (docs/compaction.md, *Small local
        // models*): the same name and arguments, the fewest words.
        ToolSpec {
            name: TOOL.to_owned(),
            description: "Run a subagent on prompt; returns its answer.".to_owned(),
            input_schema: json!({"type": "object", "properties": {
                "description": {"type": "string"},
                "prompt": {"type": "string"},
                "tools": {"type": "array"}
            }, "required": ["description", "prompt"]}),
        }
    } else {
        spec
    }
}
