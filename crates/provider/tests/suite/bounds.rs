//! Hostile servers (DESIGN §4, *Every network read is bounded*): a body that never ends costs
//! bounded memory and a clear error. Each attack runs in a child process whose peak resident
//! memory is read from the kernel's accounting (`test_support::peak`), never timed.

use codewhale_provider::test_support::{peak, Fault, Flood, MockServer, Reply};
use codewhale_provider::{CancellationToken, Client, ErrorKind, ProviderKind, RetryPolicy};

use super::hello;

const MIB: u64 = 1 << 20;

/// What every flood sends in all: far past each bound, finite so that a client without a bound
/// shows its cost here instead of exhausting the machine.
const FLOOD: u64 = 192 * MIB;

/// Runs `attack` on a fresh mock server inside a runtime of its own.
fn on_server<F: std::future::Future<Output = String>>(
    attack: impl FnOnce(MockServer) -> F,
) -> String {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async move {
        let server = MockServer::start().await.unwrap();
        attack(server).await
    })
}

fn client_of(server: &MockServer, kind: ProviderKind) -> Client {
    Client::new(server.config(kind).with_retry(RetryPolicy::none())).unwrap()
}

async fn failure(server: &MockServer, kind: ProviderKind) -> String {
    let failure = client_of(server, kind)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .expect_err("a flood never makes a reply");
    format!("{:?}: {}", failure.error.kind, failure.error.message)
}

#[test]
fn one_sse_event_whose_data_never_ends_costs_the_event_bound_and_says_so() {
    let measured = peak::measure(
        module_path!(),
        "one_sse_event_whose_data_never_ends_costs_the_event_bound_and_says_so",
        || {
            on_server(|server| async move {
                server.push(Reply::fault(Fault::Flood(Flood::sse_data(FLOOD))));
                failure(&server, ProviderKind::OpenAi).await
            })
        },
    );
    let Some(peak) = measured.unwrap() else { return };
    assert!(peak.said.starts_with(&format!("{:?}", ErrorKind::Protocol)), "{peak:?}");
    assert!(peak.said.contains("passed 32 MiB without ending"), "{peak:?}");
    // The event's data (32 MiB) and what is in flight; the flood is six times that.
    assert!(peak.growth < 80 * MIB, "peak grew by {} MiB: {peak:?}", peak.growth / MIB);
}

#[test]
fn an_endless_error_body_costs_its_bound() {
    let measured = peak::measure(module_path!(), "an_endless_error_body_costs_its_bound", || {
        on_server(|server| async move {
            server.push(Reply::fault(Fault::Flood(Flood::json(500, FLOOD))));
            failure(&server, ProviderKind::Anthropic).await
        })
    });
    let Some(peak) = measured.unwrap() else { return };
    assert!(peak.said.contains("500"), "{peak:?}");
    assert!(peak.growth < 24 * MIB, "peak grew by {} MiB: {peak:?}", peak.growth / MIB);
}

#[test]
fn an_endless_json_success_body_costs_its_bound_and_says_so() {
    let measured = peak::measure(
        module_path!(),
        "an_endless_json_success_body_costs_its_bound_and_says_so",
        || {
            on_server(|server| async move {
                server.push(Reply::fault(Fault::Flood(Flood::json(200, FLOOD))));
                failure(&server, ProviderKind::OpenAi).await
            })
        },
    );
    let Some(peak) = measured.unwrap() else { return };
    assert!(peak.said.contains("a JSON body over 1 MiB"), "{peak:?}");
    assert!(peak.growth < 24 * MIB, "peak grew by {} MiB: {peak:?}", peak.growth / MIB);
}

#[test]
fn endless_probe_answers_and_model_lists_cost_their_bound() {
    let measured = peak::measure(
        module_path!(),
        "endless_probe_answers_and_model_lists_cost_their_bound",
        || {
            on_server(|server| async move {
                for path in ["/api/version", "/props", "/api/v0/models", "/v1/models"] {
                    server.serve_get_flood(path, Flood::json(200, FLOOD));
                }
                let client = client_of(&server, ProviderKind::OpenAi);
                let window = client.probe_window("m").await;
                let models = client.list_models().await;
                format!("window {window:?}, models {models:?}")
            })
        },
    );
    let Some(peak) = measured.unwrap() else { return };
    assert_eq!(peak.said, "window None, models []");
    assert!(peak.growth < 24 * MIB, "peak grew by {} MiB: {peak:?}", peak.growth / MIB);
}
