//! Recognising "the request is too long for the context window", whoever says it and however.
//!
//! Reactive compaction depends on this, so recognition is deliberately broad: a machine code
//! (`context_length_exceeded`, llama.cpp's `exceed_context_size_error`), or one of the phrasings
//! real servers use (table below, each with the server that says it). Numbers are parsed when
//! the message states them; a recognised overflow without numbers is still an overflow.
//!
//! Invariant: a rate limit is never mistaken for an overflow, except OpenAI's "Request too
//! large ... tokens per min" 429, which no retry can fix and a smaller request can.

/// Phrases that mean "too long for the window", lower-case. Each names who says it.
const PHRASES: &[&str] = &[
    "prompt is too long",   // Anthropic: "prompt is too long: N tokens > M maximum"
    "exceed context limit", // Anthropic: "input length and `max_tokens` exceed context limit: a + b > c"
    "maximum context length", // OpenAI, DeepSeek, vLLM, OpenRouter, Groq, Together
    "context_length_exceeded", // OpenAI code, sometimes only in the message
    "context length exceeded", // generic
    "exceeds the context window", // OpenAI (newer), Azure
    "exceeds the available context size", // llama.cpp server
    "exceed_context_size_error", // llama.cpp server (type)
    "context size has been exceeded", // LM Studio (MLX engine)
    "when context the overflows", // LM Studio (llama.cpp engine), sic
    "mid-generation context overflow", // LM Studio
    "is longer than the maximum model length", // vLLM: "The decoder prompt (length N) is longer than ..."
    "too large for model with", // Mistral: "Prompt contains N tokens ... too large for model with M maximum context length"
    "exceeds the maximum number of tokens allowed", // Gemini OpenAI-compatible endpoint
    "input is too long",        // Bedrock-hosted Anthropic, TGI
    "input validation error: `inputs` tokens + `max_new_tokens`", // Hugging Face TGI
    "prompt too long",          // Ollama runner, generic
    "too many tokens",          // llama-cpp-python, generic
    "requested tokens", // llama-cpp-python: "Requested tokens (N) exceed context window of M"
    "reduce the length of the messages", // OpenAI family, as a fallback when the lead-in changes
    "string_above_max_length", // OpenAI: one message longer than allowed
    "exceeds model context length", // generic
    "context window exceeded", // generic
];

/// Machine-readable codes or types that mean overflow.
const CODES: &[&str] = &[
    "context_length_exceeded",
    "exceed_context_size_error",
    "string_above_max_length",
    "request_too_large",
    "model_context_window_exceeded",
];

/// What an overflow message says about sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OverflowNumbers {
    pub limit: Option<u64>,
    pub requested: Option<u64>,
}

/// Whether an error with this status, message and code/type strings means context overflow;
/// if so, the numbers it states.
pub fn detect(status: Option<u16>, message: &str, codes: &[&str]) -> Option<OverflowNumbers> {
    let lower = message.to_ascii_lowercase();
    if status == Some(429) {
        // "Request too large for gpt-4o in organization ... on tokens per min (TPM): Limit
        // 30000, Requested 45000." can never succeed as is: only a smaller request helps.
        if lower.contains("request too large") && lower.contains("limit") {
            return Some(OverflowNumbers {
                limit: number_after(&lower, "limit"),
                requested: number_after(&lower, "requested"),
            });
        }
        return None;
    }
    let by_code = codes.iter().any(|code| CODES.contains(&code.to_ascii_lowercase().as_str()));
    let by_phrase = PHRASES.iter().any(|phrase| lower.contains(phrase))
        || (lower.contains("context") && (lower.contains("exceed") || lower.contains("overflow")));
    // 413 is a body-size limit: the conversation is too big to send, which compaction fixes.
    if by_code || by_phrase || status == Some(413) {
        Some(numbers(&lower))
    } else {
        None
    }
}

/// Pull limit and requested figures out of a lower-cased overflow message.
pub fn numbers(lower: &str) -> OverflowNumbers {
    // "N tokens > M maximum" (Anthropic) and "a + b > c" (Anthropic with max_tokens).
    if let Some(found) = comparison(lower) {
        return found;
    }
    let limit = first_of(
        lower,
        &[
            "maximum context length is",
            "available context size (",
            "context length of only",
            "maximum model length of",
            "exceeds limit of",
            "context window of",
            "maximum number of tokens allowed",
            "exceed context window of",
            "\"n_ctx\":",
            "n_ctx=",
            "n_ctx:",
        ],
    )
    .or_else(|| number_before(lower, "maximum context length"));
    let requested = first_of(
        lower,
        &[
            "resulted in",
            "request (",
            "you requested about",
            "you requested",
            "your request has",
            "keep the first",
            "prompt contains",
            "input token count",
            "(length",
            "input prompt (",
            "requested tokens (",
            "\"n_prompt_tokens\":",
            "n_prompt_tokens=",
            "prompt is too long:",
        ],
    );
    OverflowNumbers { limit, requested }
}

