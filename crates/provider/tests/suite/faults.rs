//! Every injected fault, on both wires, through the real client.

use std::time::Duration;

use codewhale_provider::test_support::{Fault, OverflowShape, Reply, FAULT_TEXT, TEST_API_KEY};
use codewhale_provider::{CancellationToken, Client, ErrorKind, ProviderKind, RetryPolicy};

use super::{client, hello, server, WIRES};

#[tokio::test]
async fn overflow_in_each_wire_shape_is_recognised_with_numbers() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::fault(Fault::overflow(200_000, 215_000)));
        let failure = client(&server, kind)
            .complete(&hello("m"), CancellationToken::new())
            .await
            .unwrap_err();
        // The Responses API states no numbers ("Your input exceeds the context window of this
        // model."); the engine then compacts below its own figure.
        let stated = kind != codewhale_provider::ProviderKind::OpenAiResponses;
        let (limit, requested) = if stated { (Some(200_000), Some(215_000)) } else { (None, None) };
        assert_eq!(
            failure.error.kind,
            ErrorKind::ContextOverflow { limit, requested },
            "{kind:?}: {}",
            failure.error
        );
        assert_eq!(failure.error.status, Some(400));
        assert!(failure.partial.is_none());
        assert_eq!(server.requests().len(), 1, "{kind:?}: overflow is never retried");
    }
}

#[tokio::test]
async fn overflow_in_other_servers_shapes_is_recognised() {
    let shapes = [
        OverflowShape::LlamaCpp,
        OverflowShape::Vllm,
        OverflowShape::LmStudio,
        OverflowShape::Ollama,
        OverflowShape::OpenRouter,
        OverflowShape::DeepSeek,
    ];
    for shape in shapes {
        let server = server().await;
        server.push(Reply::fault(Fault::overflow_as(shape, 8192, 9100)));
        let failure = client(&server, ProviderKind::OpenAi)
            .complete(&hello("m"), CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(
            failure.error.kind,
            ErrorKind::ContextOverflow { limit: Some(8192), requested: Some(9100) },
            "{shape:?}: {}",
            failure.error
        );
    }
}

#[tokio::test]
async fn rate_limits_are_retried_honouring_retry_after() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::fault(Fault::RateLimited { retry_after_secs: Some(0) }));
        server.push(Reply::fault(Fault::RateLimited { retry_after_secs: None }));
        server.push(Reply::text("finally"));
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(response.text(), "finally");
        assert_eq!(server.requests().len(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn a_retry_after_beyond_the_policy_is_returned_not_waited_for() {
    let server = server().await;
    server.push(Reply::fault(Fault::RateLimited { retry_after_secs: Some(3600) }));
    let failure = client(&server, ProviderKind::Anthropic)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        failure.error.kind,
        ErrorKind::RateLimited { retry_after: Some(Duration::from_secs(3600)) }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_are_bounded() {
    for kind in WIRES {
        let server = server().await;
        server.push_all((0..6).map(|_| Reply::fault(Fault::ServerError(500))));
        let failure = client(&server, kind)
            .complete(&hello("m"), CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(failure.error.kind, ErrorKind::Overloaded);
        assert_eq!(failure.error.status, Some(500));
        assert_eq!(server.requests().len(), 4, "{kind:?}: one try and three retries");
    }
}

#[tokio::test]
async fn overloaded_and_server_errors_recover() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::fault(Fault::Overloaded));
        server.push(Reply::fault(Fault::ServerError(502)));
        server.push(Reply::text("ok"));
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(response.text(), "ok");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn auth_failures_are_not_retried_and_never_show_the_key() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::fault(Fault::Unauthorized));
        server.push(Reply::text("must not be reached"));
        let failure = client(&server, kind)
            .complete(&hello("m"), CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(failure.error.kind, ErrorKind::Auth);
        assert_eq!(server.requests().len(), 1, "{kind:?}");
        assert!(!failure.error.message.contains(TEST_API_KEY), "{}", failure.error.message);
        assert!(failure.error.message.contains("[REDACTED]"), "{}", failure.error.message);
    }
}

#[tokio::test]
async fn bad_requests_are_not_retried() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::fault(Fault::Status { status: 400, body: r#"{"error":{"message":"messages: roles must alternate","type":"invalid_request_error"}}"#.into() }));
        let failure = client(&server, kind)
            .complete(&hello("m"), CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(failure.error.kind, ErrorKind::BadRequest);
        assert!(failure.error.message.contains("roles must alternate"));
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_server_rejecting_stream_options_is_asked_again_without_them() {
    let server = server().await;
    server.push(Reply::fault(Fault::Status {
        status: 400,
        body: r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#
            .into(),
    }));
    server.push(Reply::text("fine"));
    let response = client(&server, ProviderKind::OpenAi)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.text(), "fine");
    let requests = server.requests();
    assert!(requests[0].body.get("stream_options").is_some());
    assert!(requests[1].body.get("stream_options").is_none());
}

#[tokio::test]
async fn rejected_parameters_are_dropped_and_the_request_resent() {
    let server = server().await;
    server.push(Reply::fault(Fault::Status {
        status: 400,
        body: r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#.into(),
    }));
    server.push(Reply::fault(Fault::Status {
        status: 422,
        body: r#"{"detail":[{"type":"extra_forbidden","loc":["body","temperature"],"msg":"Extra inputs are not permitted"}]}"#.into(),
    }));
    server.push(Reply::text("accepted"));
    let mut request = hello("m");
    request.temperature = Some(0.2);
    let response = client(&server, ProviderKind::OpenAi)
        .complete(&request, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.text(), "accepted");
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[0]["max_tokens"], 1024);
    assert_eq!(bodies[1]["max_completion_tokens"], 1024);
    assert_eq!(bodies[1]["temperature"], 0.2);
    assert!(bodies[2].get("temperature").is_none());
}

/// The three ways a stream can break after it started: each keeps the text so far.
#[tokio::test]
async fn mid_stream_failures_hand_back_the_partial_reply() {
    let cases = [
        (Fault::MalformedSse, ErrorKind::Protocol),
        (Fault::DropMidStream, ErrorKind::Network),
        (Fault::EndEarly, ErrorKind::Protocol),
    ];
    for kind in WIRES {
        for (fault, expected) in cases.clone() {
            let server = server().await;
            server.push(Reply::fault(fault.clone()));
            server.push(Reply::text("a retry must not happen"));
            let failure = client(&server, kind)
                .complete(&hello("m"), CancellationToken::new())
                .await
                .unwrap_err();
            assert_eq!(failure.error.kind, expected, "{kind:?} {fault:?}: {}", failure.error);
            let partial =
                failure.partial.unwrap_or_else(|| panic!("{kind:?} {fault:?}: no partial"));
            let text = partial.text();
            assert!(
                !text.is_empty() && FAULT_TEXT.starts_with(&text) && text != FAULT_TEXT,
                "{kind:?} {fault:?}: {text:?}"
            );
            assert_eq!(partial.stop_reason, None);
            assert_eq!(
                server.requests().len(),
                1,
                "{kind:?} {fault:?}: started replies are not retried"
            );
        }
    }
}

#[tokio::test]
async fn a_partial_tool_call_is_not_handed_back_as_runnable() {
    let server = server().await;
    let reply = Reply::text("Reading.").then_tool_call(
        "c1",
        "read_file",
        serde_json::json!({"path": "some/long/path/to/a/file.rs"}),
    );
    // Cut inside the argument fragments of the call.
    server.push(reply.drop_after(6));
    let failure = client(&server, ProviderKind::OpenAi)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap_err();
    let partial = failure.partial.unwrap();
    assert_eq!(partial.text(), "Reading.");
    assert_eq!(partial.tool_uses().count(), 0);
}

#[tokio::test]
async fn a_hangup_before_the_reply_is_retried() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::fault(Fault::Hangup));
        server.push(Reply::text("second time lucky"));
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(response.text(), "second time lucky");
        assert_eq!(server.requests().len(), 2, "{kind:?}");
    }
}

