//! Shared helpers and the test modules.

mod bounds;
mod cancel;
mod faults;
mod fixtures;
mod golden;
mod streaming;

use codewhale_provider::test_support::MockServer;
use codewhale_provider::{Client, Message, ProviderKind, Request};

/// Every wire format, each test run against all of them.
pub const WIRES: [ProviderKind; 3] =
    [ProviderKind::OpenAi, ProviderKind::Anthropic, ProviderKind::OpenAiResponses];

pub async fn server() -> MockServer {
    MockServer::start().await.expect("mock server starts")
}

pub fn client(server: &MockServer, kind: ProviderKind) -> Client {
    Client::new(server.config(kind)).expect("client builds")
}

pub fn hello(model: &str) -> Request {
    let mut request = Request::new(model, 1024);
    request.messages.push(Message::user_text("hello"));
    request
}
