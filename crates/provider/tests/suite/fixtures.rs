//! Recorded streams from `fixtures/sse/`, through the real client.

use codewhale_provider::test_support::Reply;
use codewhale_provider::{
    Block, CancellationToken, Client, ErrorKind, OpenAiServer, ProviderKind, StopReason, Usage,
};
use serde_json::json;

use super::{client, hello, server};

async fn play(
    kind: ProviderKind,
    file: &str,
) -> Result<codewhale_provider::Response, codewhale_provider::ProviderFailure> {
    let server = server().await;
    server.push(Reply::sse_file(file));
    client(&server, kind).complete(&hello("m"), CancellationToken::new()).await
}

#[tokio::test]
async fn anthropic_thinking_and_tool_use() {
    let response = play(ProviderKind::Anthropic, "anthropic_thinking_tool_use.sse").await.unwrap();
    assert_eq!(response.content.len(), 3);
    let Block::Thinking { thinking, signature } = &response.content[0] else {
        panic!("{:?}", response.content)
    };
    assert_eq!(thinking, "The user wants the failing test. I should read the test file first.");
    assert!(signature.as_deref().unwrap().ends_with("eDAA=="));
    assert_eq!(response.content[1], Block::text("Let me look at the test."));
    assert_eq!(
        response.content[2],
        Block::ToolUse {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "read_file".into(),
            input: json!({"path": "tests/parse.rs", "limit": 200})
        }
    );
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 12452,
            output_tokens: 89,
            cache_read_tokens: 11980,
            cache_write_tokens: 0
        })
    );
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn anthropic_overloaded_mid_stream_keeps_the_text() {
    let failure =
        play(ProviderKind::Anthropic, "anthropic_overloaded_midstream.sse").await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Overloaded);
    assert_eq!(failure.partial.unwrap().text(), "Here is the plan:");
}

#[tokio::test]
async fn openai_parallel_tool_calls() {
    let response = play(ProviderKind::OpenAi, "openai_parallel_tool_calls.sse").await.unwrap();
    let calls: Vec<_> = response
        .tool_uses()
        .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "call_Ua1bKjHTsT3UqVYxA3f8jZ2R".into(),
                "read_file".into(),
                json!({"path": "Cargo.toml"})
            ),
            (
                "call_9dQe2mXkWb7LpR4sV1cN0yTh".into(),
                "search".into(),
                json!({"pattern": "fn main", "glob": "*.rs"})
            ),
        ]
    );
    assert_eq!(response.usage.unwrap().cache_read_tokens, 2816);
}

