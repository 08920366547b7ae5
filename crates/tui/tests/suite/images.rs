//! Images in user messages end to end: the real binary, real HTTP to the mock server on all
//! three wires, real blob stores and journal files.

use std::path::PathBuf;
use std::process::Output;

use super::support::text;
use codewhale_provider::test_support::{Fault, MockServer, Reply, TEST_API_KEY};
use serde_json::Value;
use tempfile::TempDir;

/// The three wires: provider name, model, and the key variable.
const WIRES: [(&str, &str, &str); 3] = [
    ("openai", "gpt-4.1", "OPENAI_API_KEY"),
    ("anthropic", "claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    ("openai-responses", "gpt-5-codex", "OPENAI_API_KEY"),
];

struct Setup {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
    wire: (&'static str, &'static str, &'static str),
}

impl Setup {
    async fn new(wire: (&'static str, &'static str, &'static str)) -> Setup {
        Setup {
            server: MockServer::start().await.unwrap(),
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
            wire,
        }
    }

    /// `codewhale SUBCOMMAND ARGS` against the mock server on this setup's wire.
    async fn run(&self, sub: &str, args: &[&str]) -> Output {
        let (provider, model, key) = self.wire;
        let base = if provider == "anthropic" {
            self.server.anthropic_base_url()
        } else {
            self.server.openai_base_url()
        };
        let mut cmd = self.command();
        cmd.arg(sub)
            .args(["--provider", provider, "--model", model, "--base-url", &base])
            .args(args)
            .env(key, TEST_API_KEY);
        cmd.output().await.unwrap()
    }

    fn command(&self) -> tokio::process::Command {
        super::cli::codewhale(self.home.path(), self.ws.path())
    }

    /// Writes a PNG of `w`×`h` pixels in the workspace and returns its bytes.
    fn png(&self, name: &str, w: u32, h: u32) -> Vec<u8> {
        let bytes = png(w, h);
        std::fs::write(self.ws.path().join(name), &bytes).unwrap();
        bytes
    }

    fn session(&self) -> PathBuf {
        let dir = self.home.path().join("sessions");
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .expect("a session file")
    }

    async fn journal_check(&self) {
        let out = self
            .command()
            .args(["journal", "check", &self.session().to_string_lossy()])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stdout));
    }
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba([x as u8, y as u8, 7, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img).write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The base64 data of every image part of a request body, in order, read the way each wire
/// carries it (Chat Completions `image_url` data URL, Anthropic `image` base64 source,
/// Responses `input_image`).
fn image_parts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![body];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(map) => {
                let url = match map.get("type").and_then(Value::as_str) {
                    Some("image_url") => map["image_url"]["url"].as_str(),
                    Some("input_image") => map["image_url"].as_str(),
                    Some("image") => {
                        assert_eq!(map["source"]["type"], "base64", "{v}");
                        out.push(map["source"]["data"].as_str().unwrap().to_owned());
                        None
                    }
                    _ => None,
                };
                if let Some(url) = url {
                    let data = url.strip_prefix("data:image/png;base64,").expect("a PNG data URL");
                    out.push(data.to_owned());
                }
                let mut values: Vec<&Value> = map.values().collect();
                values.reverse();
                stack.extend(values);
            }
            _ => {}
        }
    }
    out
}

/// An image named with `--image` and one mentioned as `@b.png` reach the request, on every
/// wire, as that wire's own image part, in order; the journal names their blobs and holds no
/// base64; each blob holds the file's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_reaches_each_wire_as_its_own_part() {
    for wire in WIRES {
        let s = Setup::new(wire).await;
        let a = s.png("a.png", 64, 48);
        let b = s.png("b.png", 10, 20);
        s.server.push(Reply::text("two images").with_usage(900, 4));
        let out = s.run("exec", &["--image", "a.png", "how does this compare with @b.png?"]).await;
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", wire.0);
        assert!(stderr.contains("attached a.png 64×48 · 1 KB; b.png 10×20"), "{stderr}");
        let request = s.server.last_request().unwrap();
        assert_eq!(image_parts(&request.body), [b64(&a), b64(&b)], "{}", wire.0);
        let journal = std::fs::read_to_string(s.session()).unwrap();
        assert!(!journal.contains(&b64(&a)[..40]), "no base64 in the journal");
        let blobs = s.session().with_extension("blobs");
        for (bytes, name) in [(&a, "a.png"), (&b, "b.png")] {
            let line = journal.lines().find(|l| l.contains(name)).expect("the image's entry");
            let entry: Value = serde_json::from_str(line).unwrap();
            let block = entry["payload"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["name"] == name)
                .unwrap()
                .clone();
            assert_eq!(block["type"], "image");
            assert_eq!(block["media_type"], "image/png");
            let blob = block["blob"].as_str().unwrap();
            assert_eq!(&std::fs::read(blobs.join(blob)).unwrap(), bytes);
        }
        s.journal_check().await;
        // They count in the budget, on a line of their own (the larger of the providers'
        // published costs: 85 + 170 per 512-px tile for each of these two).
        let out = s.run("context", &["--last", "--json"]).await;
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["tokens"]["images"], 510, "{}", text(&out.stderr));
        let out = s.run("context", &["--last"]).await;
        assert!(text(&out.stdout).contains("  I images             510 (estimated)"));
    }
}

