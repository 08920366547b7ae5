use super::*;
use codewhale_journal::{Block, Payload};

#[test]
fn every_built_in_rule_compiles_alone() {
    let (rules, set) = built_in().unwrap();
    assert_eq!(rules.len(), set.len());
    for rule in rules.iter() {
        assert!(rule.regex().is_some(), "{} does not compile alone", rule.kind);
    }
}

fn r() -> Redactor {
    Redactor::new(&[], &["sk-session-own-key-123456".into()]).unwrap()
}

#[test]
fn secrets_after_non_ascii_text_are_still_found() {
    let r = Redactor::default();
    let text = "λ ünïcode log: sk-ant-api03-abcdefghijklmnopqrstuvwxyz and AKIAABCDEFGHIJKLMNOP";
    let out = r.redact(text);
    assert!(out.contains("[REDACTED:anthropic-key:"), "{out}");
    assert!(out.contains("[REDACTED:aws-access-key:"), "{out}");
    assert!(out.starts_with("λ ünïcode log: "), "{out}");
}

#[test]
fn every_kind_is_caught_and_named() {
    let cases = [
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345", "openai-key"),
        ("key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "anthropic-key"),
        ("sk-or-v1-0123456789abcdef0123456789abcdef0123", "openrouter-key"),
        ("sk-0123456789abcdef0123456789abcdef", "openai-key"),
        ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "google-key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-key"),
        ("ghp_0123456789abcdefghijklmnopqrstuvwxyz", "github-token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghij", "github-token"),
        ("glpat-abcdefghij0123456789", "gitlab-token"),
        ("xoxb-1234567890-abcdefghij", "slack-token"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
        ),
        ("Authorization: Bearer abc123DEF456ghi789JKL", "bearer-token"),
        ("DATABASE_PASSWORD=hunter2hunter2", "secret"),
        ("export GITHUB_TOKEN='plain-value-1234'", "secret"),
        ("  \"api_key\": \"abc123def456\",", "secret"),
        ("db_password: s3cr3t-value", "secret"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "private-key",
        ),
        (r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"}"#, "private-key"),
        ("curl -H 'x-api-key: sk-session-own-key-123456'", "api-key"),
    ];
    for (text, kind) in cases {
        let out = r().redact(text);
        assert!(out.contains(&format!("[REDACTED:{kind}:")), "{text} → {out}");
        assert!(holds_marker(&out), "{out}");
    }
}

#[test]
fn ordinary_text_and_code_are_left_alone() {
    for text in [
        "let token = next_token(&mut lexer);",
        "password = get_password()",
        "cache_key = \"user_profile\"",
        "primary_key = True",
        "the secret of good code is tests",
        "API_KEY=$OPENAI_API_KEY",
        "TOKEN=<your token here>",
        "sk-learn is a library",
        "Bearer tokens are explained in RFC 6750",
    ] {
        assert_eq!(r().redact(text), text, "{text}");
    }
}

#[test]
fn markers_tell_secrets_apart_and_are_stable() {
    let a = r().redact("ghp_0123456789abcdefghijklmnopqrstuvwxyz");
    let b = r().redact("ghp_zyxwvutsrqponmlkjihgfedcba9876543210");
    assert_ne!(a, b);
    assert_eq!(a, r().redact("ghp_0123456789abcdefghijklmnopqrstuvwxyz"));
    assert_eq!(r().redact(&a), a, "redacting twice changes nothing");
}

#[test]
fn signed_thinking_with_a_secret_is_dropped_whole_and_ids_are_kept() {
    let mut payload = Payload::Assistant(codewhale_journal::AssistantPayload::new(vec![
        Block::thinking("the key is AKIAIOSFODNN7EXAMPLE", Some("c2ln".into())),
        Block::thinking("nothing here", Some("c2ln".into())),
        Block::tool_use(
            "call-AKIAIOSFODNN7EXAMPLE",
            "shell",
            serde_json::json!({"command": "echo AKIAIOSFODNN7EXAMPLE"}),
        ),
    ]));
    r().redact_payload(&mut payload);
    let Payload::Assistant(a) = payload else { panic!() };
    assert_eq!(a.content.len(), 2);
    assert_eq!(a.content[0], Block::thinking("nothing here", Some("c2ln".into())));
    let call = a.content[1].as_tool_use().unwrap();
    assert_eq!(call.id, "call-AKIAIOSFODNN7EXAMPLE", "ids are replayed byte for byte");
    assert!(call.input["command"].as_str().unwrap().contains("[REDACTED:aws-access-key:"));
}

#[test]
fn user_patterns_are_added_and_bad_ones_refused() {
    let custom = Redactor::new(&["ACME-[0-9]{6}".into()], &[]).unwrap();
    assert!(custom.redact("ticket ACME-123456").contains("[REDACTED:custom:"));
    assert!(Redactor::new(&["(unclosed".into()], &[]).is_err());
}

#[test]
fn patterns_that_would_redact_ordinary_text_are_refused() {
    for broad in ["[a-z]", r"\w+", ".", "(?s).+", "[^ ]+", "[a-zA-Z0-9]"] {
        let e = check_pattern(broad).unwrap_err();
        assert!(e.contains(&format!("{broad:?}")) && e.contains("ordinary paragraph"), "{e}");
    }
    for empty in ["a*", "x?", "(?:)"] {
        assert!(check_pattern(empty).unwrap_err().contains("matches empty text"), "{empty}");
    }
    assert!(check_pattern("(unclosed").unwrap_err().contains("not a valid regular"));
    for narrow in ["ACME-[0-9]{6}", "internal-[a-f0-9]{32}", r"\btok_[A-Za-z0-9]{20,}"] {
        assert_eq!(check_pattern(narrow), Ok(()), "{narrow}");
    }
}

/// The lines a tool prefixes: `read_file`'s gutter and `search`'s `path:line:` hid these
/// from the `NAME=value` rule, while `cat` of the same file was redacted.
#[test]
fn secrets_after_a_tools_line_prefix_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let secrets = [
        "sk_live_51HabcdefGHIJKLmnop",
        "abcdef123456ghij",
        "hunter2hunter2",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEK/+",
    ];
    let env = format!(
        "# settings\nSTRIPE_SECRET={}\nMY_API_KEY={}\npassword: {}\n\
         AWS_SECRET_ACCESS_KEY={}\nPLAIN=value\n",
        secrets[0], secrets[1], secrets[2], secrets[3]
    );
    std::fs::write(ws.join("app.env"), &env).unwrap();
    let read = crate::tools::files::read_file(&ws.join("app.env"), "app.env", None, None).unwrap();
    let found = crate::tools::search::search(&ws, &ws, "=|:", None).unwrap();
    let r = Redactor::default();
    for (tool, out) in [("read_file", &read), ("search", &found), ("cat", &env)] {
        let redacted = r.redact(out);
        for secret in secrets {
            assert!(!redacted.contains(secret), "{tool} leaked {secret}:\n{redacted}");
        }
        assert_eq!(redacted.matches(MARKER_PREFIX).count(), 4, "{tool}:\n{redacted}");
        assert!(redacted.contains("PLAIN=value"), "{redacted}");
    }
    // A piece of a long line carries its `line.piece` label.
    assert!(r.redact("   3.2\tDB_PASSWORD=correct-horse-battery").contains(MARKER_PREFIX));
}

