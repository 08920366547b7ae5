//! Images in the composer (docs/images.md): a pasted path to an image file and Ctrl+V with an
//! image on the clipboard become an `@` mention of the file, sent with the message like one
//! chosen in the picker; an `@` mention of an image file typed by hand goes too. The engine
//! reads and stores the image when the message is sent, and says in an event what it attached.

use std::path::{Path, PathBuf};

use codewhale_protocol::ImageInfo;

use super::App;
use crate::tui::cells::{ImageCell, NoticeKind};
use crate::tui::event::Effect;

impl App {
    /// A paste: a path to an image file becomes a mention of it; `false` when the text is not
    /// one (it is pasted as text).
    pub(crate) fn paste_image_path(&mut self, text: &str) -> bool {
        let Some(path) = pasted_image(text, self.session.workspace.as_deref()) else {
            return false;
        };
        self.mention_image(path);
        true
    }

    /// Ctrl+V: the clipboard's image is read off the UI task.
    pub(crate) fn paste_clipboard_image(&mut self) {
        self.effects.push(Effect::PasteImage);
    }

    /// The clipboard's image as a file, or why there is none.
    pub(crate) fn clipboard_image(&mut self, result: Result<PathBuf, String>) {
        match result {
            Ok(path) => self.mention_image(path.to_string_lossy().into_owned()),
            Err(why) => self.notice(NoticeKind::Warning, why),
        }
    }

    fn mention_image(&mut self, path: String) {
        self.composer.paste(&format!("@{path} "));
        self.popups.mentions.push(path);
        self.after_edit();
    }

    /// The images the engine attached to the message just sent.
    pub(crate) fn images_attached(&mut self, images: Vec<ImageInfo>) {
        for image in images {
            self.transcript.push(ImageCell { image });
        }
    }

    /// Image files mentioned with `@` in `text` and typed by hand (not chosen in the picker),
    /// added to the message's mentions.
    pub(crate) fn typed_image_mentions(&self, text: &str, mentions: &mut Vec<String>) {
        let Some(workspace) = self.session.workspace.as_deref() else { return };
        for raw in codewhale_engine::images::mentioned(text, workspace) {
            if !mentions.contains(&raw) {
                mentions.push(raw);
            }
        }
    }
}

/// The image file a pasted text names, if it is one: one line, maybe quoted, maybe a
/// `file://` URL, maybe with backslash-escaped spaces (as terminals paste a dropped file).
pub(crate) fn pasted_image(text: &str, workspace: Option<&Path>) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .unwrap_or(text);
    let path = match unquoted.strip_prefix("file://") {
        Some(url) => url.replace("%20", " "),
        None => unquoted.replace("\\ ", " "),
    };
    if !codewhale_engine::images::looks_like_image(&path) {
        return None;
    }
    let file = resolve(&path, workspace)?;
    file.is_file().then(|| file.to_string_lossy().into_owned())
}

fn resolve(raw: &str, workspace: Option<&Path>) -> Option<PathBuf> {
    let path = match raw.strip_prefix("~/") {
        Some(rest) => dirs::home_dir()?.join(rest),
        None => PathBuf::from(raw),
    };
    if path.is_absolute() {
        Some(path)
    } else {
        workspace.map(|w| w.join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_path_to_an_image_is_recognised_in_the_forms_terminals_paste() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("my shot.png");
        std::fs::write(&shot, b"x").unwrap();
        let full = shot.to_string_lossy().into_owned();
        let escaped = full.replace(' ', "\\ ");
        let url = format!("file://{}", full.replace(' ', "%20"));
        for pasted in [full.clone(), format!("'{full}'"), escaped, url, format!("  {full}\n")] {
            assert_eq!(pasted_image(&pasted, None).as_deref(), Some(full.as_str()), "{pasted}");
        }
        let ws = Some(dir.path());
        assert_eq!(pasted_image("my shot.png", ws).as_deref(), Some(full.as_str()));
        assert_eq!(pasted_image("missing.png", ws), None, "a path to nothing is text");
        assert_eq!(pasted_image(&format!("{full}\nmore"), ws), None, "two lines are text");
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        assert_eq!(pasted_image("notes.txt", ws), None, "not an image");
    }
}
