//! Golden request bodies: exactly what goes over the wire for one representative request.

use codewhale_provider::test_support::Reply;
use codewhale_provider::{
    Block, CancellationToken, Client, Message, OpenAiServer, ProviderKind, Request, Role,
    SystemBlock, ToolSpec,
};
use serde_json::json;

use super::server;

fn representative() -> Request {
    let mut request = Request::new("model-x", 8192);
    request.system = vec![
        SystemBlock::cached("You are Codewhale, a coding assistant."),
        SystemBlock::text("Project rules: run tests."),
    ];
    request.temperature = Some(0.3);
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file in the workspace.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }];
    let mut checkpoint = Message::new(
        Role::User,
        vec![
            Block::text("Codewhale handoff note.\nSummary here."),
            Block::text("<!-- codewhale.compaction-checkpoint.v1 -->"),
        ],
    );
    checkpoint.cache_breakpoint = true;
    request.messages = vec![
        checkpoint,
        Message::new(
            Role::Assistant,
            vec![
                Block::Thinking {
                    thinking: "Need the file.".into(),
                    signature: Some("c2lnbmF0dXJl+/==".into()),
                },
                Block::text("Reading it."),
                Block::ToolUse {
                    id: "toolu_01".into(),
                    name: "read_file".into(),
                    input: json!({"path": "src/main.rs"}),
                },
            ],
        ),
        Message::new(
            Role::User,
            vec![
                Block::ToolResult {
                    tool_use_id: "toolu_01".into(),
                    content: "fn main() {}".into(),
                    is_error: false,
                },
                Block::text("Now fix it."),
            ],
        ),
    ];
    request
}

async fn sent_body(kind: ProviderKind, server_kind: Option<OpenAiServer>) -> serde_json::Value {
    let server = server().await;
    server.push(Reply::text("ok"));
    let mut config = server.config(kind);
    config.server = server_kind;
    Client::new(config)
        .unwrap()
        .complete(&representative(), CancellationToken::new())
        .await
        .unwrap();
    server.requests().remove(0).body
}

#[tokio::test]
async fn anthropic_request_body() {
    insta::assert_json_snapshot!(
        "anthropic_request",
        sent_body(ProviderKind::Anthropic, None).await
    );
}

#[tokio::test]
async fn openai_request_body() {
    insta::assert_json_snapshot!(
        "openai_request",
        sent_body(ProviderKind::OpenAi, Some(OpenAiServer::OpenAi)).await
    );
}

#[tokio::test]
async fn deepseek_request_body() {
    insta::assert_json_snapshot!(
        "deepseek_request",
        sent_body(ProviderKind::OpenAi, Some(OpenAiServer::DeepSeek)).await
    );
}