fn comparison(lower: &str) -> Option<OverflowNumbers> {
    let gt = lower.find(" > ")?;
    let (left, right) = (&lower[..gt], &lower[gt + 3..]);
    let limit = leading_number(right)?;
    // Sum the terms of "a + b" right before the ">" (Anthropic), or take "N tokens".
    let tail = left.rsplit(':').next().unwrap_or(left);
    let mut total = 0u64;
    let mut seen = false;
    for term in tail.split('+') {
        let term = term.trim();
        let term = term.strip_suffix(" tokens").unwrap_or(term);
        // Only bare figures: "(1000 > 4096 - 3500)" in prose is not a comparison of sizes.
        if term.is_empty() || !term.chars().all(|c| c.is_ascii_digit() || c == ',') {
            return None;
        }
        if let Ok(value) = term.replace(',', "").parse::<u64>() {
            total = total.saturating_add(value);
            seen = true;
        }
    }
    seen.then_some(OverflowNumbers { limit: Some(limit), requested: Some(total) })
}

fn first_of(lower: &str, markers: &[&str]) -> Option<u64> {
    markers.iter().find_map(|marker| number_after(lower, marker))
}

/// The first number within a few characters after `marker` ("is 4096", ": 4,096", "(1200000)").
fn number_after(lower: &str, marker: &str) -> Option<u64> {
    let start = lower.find(marker)? + marker.len();
    let rest = &lower[start..];
    let skip = rest.find(|c: char| c.is_ascii_digit())?;
    if skip > 12 {
        return None;
    }
    leading_number(&rest[skip..])
}

/// "with 32768 maximum context length" (Mistral): the number just before `marker`.
fn number_before(lower: &str, marker: &str) -> Option<u64> {
    let end = lower.find(marker)?;
    let head = lower[..end].trim_end();
    let digits: String = head.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: String =
        text.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
    digits.replace(',', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nums(limit: Option<u64>, requested: Option<u64>) -> Option<OverflowNumbers> {
        Some(OverflowNumbers { limit, requested })
    }

    #[test]
    fn real_server_messages_are_recognised_with_their_numbers() {
        type Case<'a> = (&'a str, Option<u16>, &'a str, &'a [&'a str], Option<OverflowNumbers>);
        let cases: &[Case<'_>] = &[
            ("anthropic", Some(400), "prompt is too long: 208310 tokens > 200000 maximum", &["invalid_request_error"], nums(Some(200000), Some(208310))),
            ("anthropic max_tokens", Some(400), "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again", &[], nums(Some(200000), Some(209573))),
            ("openai", Some(400), "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", &["context_length_exceeded"], nums(Some(128000), Some(130512))),
            ("openai newer", Some(400), "Your input exceeds the context window of this model. Please adjust your input and try again.", &["context_length_exceeded"], nums(None, None)),
            ("vllm", Some(400), "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", &["BadRequestError"], nums(Some(4096), Some(5000))),
            ("vllm decoder", Some(400), "The decoder prompt (length 5012) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.", &[], nums(Some(4096), Some(5012))),
            ("llama.cpp", Some(400), "the request exceeds the available context size, try increasing it", &["exceed_context_size_error"], nums(None, None)),
            ("lm studio", Some(400), "Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input", &[], nums(Some(4096), Some(15857))),
            ("openrouter", Some(400), "This endpoint's maximum context length is 200000 tokens. However, you requested about 250123 tokens (240000 of text input, 10123 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.", &[], nums(Some(200000), Some(250123))),
            ("deepseek", Some(400), "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (62000 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.", &["invalid_request_error"], nums(Some(65536), Some(70000))),
            ("mistral", Some(400), "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length", &[], nums(Some(32768), Some(40000))),
            ("gemini", Some(400), "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", &[], nums(Some(1048576), Some(1200000))),
            ("anthropic 413", Some(413), "Request exceeds the maximum allowed number of bytes.", &["request_too_large"], nums(None, None)),
            ("tpm 429", Some(429), "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000. The input or output tokens must be reduced in order to run successfully.", &["rate_limit_exceeded"], nums(Some(30000), Some(45000))),
        ];
        for (name, status, message, codes, expected) in cases {
            assert_eq!(detect(*status, message, codes), *expected, "{name}");
        }
    }

    #[test]
    fn llama_cpp_numbers_come_from_the_json_fields() {
        let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#;
        assert_eq!(
            numbers(&body.to_ascii_lowercase()),
            OverflowNumbers { limit: Some(8192), requested: Some(14429) }
        );
    }

    /// Pieces of the overflow messages providers send, to be put together at random.
    const ATOMS: &[&str] = &[
        "prompt is too long: ",
        " > ",
        " + ",
        "maximum context length is ",
        "é",
        "✓",
        "1",
        "23",
        ",",
        " tokens",
        "(length ",
        "\"n_ctx\":",
        "context",
        "exceed",
        ":",
        " ",
    ];

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(
            pieces in proptest::collection::vec(proptest::sample::select(ATOMS), 0..12),
        ) {
            let text = pieces.concat();
            let _ = detect(Some(400), &text, &[]);
            let _ = numbers(&text);
        }
    }

    #[test]
    fn ordinary_errors_are_not_overflows() {
        assert_eq!(
            detect(
                Some(400),
                "messages.1.content: Input should be a valid list",
                &["invalid_request_error"]
            ),
            None
        );
        assert_eq!(
            detect(
                Some(429),
                "Rate limit reached for gpt-4o on requests per min (RPM): Limit 500",
                &["rate_limit_exceeded"]
            ),
            None
        );
        assert_eq!(detect(Some(500), "Internal server error", &["api_error"]), None);
        assert_eq!(detect(Some(401), "invalid x-api-key", &["authentication_error"]), None);
    }
}
