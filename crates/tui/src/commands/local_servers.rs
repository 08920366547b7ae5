//! First run with no provider configured: besides the setup help, say how to use the model
//! servers running on this machine, with their models.
//!
//! Finding them is the engine's ([`codewhale_engine::offline::local_servers`]: the default
//! ports of Ollama, llama.cpp, LM Studio and vLLM asked at once, within 300 ms, each server
//! named by what it answers); this module only words the offer.

use codewhale_engine::offline::LocalServer;

/// What to tell the user about `found`: how to start with each server.
pub fn offer(found: &[LocalServer]) -> String {
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
        let name = f.name.as_deref().unwrap_or("an OpenAI-compatible server");
        out.push_str(&format!("Found a local model server: {name} at {} ({list}).\n", f.base_url));
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
    use codewhale_provider::test_support::MockServer;

    use super::*;

    fn port_of(server: &MockServer) -> u16 {
        server.url().rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Servers on ports no default names: each is known by what it answers, and one that lists
    /// no models in the OpenAI shape is left out.
    #[tokio::test]
    async fn what_answers_like_a_model_server_is_offered_by_its_name_with_its_models() {
        let ollama = MockServer::start().await.unwrap();
        ollama.serve_models(&["qwen2.5-coder:7b", "llama3.1"]);
        ollama.serve_get("/api/version", serde_json::json!({"version": "0.12.0"}));
        let generic = MockServer::start().await.unwrap();
        generic.serve_models(&["served-model"]);
        let bare = MockServer::start().await.unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let ports = [port_of(&ollama), port_of(&generic), port_of(&bare), closed.port()];
        let found = codewhale_engine::offline::local_servers(&ports).await;
        assert_eq!(
            found,
            [
                LocalServer {
                    name: Some("Ollama".into()),
                    base_url: ollama.openai_base_url(),
                    models: vec!["qwen2.5-coder:7b".into(), "llama3.1".into()],
                },
                LocalServer {
                    name: None,
                    base_url: generic.openai_base_url(),
                    models: vec!["served-model".into()],
                },
            ]
        );
        let text = offer(&found);
        assert!(text.contains("Ollama at http://127.0.0.1:"), "{text}");
        assert!(text.contains("models: qwen2.5-coder:7b, llama3.1"), "{text}");
        assert!(
            text.contains(&format!(
                "--base-url {} --model qwen2.5-coder:7b",
                ollama.openai_base_url()
            )),
            "{text}"
        );
        assert!(text.contains("an OpenAI-compatible server at"), "{text}");
    }
}
