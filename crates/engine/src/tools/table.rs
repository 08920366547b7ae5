//! The six workspace tools in one table: name, what the model is told, and the argument struct
//! whose fields, doc comments and bounds make the JSON schema sent with every request (through
//! `schemars`), and whose `Deserialize` reads a call. A tool is added here or nowhere.
//!
//! Invariant: the schema is derived from the same struct that parses the call, so the two can
//! never disagree. Unknown argument fields are tolerated when parsing (some models add extra
//! keys) while the schema says `additionalProperties: false`, asking the model not to.

use codewhale_provider::ToolSpec;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `read_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct ReadArgs {
    /// Path relative to the workspace (absolute paths inside it are accepted).
    pub path: String,
    /// First line to read, 1-based.
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// How many lines to read (default 2000).
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// `list_dir`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct PathArgs {
    /// Directory relative to the workspace; '.' is the workspace itself.
    pub path: String,
}

/// `search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct SearchArgs {
    /// The regular expression.
    pub pattern: String,
    /// Directory or file to search (default: the whole workspace).
    pub path: Option<String>,
    /// Only files matching this glob, e.g. '*.rs' or 'src/**/*.ts'.
    pub glob: Option<String>,
}

/// `write_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct WriteArgs {
    /// Path relative to the workspace.
    pub path: String,
    /// The complete new content.
    pub content: String,
}

/// `edit_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct EditArgs {
    /// Path relative to the workspace.
    pub path: String,
    /// The exact text to replace, including whitespace.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace every occurrence (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// `shell`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct ShellArgs {
    /// The command line, run with bash -c.
    pub command: String,
    /// Kill the command after this many milliseconds (default 120000, at most 600000).
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Start it in the background and return at once (default false).
    #[serde(default)]
    pub background: bool,
}

/// A parsed call of a workspace tool.
#[derive(Debug)]
pub(super) enum Call {
    Read(ReadArgs),
    List(PathArgs),
    Search(SearchArgs),
    Write(WriteArgs),
    Edit(EditArgs),
    Shell(ShellArgs),
}

/// One row of the table.
struct Tool {
    name: &'static str,
    description: &'static str,
    schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    parse: fn(&str, &Value) -> Result<Call, String>,
}

/// The table, in the order the tools are offered.
const TOOLS: [Tool; 6] = [
    Tool {
        name: "read_file",
        description: "Read a text file of the workspace. Lines are numbered. Use offset (1-based \
                      first line) and limit (number of lines) to page through long files; a line \
                      longer than 2000 characters comes in pieces, one row each, and offset and \
                      limit then count rows.",
        schema: |g| g.root_schema_for::<ReadArgs>(),
        parse: |name, input| args(name, input).map(Call::Read),
    },
    Tool {
        name: "list_dir",
        description: "List the entries of a directory; directories end with '/'.",
        schema: |g| g.root_schema_for::<PathArgs>(),
        parse: |name, input| args(name, input).map(Call::List),
    },
    Tool {
        name: "search",
        description: "Search file contents with a regular expression (Rust regex syntax), \
                      honouring .gitignore. Returns path:line:text lines.",
        schema: |g| g.root_schema_for::<SearchArgs>(),
        parse: |name, input| args(name, input).map(Call::Search),
    },
    Tool {
        name: "write_file",
        description: "Create a file or replace its whole content. Parent directories are created.",
        schema: |g| g.root_schema_for::<WriteArgs>(),
        parse: |name, input| args(name, input).map(Call::Write),
    },
    Tool {
        name: "edit_file",
        description: "Replace an exact piece of text in a file. old_string must match exactly \
                      once (copy it from read_file output without the line numbers), unless \
                      replace_all is true.",
        schema: |g| g.root_schema_for::<EditArgs>(),
        parse: |name, input| args(name, input).map(Call::Edit),
    },
    Tool {
        name: "shell",
        description: "Run a bash command in the workspace. Returns combined stdout and stderr \
                      (long output is shortened in the middle) and the exit code. Use \
                      background: true for servers and watchers; they keep running and are \
                      listed later.",
        schema: |g| g.root_schema_for::<ShellArgs>(),
        parse: |name, input| args(name, input).map(Call::Shell),
    },
];

/// Reads a call of the workspace tool `name`.
pub(super) fn parse(name: &str, input: &Value) -> Result<Call, String> {
    match TOOLS.iter().find(|t| t.name == name) {
        Some(tool) => (tool.parse)(name, input),
        None => {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            let (last, rest) = names.split_last().unwrap_or((&"", &[]));
            Err(format!(
                "there is no tool named {name:?}; the tools are {} and {last}",
                rest.join(", ")
            ))
        }
    }
}

/// The schemas of the workspace tools, in table order.
pub(super) fn specs() -> impl Iterator<Item = ToolSpec> {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    TOOLS.iter().map(move |tool| ToolSpec {
        name: tool.name.to_owned(),
        description: tool.description.to_owned(),
        input_schema: plain((tool.schema)(&mut generator).to_value()),
    })
}

fn args<T: for<'de> Deserialize<'de>>(name: &str, input: &Value) -> Result<T, String> {
    // Some servers send the arguments as a JSON string instead of an object.
    let value = match input {
        Value::String(s) => serde_json::from_str(s).map_err(|e| {
            format!("the arguments of {name} are not a JSON object: {e}; send an object")
        })?,
        other => other.clone(),
    };
    serde_json::from_value(value)
        .map_err(|e| format!("invalid arguments for {name}: {e}; see the tool's schema"))
}

/// The schema as models read it best: no title or struct doc (the table's description says what
/// the tool does), no Rust integer formats, and an optional field typed as what it holds
/// (leaving it out is how it is omitted, not `null`).
fn plain(mut schema: Value) -> Value {
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("description");
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for property in properties.values_mut() {
                let Some(p) = property.as_object_mut() else { continue };
                p.remove("format");
                p.remove("default");
                if let Some(Value::Array(types)) = p.get("type") {
                    let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if let [only] = types.as_slice() {
                        let only = (*only).clone();
                        p.insert("type".to_owned(), only);
                    }
                }
            }
        }
    }
    schema
}