/// A command cannot carry the session's key out reversed or encoded (`… | rev`, `… | base64`,
/// with `base64` wrapping its output, or both).
#[test]
fn the_sessions_own_key_is_redacted_reversed_and_in_base64() {
    use base64::Engine as _;
    let key = "sk-proj-Zq7TkW0pL3mN8vB2xC5dF1gH4jK6lQ9rS";
    let r = Redactor::new(&[], &[key.to_owned()]).unwrap();
    let reversed: String = key.chars().rev().collect();
    let line = format!("OPENAI_API_KEY={key}\n");
    let b64 = base64::engine::general_purpose::STANDARD;
    let encoded = b64.encode(line.as_bytes());
    let wrapped: String = encoded
        .as_bytes()
        .chunks(20)
        .map(|c| std::str::from_utf8(c).unwrap().to_owned() + "\n")
        .collect();
    let shifted = b64.encode(format!("xy{key}").as_bytes());
    let reversed_b64 = b64.encode(reversed.as_bytes());
    for text in [
        format!("YEK_IPA_IANEPO={reversed}"),
        encoded.clone(),
        format!("before\n{wrapped}after"),
        shifted,
        reversed_b64,
        encoded.chars().rev().collect::<String>(),
    ] {
        let out = r.redact(&text);
        assert!(out.contains("[REDACTED:api-key:"), "{text} → {out}");
        assert!(!out.contains(key) && !out.contains(&reversed), "{out}");
        let joined = out.replace('\n', "");
        assert!(!joined.contains(&b64.encode(key.as_bytes())[..20]), "{out}");
    }
    // Ordinary base64 and ordinary reversed text stay.
    let other = b64.encode(b"hello world, nothing secret here at all");
    assert_eq!(r.redact(&other), other.as_str());
}