#[tokio::test]
async fn a_slow_stream_completes() {
    for kind in WIRES {
        let server = server().await;
        server.push(Reply::text("slow but sure").slow(Duration::from_millis(15)));
        let response =
            client(&server, kind).complete(&hello("m"), CancellationToken::new()).await.unwrap();
        assert_eq!(response.text(), "slow but sure");
    }
}

#[tokio::test]
async fn a_stalled_stream_times_out_as_a_network_error() {
    let server = server().await;
    // Keep-alives would count as life; a stall is a silence longer than the idle timeout.
    server.push_all((0..4).map(|_| Reply::text("late").slow(Duration::from_millis(400))));
    let mut config = server.config(ProviderKind::OpenAi);
    config.idle_timeout = Duration::from_millis(60);
    let failure = Client::new(config)
        .unwrap()
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Network, "{}", failure.error);
}

#[tokio::test]
async fn an_error_sent_with_status_200_is_an_error() {
    let server = server().await;
    server.push(Reply::fault(Fault::Status {
        status: 200,
        body: r#"{"error":"Model unloaded."}"#.into(),
    }));
    server.push(Reply::text("recovered"));
    let response = client(&server, ProviderKind::OpenAi)
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.text(), "recovered");
    assert_eq!(server.requests().len(), 2, "the 200 error was treated as a transient failure");
}

