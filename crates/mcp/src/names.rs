//! The names and schemas the model sees for MCP tools.
//!
//! A tool is offered as `mcp__<server>__<tool>`. Both providers accept only `[A-Za-z0-9_-]` and
//! at most 64 characters in a tool name, so other characters become `_`, and a name that is
//! too long (or that would collide with another after that) is cut and ends in a short hash of
//! the real server and tool names. Invariants: the mapping is a pure function of the list, so
//! the same tools get the same names in every request (prompt caches stay warm); two different
//! tools never share a name; a name never exceeds [`MAX_NAME`].

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// The longest tool name every provider accepts.
pub const MAX_NAME: usize = 64;
/// What every MCP tool name starts with.
pub const PREFIX: &str = codewhale_journal::MCP_TOOL_PREFIX;

/// The names for `tools` (server, tool) in the same order.
pub fn qualify(tools: &[(&str, &str)]) -> Vec<String> {
    let plain: Vec<String> =
        tools.iter().map(|(s, t)| format!("{PREFIX}{}__{}", clean(s), clean(t))).collect();
    let mut seen = BTreeSet::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut duplicated = BTreeSet::new();
    for name in &plain {
        if !seen.insert(name.clone()) {
            duplicated.insert(name.clone());
        }
    }
    tools
        .iter()
        .zip(plain)
        .map(|((server, tool), name)| {
            let name = if name.len() > MAX_NAME || duplicated.contains(&name) {
                hashed(&name, server, tool)
            } else {
                name
            };
            // A hashed name equal to another tool's plain name is practically impossible; if it
            // happens, lengthen the hash input until it is unique.
            let mut unique = name.clone();
            let mut salt = 0u32;
            while taken.contains(&unique) {
                salt += 1;
                unique = hashed(&name, server, &format!("{tool}\u{0}{salt}"));
            }
            taken.insert(unique.clone());
            unique
        })
        .collect()
}

fn clean(part: &str) -> String {
    part.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

fn hashed(name: &str, server: &str, tool: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{server}\u{0}{tool}").as_bytes());
    let suffix: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME - suffix.len() - 1;
    let head: String = name.chars().take(keep).collect();
    format!("{head}_{suffix}")
}

/// A server's input schema made acceptable to both providers: an object schema at the top
/// (Anthropic requires `type: object`; OpenAI rejects top-level `oneOf`/`anyOf`/`allOf`/`not`/
/// `enum`), without the `$schema`/`$id` keys some validators trip on, with `properties`
/// present. Nested parts are passed on as the server wrote them.
pub fn sanitize_schema(schema: &Map<String, Value>) -> Value {
    let mut out = schema.clone();
    for key in ["$schema", "$id", "oneOf", "anyOf", "allOf", "not", "enum", "const"] {
        out.remove(key);
    }
    out.insert("type".into(), Value::String("object".into()));
    if !out.get("properties").is_some_and(Value::is_object) {
        out.insert("properties".into(), Value::Object(Map::new()));
    }
    if out.get("required").is_some_and(|r| !r.is_array()) {
        out.remove("required");
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_prefixed_cleaned_and_stable() {
        let names = qualify(&[("everything", "get-sum"), ("my server", "do.it")]);
        assert_eq!(names, ["mcp__everything__get-sum", "mcp__my_server__do_it"]);
        assert_eq!(qualify(&[("everything", "get-sum")])[0], names[0]);
    }

    #[test]
    fn long_and_colliding_names_are_cut_with_a_hash_and_stay_distinct() {
        let long = "t".repeat(100);
        let tools = [("s", long.as_str()), ("a.b", "x"), ("a_b", "x"), ("a", "b__x")];
        let names = qualify(&tools);
        assert!(names.iter().all(|n| n.len() <= MAX_NAME && n.starts_with(PREFIX)), "{names:?}");
        let unique: BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_ne!(names[1], "mcp__a_b__x", "both colliding tools are renamed");
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')));
    }

    #[test]
    fn schemas_become_plain_object_schemas() {
        let schema = json!({"$schema": "http://json-schema.org/draft-07/schema#", "anyOf": [{}],
            "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        let out = sanitize_schema(schema.as_object().unwrap());
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
        );
        let empty = sanitize_schema(&Map::new());
        assert_eq!(empty, json!({"type": "object", "properties": {}}));
    }
}