#[tokio::test]
async fn deepseek_reasoning_then_tool_call() {
    let response = play(ProviderKind::OpenAi, "deepseek_reasoner_tool_call.sse").await.unwrap();
    assert_eq!(
        response.content[0],
        Block::Thinking {
            thinking: "The user asks what is in the directory. I will list it.".into(),
            signature: None
        }
    );
    assert_eq!(response.tool_uses().next().unwrap().2, &json!({"path": "."}));
    assert_eq!(response.usage.unwrap().cache_read_tokens, 1792);
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn ollama_whole_tool_call_with_stop() {
    let response = play(ProviderKind::OpenAi, "ollama_tool_call.sse").await.unwrap();
    assert_eq!(response.tool_uses().next().unwrap().2, &json!({"command": "cargo test"}));
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn openrouter_comments_crlf_and_reasoning() {
    let response = play(ProviderKind::OpenAi, "openrouter_reasoning_crlf.sse").await.unwrap();
    assert_eq!(
        response.content[0],
        Block::Thinking { thinking: "Short check first.".into(), signature: None }
    );
    assert_eq!(response.text(), "Done: all 12 tests pass.");
    assert_eq!(response.usage.unwrap().input_tokens, 5120);
    assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
}

#[tokio::test]
async fn openrouter_error_chunk_mid_stream() {
    let failure = play(ProviderKind::OpenAi, "openrouter_midstream_error.sse").await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Overloaded, "{}", failure.error);
    assert_eq!(failure.error.status, Some(502));
    assert_eq!(failure.partial.unwrap().text(), "Starting the refactor");
}

#[tokio::test]
async fn llama_cpp_usage_in_the_finish_chunk_and_no_trailing_blank_line() {
    let response = play(ProviderKind::OpenAi, "llamacpp_usage_timings.sse").await.unwrap();
    assert_eq!(response.text(), "fn main() {}");
    assert_eq!(response.usage.unwrap().input_tokens, 311);
}

#[tokio::test]
async fn inline_think_tags_become_a_thinking_block() {
    let response = play(ProviderKind::OpenAi, "vllm_inline_think.sse").await.unwrap();
    assert_eq!(
        response.content[0],
        Block::Thinking {
            thinking: "\nThe test expects 4, the code returns 5.\n".into(),
            signature: None
        }
    );
    assert_eq!(response.text(), "The function has an off-by-one error.");
}

#[tokio::test]
async fn every_fixture_survives_single_byte_delivery() {
    let files = [
        ("anthropic_thinking_tool_use.sse", ProviderKind::Anthropic),
        ("openai_parallel_tool_calls.sse", ProviderKind::OpenAi),
        ("deepseek_reasoner_tool_call.sse", ProviderKind::OpenAi),
        ("ollama_tool_call.sse", ProviderKind::OpenAi),
        ("openrouter_reasoning_crlf.sse", ProviderKind::OpenAi),
        ("llamacpp_usage_timings.sse", ProviderKind::OpenAi),
        ("vllm_inline_think.sse", ProviderKind::OpenAi),
    ];
    for (file, kind) in files {
        let server = server().await;
        server.push(Reply::sse_file(file));
        server.push(Reply::sse_file(file).with_chunk_size(1));
        let mut config = server.config(kind);
        config.server = Some(OpenAiServer::Generic);
        let client = Client::new(config).unwrap();
        let whole = client.complete(&hello("m"), CancellationToken::new()).await.unwrap();
        let bytewise = client.complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(whole, bytewise, "{file}");
    }
}

#[tokio::test]
async fn responses_reasoning_and_a_function_call() {
    let file = "responses_reasoning_tool_call.sse";
    let response = play(ProviderKind::OpenAiResponses, file).await.unwrap();
    assert_eq!(response.content.len(), 3, "{:?}", response.content);
    let Block::Thinking { thinking, signature } = &response.content[0] else {
        panic!("{:?}", response.content)
    };
    assert_eq!(thinking, "**Finding the failing test**\n\nRead the test file first.");
    let item = signature.as_deref().unwrap();
    assert!(codewhale_provider::responses::is_reasoning_item(item));
    assert!(item.contains("\"encrypted_content\":\"gAAAAABoofDD"), "{item}");
    assert_eq!(response.content[1], Block::text("Let me look at the test."));
    assert_eq!(
        response.content[2],
        Block::ToolUse {
            id: "call_Zq1kF4yB2hT7".into(),
            name: "read_file".into(),
            input: json!({"path": "tests/parse.rs", "limit": 200})
        }
    );
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 12452,
            output_tokens: 89,
            cache_read_tokens: 11904,
            cache_write_tokens: 0
        })
    );
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn responses_failed_is_an_overflow_and_incomplete_keeps_its_text() {
    let failure =
        play(ProviderKind::OpenAiResponses, "responses_failed_overflow.sse").await.unwrap_err();
    assert!(failure.error.is_context_overflow(), "{}", failure.error);
    let cut = play(ProviderKind::OpenAiResponses, "responses_incomplete.sse").await.unwrap();
    assert_eq!(cut.text(), "The first half of a long");
    assert_eq!(cut.stop_reason, Some(StopReason::MaxTokens));
}