/// An image over 20 MB and one that is not readable are refused before anything starts: a
/// clear sentence, exit 2, no request, no session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_or_malformed_image_is_refused_cleanly() {
    let s = Setup::new(WIRES[0]).await;
    let huge = std::fs::File::create(s.ws.path().join("huge.png")).unwrap();
    huge.set_len(21 * 1024 * 1024).unwrap();
    let mut cut = png(64, 48);
    cut.truncate(cut.len() / 2);
    std::fs::write(s.ws.path().join("cut.png"), cut).unwrap();
    std::fs::write(s.ws.path().join("notes.png"), "not an image").unwrap();
    for (file, says) in [
        ("huge.png", "it is 21.0 MB, over the 20 MB an image may be"),
        ("cut.png", "it is not a readable PNG image"),
        ("notes.png", "it is not a PNG, JPEG, GIF or WebP image"),
        ("missing.png", "cannot read it"),
    ] {
        let out = s.run("exec", &["--image", file, "look"]).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(stderr.contains(&format!("cannot send the image {file}: {says}")), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(s.server.requests().is_empty());
    assert!(!s.home.path().join("sessions").exists(), "no session was started");
}

/// A kill after the image's blob is stored and before the entry naming it is written leaves
/// an unused blob and a journal that checks clean, never an entry without its blob; the
/// session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_between_the_blob_and_its_entry_leaves_only_an_unused_blob() {
    let s = Setup::new(WIRES[0]).await;
    let bytes = s.png("shot.png", 32, 32);
    let (provider, model, key) = s.wire;
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", provider, "--model", model])
        .args(["--base-url", &s.server.openai_base_url(), "--image", "shot.png", "look"])
        .env(key, TEST_API_KEY);
    super::support::kill_at(cmd, "image:blob").await;
    let blobs: Vec<PathBuf> = std::fs::read_dir(s.session().with_extension("blobs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(blobs.len(), 1);
    assert_eq!(std::fs::read(&blobs[0]).unwrap(), bytes, "the blob is whole");
    let journal = std::fs::read_to_string(s.session()).unwrap();
    assert!(!journal.contains("\"type\":\"image\""), "no entry names the blob yet");
    s.journal_check().await;
    assert!(s.server.requests().is_empty());
    s.server.push(Reply::text("ok"));
    let out = s.run("exec", &["--last", "--image", "shot.png", "look again"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(image_parts(&s.server.last_request().unwrap().body), [b64(&bytes)]);
    s.journal_check().await;
}

/// After a compaction that covers a message with an image (at a window where the note's
/// budget is smaller than what it covers), the next request carries no bytes of it — the
/// message is kept with the one-line placeholder — while the last round keeps its own image;
/// the summary request reads the image as its line, so the note can name it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_leaves_older_images_as_placeholders_and_keeps_the_last_rounds() {
    for wire in WIRES {
        let s = Setup::new(wire).await;
        let old = s.png("old.png", 1024, 1024);
        let new = s.png("new.png", 16, 16);
        let window = ["--context-window", "16000"];
        s.server.push(Reply::text("a big picture").with_usage(2_000, 5));
        let out =
            s.run("exec", &[&window[..], &["--image", "old.png", "what is this?"]].concat()).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        s.server.push(Reply::text("noted").with_usage(2_100, 5));
        let out = s.run("exec", &[&window[..], &["--last", "remember the colours"]].concat()).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        s.server.push(Reply::text(super::pty::SUMMARY).with_usage(2_000, 300));
        let out = s.run("compact", &[&window[..], &["--last"]].concat()).await;
        assert!(out.status.success(), "{}: {}", wire.0, text(&out.stderr));
        let summary = s.server.last_request().unwrap().body;
        assert!(image_parts(&summary).is_empty(), "the summarizer gets no image bytes");
        assert!(summary.to_string().contains("[image old.png 1024×1024]"), "{summary}");
        s.server.push(Reply::text("the new one is small").with_usage(800, 5));
        let args = [&window[..], &["--last", "--image", "new.png", "and this one?"]].concat();
        let out = s.run("exec", &args).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let body = s.server.last_request().unwrap().body;
        assert_eq!(image_parts(&body), [b64(&new)], "{}: only the last round's image", wire.0);
        assert!(!body.to_string().contains(&b64(&old)[..40]));
        let placeholder = "[image old.png 1024×1024, covered by compaction; the journal keeps it]";
        assert!(body.to_string().contains(placeholder), "{}: {body}", wire.0);
        s.journal_check().await;
    }
}

/// A model that refuses images gets a clear warning and the same request again with each
/// image named in one line; the turn completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_refuses_images_gets_the_request_again_without_them() {
    let s = Setup::new(WIRES[0]).await;
    s.png("shot.png", 64, 48);
    let refusal = r#"{"error":{"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"invalid_request_error"}}"#;
    s.server.push(Reply::fault(Fault::Status { status: 400, body: refusal.into() }));
    s.server.push(Reply::text("I cannot see it, but go on").with_usage(50, 8));
    let out = s.run("exec", &["--image", "shot.png", "what is in it?"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("gpt-4.1 does not take images"), "{stderr}");
    let requests = s.server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(image_parts(&requests[0].body).len(), 1);
    assert!(image_parts(&requests[1].body).is_empty());
    let retried = requests[1].body.to_string();
    assert!(retried.contains("[image shot.png 64×48 left out: this model does not take images]"));
    assert_eq!(text(&out.stdout), "I cannot see it, but go on\n");
}

/// A Claude Code session whose user message holds an image brings it into the new session's
/// blob store; the next request sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_image_goes_to_the_blob_store_and_is_sent() {
    let s = Setup::new(WIRES[1]).await;
    let bytes = png(40, 30);
    let source = s.ws.path().join("claude.jsonl");
    let line = |json: Value| format!("{json}\n");
    let ws = s.ws.path().to_string_lossy().into_owned();
    let user = serde_json::json!({
        "type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s1", "cwd": ws,
        "timestamp": "2026-11-01T10:00:00.000Z",
        "message": {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&bytes)}},
            {"type": "text", "text": "what does this chart show?"},
        ]},
    });
    let reply = serde_json::json!({
        "type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "cwd": ws,
        "timestamp": "2026-11-01T10:00:05.000Z",
        "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Sales by month."}]},
    });
    std::fs::write(&source, line(user) + &line(reply)).unwrap();
    let out =
        s.command().args(["import", &source.to_string_lossy(), "--json"]).output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["images_imported"], 1, "{report}");
    let journal = std::fs::read_to_string(s.session()).unwrap();
    assert!(!journal.contains(&b64(&bytes)[..40]), "no base64 in the journal");
    s.server.push(Reply::text("yes"));
    let out = s.run("exec", &["--last", "and the trend?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(image_parts(&s.server.last_request().unwrap().body), [b64(&bytes)]);
    s.journal_check().await;
}

/// A Codex rollout whose user message holds an `input_image` data URL brings it into the new
/// session's blob store too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_image_is_imported_into_the_blob_store() {
    let s = Setup::new(WIRES[2]).await;
    let bytes = png(12, 34);
    let source = s.ws.path().join("rollout-2026-11-01T10-00-00-abc.jsonl");
    let ws = s.ws.path().to_string_lossy().into_owned();
    let lines = [
        serde_json::json!({"timestamp": "2026-11-01T10:00:00.000Z", "type": "session_meta",
            "payload": {"id": "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", "timestamp": "2026-11-01T10:00:00.000Z",
                "cwd": ws, "originator": "codex_cli_rs", "cli_version": "0.46.0"}}),
        serde_json::json!({"timestamp": "2026-11-01T10:00:01.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "why is this red?"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64(&bytes))},
        ]}}),
        serde_json::json!({"timestamp": "2026-11-01T10:00:02.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "A failing check."}]}}),
    ];
    let rollout: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&source, rollout).unwrap();
    let out =
        s.command().args(["import", &source.to_string_lossy(), "--json"]).output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["images_imported"], 1, "{report}");
    s.server.push(Reply::text("yes"));
    let out = s.run("exec", &["--last", "and now?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(image_parts(&s.server.last_request().unwrap().body), [b64(&bytes)]);
}

/// 1,000 images in one message were all stored, none sent, a 61 KB warning journaled twice
/// and the model told they were "covered by compaction". A message carries at most 20: the
/// first 20 go, the rest are refused in one sentence, never read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_carries_at_most_twenty_images() {
    let s = Setup::new(WIRES[0]).await;
    let mut args = Vec::new();
    for i in 0..25 {
        s.png(&format!("i{i}.png"), 8 + i, 8);
        args.push("--image".to_owned());
        args.push(format!("i{i}.png"));
    }
    args.push("look at them".to_owned());
    s.server.push(Reply::text("seen").with_usage(900, 4));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.run("exec", &args).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let request = s.server.last_request().unwrap();
    assert_eq!(image_parts(&request.body).len(), 20, "the first 20 are sent");
    let said = "5 images were not attached (i20.png, i21.png, i22.png, and 2 more): a message \
                carries at most 20 images; send them in another message";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    assert!(!request.raw.contains("covered by compaction"), "{}", request.raw);
    let blobs = s.session().with_extension("blobs");
    assert_eq!(std::fs::read_dir(blobs).unwrap().count(), 20, "the rest were never stored");
    let journal = std::fs::read_to_string(s.session()).unwrap();
    assert!(journal.matches("were not attached").count() <= 1, "journaled at most once");
    s.journal_check().await;
}
