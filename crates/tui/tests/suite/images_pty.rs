//! Images in the terminal UI end to end, in a pseudo-terminal: a pasted image path and Ctrl+V
//! with an image on the (X11) clipboard reach the request as image parts, and the transcript
//! shows each as its cell.

use std::os::unix::fs::PermissionsExt as _;

use codewhale_provider::test_support::{MockServer, Reply};

use super::pty::{mock_args, Pty};

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(w, h, image::Rgba([200, 10, 10, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img).write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// The image parts of the last request (Chat Completions).
fn image_urls(server: &MockServer) -> Vec<String> {
    let body = server.last_request().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .map(|p| p["image_url"]["url"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_path_and_the_clipboards_image_are_sent_and_shown() {
    use base64::Engine as _;
    let server = MockServer::start().await.unwrap();
    server.push_all([Reply::text("A red square."), Reply::text("A smaller one.")]);
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let shot = ws.path().join("shot.png");
    std::fs::write(&shot, png(64, 48)).unwrap();
    // A clipboard holding a PNG, as xclip reports it under X11.
    let bin = tempfile::tempdir().unwrap();
    let copied = bin.path().join("copied.png");
    std::fs::write(&copied, png(20, 10)).unwrap();
    let xclip = bin.path().join("xclip");
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in *TARGETS*) printf 'TARGETS\\nimage/png\\n' ;; *) cat '{}' ;; esac\n",
        copied.display()
    );
    std::fs::write(&xclip, script).unwrap();
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("PATH", path.as_str()), ("DISPLAY", ":0"), ("WAYLAND_DISPLAY", "")];
    let mut pty = Pty::spawn_in(&args, &home, &ws, false, &env);
    pty.wait_for("ready").await;

    // A dropped file arrives as a bracketed paste of its quoted path.
    pty.send(format!("\x1b[200~'{}'\x1b[201~", shot.display()).as_bytes());
    pty.wait_for("shot.png").await;
    pty.send(b"what is this?\r");
    pty.wait_for("A red square.").await;
    pty.wait_for("▣ shot.png 64×48 · 1 KB").await;
    let sent = base64::engine::general_purpose::STANDARD.encode(png(64, 48));
    assert_eq!(image_urls(&server), [format!("data:image/png;base64,{sent}")]);
    pty.wait_for("ready").await;

    // Ctrl+V: the clipboard's image.
    pty.send(b"\x16");
    pty.wait_for("clipboard-").await;
    pty.send(b"and this?\r");
    pty.wait_for("A smaller one.").await;
    pty.wait_for("20×10").await;
    let copied = base64::engine::general_purpose::STANDARD.encode(png(20, 10));
    let urls = image_urls(&server);
    assert_eq!(urls.last().unwrap(), &format!("data:image/png;base64,{copied}"), "{urls:?}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}