#[tokio::test]
async fn a_mislabelled_stream_is_still_read_and_html_is_not_a_stream() {
    let server = server().await;
    let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    server.push(Reply::raw_sse(sse).with_content_type("text/plain; charset=utf-8"));
    server.push(Reply::raw_sse("<html>captive portal</html>").with_content_type("text/html"));
    let client = client(&server, ProviderKind::OpenAi);
    assert_eq!(client.complete(&hello("m"), CancellationToken::new()).await.unwrap().text(), "ok");
    let failure = client.complete(&hello("m"), CancellationToken::new()).await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Protocol, "{}", failure.error);
    assert!(failure.error.message.contains("not an event stream"), "{}", failure.error);
}

/// Nothing listening: `Unreachable` at once (a retry would wait for nothing), the address named.
#[tokio::test]
async fn connection_refused_is_unreachable_and_names_the_address() {
    let server = server().await;
    let mut config = server.config(ProviderKind::Anthropic);
    drop(server);
    config.retry = RetryPolicy::none();
    config.base_url = "http://127.0.0.1:9".into();
    let failure = Client::new(config)
        .unwrap()
        .complete(&hello("m"), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Unreachable, "{}", failure.error);
    assert!(!failure.error.kind.is_transient());
    assert!(failure.error.to_string().contains("nothing answers at http://127.0.0.1:9"));
}

/// `/v1/responses` answers a scripted reply in the Responses shape, and serves verbatim SSE too
/// (a fixture, or another tool's client in a side-by-side benchmark).
#[tokio::test]
async fn the_responses_route_renders_scripts_and_serves_verbatim_streams() {
    let server = server().await;
    let url = format!("{}/responses", server.openai_base_url());
    codewhale_provider::install_crypto();
    let http = reqwest::Client::new();
    server.push(Reply::text("in the responses shape").with_usage(12, 4));
    let scripted = http.post(&url).body("{}").send().await.unwrap().text().await.unwrap();
    assert!(scripted.contains("event: response.output_text.delta"), "{scripted}");
    assert!(scripted.contains("\"input_tokens\":12"), "{scripted}");
    let sse = "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n";
    server.push(Reply::raw_sse(sse));
    let served = http.post(&url).send().await.unwrap();
    assert_eq!(served.status().as_u16(), 200);
    assert_eq!(served.text().await.unwrap(), sse);
    assert_eq!(server.requests()[0].path, "/v1/responses");
}

/// A reply far past what was asked for (a server that never stops) is cut at four times the
/// output tokens asked for: the turn ends with what came, memory stays bounded.
#[tokio::test]
async fn a_reply_that_keeps_coming_is_cut_at_its_bound() {
    for kind in WIRES {
        let server = server().await;
        // 100 output tokens asked for: at most 1,600 bytes are read.
        let endless = (0..400)
            .map(|k| format!("part {k:04} of a reply that never ends. "))
            .collect::<String>();
        server.push(Reply::text(endless).with_chunk_size(64));
        let mut request = hello("m");
        request.max_output_tokens = 100;
        let failure =
            client(&server, kind).complete(&request, CancellationToken::new()).await.unwrap_err();
        let message = failure.error.to_string();
        assert!(message.contains("the server kept sending: the reply was cut at"), "{message}");
        let kept = failure.partial.map(|p| p.text()).unwrap_or_default();
        assert!(!kept.is_empty() && kept.len() <= 1_600, "{kind:?}: {} bytes kept", kept.len());
        assert_eq!(codewhale_provider::reply_bound(100), 1_600);
        assert_eq!(codewhale_provider::reply_bound(u32::MAX), 16 * 1024 * 1024);
    }
}

/// A server that accepts and then says nothing is named while it lasts (a `Waiting` every
/// `silence_notice`), then the request ends with "the server stopped answering after N s"; the
/// same for a stream that falls silent midway.
#[tokio::test]
async fn a_silent_server_is_named_and_then_given_up() {
    for (reply, label) in [
        (Reply::text("late").after(Duration::from_secs(5)), "before the reply"),
        (Reply::text("a b c d e f g h").slow(Duration::from_secs(5)), "midway"),
    ] {
        let server = server().await;
        server.push(reply);
        let mut config = server.config(ProviderKind::OpenAi);
        config.retry = RetryPolicy::none();
        config.idle_timeout = Duration::from_millis(1_000);
        config.silence_notice = Duration::from_millis(300);
        let mut waits = Vec::new();
        let failure = Client::new(config)
            .unwrap()
            .complete_with(&hello("m"), CancellationToken::new(), |event| {
                if let codewhale_provider::StreamEvent::Waiting { silent } = event {
                    waits.push(*silent);
                }
            })
            .await
            .unwrap_err();
        assert!(
            failure.error.to_string().contains("the server stopped answering after 1 s"),
            "{label}: {}",
            failure.error
        );
        assert_eq!(
            waits,
            [Duration::from_millis(300), Duration::from_millis(600), Duration::from_millis(900)],
            "{label}"
        );
    }
}
