//! Ctrl+V with an image on the system clipboard: the image is read through the platform's own
//! clipboard command, checked like any image, and kept as a file under the Codewhale home
//! (`clipboard/`), which the message then names like a pasted path (docs/images.md).
//!
//! Commands, in order: `wl-paste` under Wayland, `xclip` (then `xsel` cannot give images, so
//! it is not tried) under X11, `pngpaste` on macOS. Where none is there, or the clipboard holds
//! no image, one sentence says so and what to do instead. Nothing is written unless an image
//! was read and checked.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where to look for the clipboard commands and which display is there.
#[derive(Debug, Clone, Default)]
pub struct Platform {
    /// `PATH`.
    pub path: Option<OsString>,
    pub wayland: bool,
    pub x11: bool,
    pub macos: bool,
}

impl Platform {
    /// This process's platform.
    pub fn current() -> Platform {
        Platform {
            path: std::env::var_os("PATH"),
            wayland: std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty()),
            x11: std::env::var_os("DISPLAY").is_some_and(|v| !v.is_empty()),
            macos: cfg!(target_os = "macos"),
        }
    }

    fn find(&self, name: &str) -> Option<PathBuf> {
        let path = self.path.as_ref()?;
        std::env::split_paths(path).map(|dir| dir.join(name)).find(|p| p.is_file())
    }
}

/// Reads the clipboard's image and stores it under `home`; the stored file's path, or why
/// there is none (one sentence).
pub fn paste_image(platform: &Platform, home: &Path) -> Result<PathBuf, String> {
    let bytes = read_image(platform)?;
    let name = format!("clipboard-{}.png", chrono::Local::now().format("%Y%m%d-%H%M%S-%3f"));
    let image = codewhale_engine::images::from_bytes(bytes, name.clone())
        .map_err(|e| format!("the clipboard's image was not attached: {e}"))?;
    let dir = home.join("clipboard");
    codewhale_engine::private::create_dir_all(&dir)
        .map_err(|e| format!("cannot keep the clipboard's image in {}: {e}", dir.display()))?;
    let path = dir.join(format!("{}.{}", name.trim_end_matches(".png"), image.ext));
    codewhale_engine::replace::replace_file(
        &path,
        codewhale_engine::replace::PRIVATE,
        &image.bytes,
    )
    .map_err(|e| format!("cannot keep the clipboard's image in {}: {e}", dir.display()))?;
    Ok(path)
}

/// The clipboard's image bytes (module docs).
fn read_image(platform: &Platform) -> Result<Vec<u8>, String> {
    let tried = if platform.wayland {
        platform.find("wl-paste").map(|cmd| {
            let types = run(&cmd, &["--list-types"])?;
            let kind = image_type(&types).ok_or_else(no_image)?;
            run(&cmd, &["--no-newline", "--type", &kind])
        })
    } else {
        None
    };
    let tried = tried.or_else(|| {
        (platform.x11 && !platform.wayland).then(|| platform.find("xclip")).flatten().map(|cmd| {
            let types = run(&cmd, &["-selection", "clipboard", "-t", "TARGETS", "-o"])?;
            let kind = image_type(&types).ok_or_else(no_image)?;
            run(&cmd, &["-selection", "clipboard", "-t", &kind, "-o"])
        })
    });
    let tried = tried.or_else(|| {
        platform.macos.then(|| platform.find("pngpaste")).flatten().map(|cmd| run(&cmd, &["-"]))
    });
    match tried {
        Some(Ok(bytes)) if bytes.is_empty() => Err(no_image()),
        Some(result) => result,
        None => Err(unavailable(platform)),
    }
}

fn no_image() -> String {
    "the clipboard holds no image; copy one first, or paste the image file's path".into()
}

fn unavailable(platform: &Platform) -> String {
    let needs = if platform.wayland {
        "wl-paste (wl-clipboard)"
    } else if platform.x11 {
        "xclip"
    } else if platform.macos {
        "pngpaste (brew install pngpaste)"
    } else {
        return "no clipboard with images is reachable here (no display); paste the image \
                file's path or type @ and its name instead"
            .into();
    };
    format!(
        "reading an image from the clipboard needs {needs}, which is not installed; install it, \
         or paste the image file's path instead"
    )
}

/// The first image type a clipboard offers (PNG first).
fn image_type(types: &[u8]) -> Option<String> {
    let types = String::from_utf8_lossy(types);
    let offered: Vec<&str> = types.lines().map(str::trim).collect();
    ["image/png", "image/jpeg", "image/gif", "image/webp"]
        .iter()
        .find(|t| offered.contains(t))
        .map(|t| (*t).to_owned())
}

fn run(cmd: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cmd.display()))?;
    if !out.status.success() {
        return Err(no_image());
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// A folder holding a fake `xclip` that offers `types` and prints the file `image`.
    fn fake_xclip(types: &str, image: &Path) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "#!/bin/sh\ncase \"$*\" in *TARGETS*) printf '{types}' ;; *) cat '{}' ;; esac\n",
            image.display()
        );
        let path = dir.path().join("xclip");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn png() -> Vec<u8> {
        let img = image::RgbaImage::from_pixel(64, 48, image::Rgba([1, 2, 3, 255]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgba8(img).write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn an_image_on_the_x11_clipboard_is_kept_as_a_file() {
        let home = tempfile::tempdir().unwrap();
        let source = home.path().join("source.png");
        std::fs::write(&source, png()).unwrap();
        let bin = fake_xclip("TARGETS\\nimage/png\\ntext/plain\\n", &source);
        let platform = Platform { path: Some(bin.path().into()), x11: true, ..Platform::default() };
        let kept = paste_image(&platform, home.path()).unwrap();
        assert!(kept.starts_with(home.path().join("clipboard")));
        assert_eq!(std::fs::read(&kept).unwrap(), png());
    }

    #[test]
    fn a_clipboard_without_an_image_or_without_a_command_says_what_to_do() {
        let home = tempfile::tempdir().unwrap();
        let text = home.path().join("text");
        std::fs::write(&text, "hello").unwrap();
        let bin = fake_xclip("TARGETS\\ntext/plain\\n", &text);
        let platform = Platform { path: Some(bin.path().into()), x11: true, ..Platform::default() };
        let err = paste_image(&platform, home.path()).unwrap_err();
        assert!(err.starts_with("the clipboard holds no image"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let platform =
            Platform { path: Some(empty.path().into()), x11: true, ..Platform::default() };
        let err = paste_image(&platform, home.path()).unwrap_err();
        assert!(err.contains("needs xclip, which is not installed"), "{err}");
        let err = paste_image(&Platform::default(), home.path()).unwrap_err();
        assert!(err.contains("no display"), "{err}");
        assert!(!home.path().join("clipboard").exists(), "nothing written without an image");
    }
}
