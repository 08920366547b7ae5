//! Cancellation stops the HTTP stream at once: asserted by the order of what each side saw.

use std::time::Duration;

use codewhale_provider::test_support::{Fault, Reply};
use codewhale_provider::{CancellationToken, ErrorKind, StreamEvent};
use futures::StreamExt;

use super::{client, hello, server, WIRES};

#[tokio::test]
async fn cancelling_mid_stream_ends_the_stream_and_closes_the_connection() {
    for kind in WIRES {
        let server = server().await;
        // Enough frames for some text, then the server keeps the reply open forever.
        server.push(Reply::text("streaming forever").hang_after(4));
        let cancel = CancellationToken::new();
        let mut stream = client(&server, kind).stream(&hello("m"), cancel.clone()).await.unwrap();
        let mut got_text = false;
        while !got_text {
            match stream.next().await {
                Some(Ok(StreamEvent::TextDelta { text })) if !text.is_empty() => got_text = true,
                Some(Ok(_)) => {}
                other => panic!("{kind:?}: stream ended before any text: {other:?}"),
            }
        }
        assert_eq!(server.disconnects(), 0, "{kind:?}: the reply is still open before the cancel");
        cancel.cancel();
        // The very next item is the cancellation, and nothing follows it.
        let next = stream.next().await.unwrap();
        assert_eq!(next.unwrap_err().kind, ErrorKind::Cancelled, "{kind:?}");
        assert!(stream.next().await.is_none());
        drop(stream);
        // The server sees the client leave; the hanging reply would otherwise never end.
        tokio::time::timeout(Duration::from_secs(10), server.wait_for_disconnects(1))
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the server never saw the connection close"));
    }
}

#[tokio::test]
async fn cancelling_stops_the_connection_while_the_stream_is_still_held() {
    let server = server().await;
    server.push(Reply::text("streaming forever").hang_after(3));
    let cancel = CancellationToken::new();
    let mut stream = client(&server, codewhale_provider::ProviderKind::OpenAi)
        .stream(&hello("m"), cancel.clone())
        .await
        .unwrap();
    stream.next().await.unwrap().unwrap();
    cancel.cancel();
    assert_eq!(stream.next().await.unwrap().unwrap_err().kind, ErrorKind::Cancelled);
    // The stream object is still alive here: the connection must be gone anyway.
    tokio::time::timeout(Duration::from_secs(10), server.wait_for_disconnects(1)).await.unwrap();
    drop(stream);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    for kind in WIRES {
        let server = server().await;
        // Past the frames that open a reply (the Responses API sends three before any text).
        server.push(Reply::text("streaming forever").hang_after(5));
        let mut stream =
            client(&server, kind).stream(&hello("m"), CancellationToken::new()).await.unwrap();
        stream.next().await.unwrap().unwrap();
        assert_eq!(server.disconnects(), 0);
        drop(stream);
        tokio::time::timeout(Duration::from_secs(10), server.wait_for_disconnects(1))
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the server never saw the connection close"));
    }
}

#[tokio::test]
async fn cancelling_during_a_retry_wait_returns_at_once() {
    let server = server().await;
    server.push(Reply::fault(Fault::RateLimited { retry_after_secs: Some(4) }));
    server.push(Reply::text("too late"));
    let cancel = CancellationToken::new();
    let client = client(&server, codewhale_provider::ProviderKind::Anthropic);
    let request = hello("m");
    let call = client.complete(&request, cancel.clone());
    let canceller = async {
        // Cancel once the first attempt has been answered, while the client waits to retry.
        while server.requests().is_empty() {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert_eq!(result.unwrap_err().error.kind, ErrorKind::Cancelled);
    assert_eq!(server.requests().len(), 1, "no retry after the cancel");
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn a_cancelled_token_sends_nothing() {
    let server = server().await;
    server.push(Reply::text("unused"));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let failure = client(&server, codewhale_provider::ProviderKind::OpenAi)
        .complete(&hello("m"), cancel)
        .await
        .unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Cancelled);
    assert!(server.requests().is_empty());
}
