//! Complete replies: text, usage, thinking signatures, tool calls, on both wires.

use codewhale_provider::test_support::{Reply, ToolCall};
use codewhale_provider::{
    Block, CancellationToken, Message, ProviderKind, Role, StopReason, StreamEvent, Usage,
};
use futures::StreamExt;
use serde_json::json;

use super::{client, hello, server, WIRES};

#[tokio::test]
async fn text_and_usage_arrive_on_both_wires() {
    for kind in WIRES {
        let server = server().await;
        server.push(
            Reply::text("Hello there, how can I help?").with_usage(120, 9).with_cache(100, 0),
        );
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(response.text(), "Hello there, how can I help?", "{kind:?}");
        assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
        assert_eq!(
            response.usage,
            Some(Usage {
                input_tokens: 120,
                output_tokens: 9,
                cache_read_tokens: 100,
                cache_write_tokens: 0
            }),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn events_stream_in_order_and_end_with_stop() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::text("abcdefghijklmnop").with_usage(10, 4));
        let mut stream =
            client(&server, kind).stream(&hello("m"), CancellationToken::new()).await.unwrap();
        let mut text = String::new();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            if let StreamEvent::TextDelta { text: piece } = &event {
                text.push_str(piece);
            }
            events.push(event);
        }
        assert_eq!(text, "abcdefghijklmnop");
        assert!(
            events.iter().filter(|e| matches!(e, StreamEvent::TextDelta { .. })).count() >= 2,
            "{kind:?}: text arrives in pieces"
        );
        assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::EndTurn)));
    }
}

#[tokio::test]
async fn parallel_tool_call_arguments_are_reassembled() {
    for kind in WIRES {
        let server = server().await;
        let args_a = json!({"path": "src/lib.rs", "offset": 10, "limit": 200});
        let args_b = json!({"command": "cargo test -p codewhale-provider -- --nocapture", "timeout_ms": 60000});
        server.push(
            Reply::text("Running both.")
                .then_tool_call("call_a", "read_file", args_a.clone())
                .then_tool_call("call_b", "shell", args_b.clone()),
        );
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        let calls: Vec<_> = response
            .tool_uses()
            .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_a".into(), "read_file".into(), args_a.clone()),
                ("call_b".into(), "shell".into(), args_b.clone())
            ],
            "{kind:?}"
        );
        assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
    }
}

#[tokio::test]
async fn single_byte_chunks_change_nothing() {
    for kind in WIRES {
        let server = server().await;
        server.push(
            Reply::tool_calls(vec![ToolCall::new("c1", "list_dir", json!({"path": "é ✓"}))])
                .with_chunk_size(1),
        );
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(response.tool_uses().next().unwrap().2, &json!({"path": "é ✓"}), "{kind:?}");
    }
}

/// The signature goes out exactly as it came in, byte for byte, on the next request.
#[tokio::test]
async fn thinking_signatures_replay_byte_exact() {
    let signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/+==\u{2028}x";
    let server = server().await;
    server.push(Reply::thinking("Let me think about this.", signature).then_tool_call(
        "toolu_1",
        "read_file",
        json!({"path": "a"}),
    ));
    server.push(Reply::text("Done."));
    let client = client(&server, ProviderKind::Anthropic);
    let mut request = hello("claude-sonnet-4-5");
    let first = client.complete(&request, CancellationToken::new()).await.unwrap();
    assert_eq!(
        first.content[0],
        Block::Thinking {
            thinking: "Let me think about this.".into(),
            signature: Some(signature.into())
        }
    );

    request.messages.push(Message::new(Role::Assistant, first.content.clone()));
    request.messages.push(Message::new(
        Role::User,
        vec![Block::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: "A".into(),
            is_error: false,
        }],
    ));
    client.complete(&request, CancellationToken::new()).await.unwrap();

    let sent = &server.requests()[1];
    let replayed = &sent.body["messages"][1]["content"][0];
    assert_eq!(replayed["type"], "thinking");
    assert_eq!(replayed["signature"].as_str(), Some(signature));
    // And in the raw bytes, not only after a JSON round trip.
    let escaped = serde_json::to_string(signature).unwrap();
    assert!(sent.raw.contains(&escaped));
}

#[tokio::test]
async fn reasoning_content_streams_as_thinking_and_replays_for_deepseek() {
    let server = server().await;
    server.push(Reply::thinking("first I plan", "").then_tool_call(
        "call_1",
        "list_dir",
        json!({"path": "."}),
    ));
    server.push(Reply::text("ok"));
    let mut config = server.config(ProviderKind::OpenAi);
    config.server = Some(codewhale_provider::OpenAiServer::DeepSeek);
    let client = codewhale_provider::Client::new(config).unwrap();
    let mut request = hello("deepseek-reasoner");
    let first = client.complete(&request, CancellationToken::new()).await.unwrap();
    assert_eq!(
        first.content[0],
        Block::Thinking { thinking: "first I plan".into(), signature: None }
    );
    request.messages.push(Message::new(Role::Assistant, first.content));
    request.messages.push(Message::new(
        Role::User,
        vec![Block::ToolResult {
            tool_use_id: "call_1".into(),
            content: "a b".into(),
            is_error: false,
        }],
    ));
    client.complete(&request, CancellationToken::new()).await.unwrap();
    let sent = &server.requests()[1].body;
    assert_eq!(sent["messages"][1]["reasoning_content"], "first I plan");
    assert_eq!(sent["messages"][2]["role"], "tool");
}

#[tokio::test]
async fn keys_and_versions_are_sent_in_headers() {
    let server = server().await;
    server.push(Reply::text("a"));
    server.push(Reply::text("b"));
    client(&server, ProviderKind::OpenAi)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap();
    client(&server, ProviderKind::Anthropic)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap();
    let requests = server.requests();
    let key = codewhale_provider::test_support::TEST_API_KEY;
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {key}").as_str()));
    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].header("x-api-key"), Some(key));
    assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));
}
