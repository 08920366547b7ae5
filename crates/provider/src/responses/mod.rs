//! The OpenAI Responses API (`POST {base}/responses`): the only API of OpenAI's codex models,
//! also served by Azure, xAI and OpenRouter (docs/providers.md, *OpenAI Responses*).
//!
//! Stateless: `store: false`, the whole view sent every time (the journal is the truth; no
//! `previous_response_id`). `request` builds the body — `instructions`, `input` items
//! (`message`, `function_call`, `function_call_output`, `reasoning`), function tools;
//! `decode` turns the `response.*` events back into [`crate::StreamEvent`]s.
//!
//! A reasoning item travels through the rest of Codewhale as a thinking block whose signature
//! is the item's JSON, prefixed with [`REASONING_PREFIX`] (its summary text is the thinking),
//! so it is journaled and sent back unchanged while its turn is in the view; the other wires
//! leave such a block out.

pub mod decode;
pub mod request;

/// What a thinking block's signature starts with when it holds a Responses reasoning item.
pub const REASONING_PREFIX: &str = "openai-responses:";

/// Whether a thinking block's `signature` holds a Responses reasoning item.
pub fn is_reasoning_item(signature: &str) -> bool {
    signature.starts_with(REASONING_PREFIX)
}
