//! One tool call of a reply, as the turn's steps hand it to each other: the reply reads it off
//! the response ([`super::reply`]), the calls clear, run and journal it ([`super::calls`]), a
//! `task` call becomes a child's turn. It is its own file so that every step names it without
//! naming the others, and the steps import each other only downwards.

use serde_json::Value;

/// One call of a response.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}
