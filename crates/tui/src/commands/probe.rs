//! First run with no provider configured: look for a local OpenAI-compatible server on the
//! usual ports (Ollama 11434, llama.cpp 8080, LM Studio 1234, vLLM 8000) and, besides the
//! setup help, say how to use what answered, with its models.
//!
//! Each port gets `GET /v1/models` on 127.0.0.1, all at once, within [`BUDGET`] in all, so the
//! help never waits noticeably. A port that does not answer with an OpenAI-style model list
//! (`{"data":[{"id":...}]}`) is not mentioned.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The whole probe's time limit.
pub const BUDGET: Duration = Duration::from_millis(300);

/// The servers looked for: a name and a port.
pub const LOCAL_SERVERS: &[(&str, u16)] =
    &[("Ollama", 11434), ("llama.cpp", 8080), ("LM Studio", 1234), ("vLLM", 8000)];

/// A server that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    pub base_url: String,
    pub models: Vec<String>,
}

/// Probes `servers` on 127.0.0.1 at once; what answered, in the order given.
pub async fn probe(servers: &[(&str, u16)]) -> Vec<Found> {
    let asks = servers.iter().map(|(name, port)| async move {
        let models = models_at(*port).await?;
        Some(Found {
            name: (*name).to_owned(),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            models,
        })
    });
    let all = futures::future::join_all(asks);
    tokio::time::timeout(BUDGET, all)
        .await
        .map(|r| r.into_iter().flatten().collect())
        .unwrap_or_default()
}

/// The model ids `GET /v1/models` lists on `port`, if it answers like an OpenAI server.
async fn models_at(port: u16) -> Option<Vec<String>> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!(
        "GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream.take(1 << 20).read_to_end(&mut response).await.ok()?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.lines().next().is_some_and(|status| status.contains(" 200")) {
        return None;
    }
    let json: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    let models = json
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()).map(str::to_owned))
        .collect();
    Some(models)
}

/// What to tell the user about `found`: how to start with each server.
pub fn offer(found: &[Found]) -> String {
    let mut out = String::new();
    for f in found {
        let shown: Vec<&str> = f.models.iter().take(8).map(String::as_str).collect();
        let more = f.models.len().saturating_sub(shown.len());
        let list = if shown.is_empty() {
            "no models listed".to_owned()
        } else if more > 0 {
            format!("models: {} and {more} more", shown.join(", "))
        } else {
            format!("models: {}", shown.join(", "))
        };
        out.push_str(&format!(
            "Found a local model server: {} at {} ({list}).\n",
            f.name, f.base_url
        ));
        let model = f.models.first().map(String::as_str).unwrap_or("MODEL");
        out.push_str(&format!(
            "Start with it now:\n\n  codewhale --provider openai --base-url {} --model {model}\n\n",
            f.base_url
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;

    use super::*;

    /// A one-shot HTTP server answering `body` with `status`.
    async fn serve(status: &'static str, body: &'static str) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await;
                let reply =
                    format!("HTTP/1.0 {status}\r\nContent-Type: application/json\r\n\r\n{body}");
                let _ = socket.write_all(reply.as_bytes()).await;
            }
        });
        port
    }

    #[tokio::test]
    async fn what_answers_like_an_openai_server_is_offered_with_its_models() {
        let good = serve(
            "200 OK",
            r#"{"object":"list","data":[{"id":"qwen2.5-coder:7b"},{"id":"llama3.1"}]}"#,
        )
        .await;
        let other = serve("200 OK", "<html>a web app</html>").await;
        let missing = serve("404 Not Found", "").await;
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let found =
            probe(&[("Ollama", good), ("web", other), ("none", missing), ("off", closed)]).await;
        assert_eq!(
            found,
            [Found {
                name: "Ollama".into(),
                base_url: format!("http://127.0.0.1:{good}/v1"),
                models: vec!["qwen2.5-coder:7b".into(), "llama3.1".into()],
            }]
        );
        let text = offer(&found);
        assert!(text.contains("models: qwen2.5-coder:7b, llama3.1"), "{text}");
        assert!(
            text.contains(&format!(
                "--base-url http://127.0.0.1:{good}/v1 --model qwen2.5-coder:7b"
            )),
            "{text}"
        );
    }
}
