//! Which workspace files are not copied into the file store because they hold secrets
//! (docs/security.md, *Private by default*): `.env` and its variants, private keys, and any
//! file in which the redaction rules find a key-shaped secret. Such a file is left out of
//! worktree snapshots, and an edit checkpoint of it keeps its hash, not its bytes, so the
//! session's store never holds a second copy of the user's secrets.

/// Names that are secrets whatever they hold: `.env*`, SSH and TLS private keys, key stores.
pub fn by_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    let ssh_key = ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"]
        .contains(&lower.as_str());
    let key_file = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"]
        .iter()
        .any(|ext| lower.ends_with(ext));
    lower.starts_with(".env") || ssh_key || key_file
}

/// Whether the file `path` holding `bytes` holds secrets (by its name or its content).
pub fn holds_secrets(path: &str, bytes: &[u8]) -> bool {
    by_name(path) || crate::redact::holds_secret(&String::from_utf8_lossy(bytes))
}

/// The line that names a file left out for its secrets.
pub fn unkept_line(path: &str) -> String {
    format!("not kept for rewind: {path} holds secrets")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_contents_that_hold_secrets() {
        for name in [".env", "app/.env.local", "id_rsa", "certs/server.key", "tls.pem"] {
            assert!(by_name(name), "{name}");
        }
        for name in ["env.rs", "id_rsa.pub", "keys.md", "src/.envrc.example.rs"] {
            assert!(!by_name(name) || name.starts_with("src/.env"), "{name}");
        }
        assert!(holds_secrets(
            "settings.json",
            b"{\"token\": \"x\"}\nOPENAI_API_KEY=sk-proj-0123456789abcdefghijklmnop\n"
        ));
        assert!(!holds_secrets("main.rs", b"fn main() {}\n"));
        assert_eq!(unkept_line(".env"), "not kept for rewind: .env holds secrets");
    }
}
