//! The user message a turn starts with: its text, the images it carries, and the files it
//! attaches (docs/images.md).
//!
//! Invariants: every image is stored in the blob store (synced) before the message's entry
//! that names it is appended — a kill between the two leaves an unused blob, never an entry
//! without its blob; an image that cannot be taken (missing, not an image, over 20 MB,
//! damaged) is named in one notice and the message goes on without it; an `@` mention of an
//! image file goes with the message as an image, every other mention is a text attachment. A
//! message carries at most [`images::MAX_PER_MESSAGE`] images: those past it are not read,
//! and are refused together in one sentence.

use codewhale_journal::{Block, UserPayload};
use codewhale_provider::ProviderError;

use super::TurnCtx;
use crate::images;
use codewhale_protocol::{Event, ImageInfo, NoticeLevel};

/// What the user sent.
#[derive(Debug, Clone, Default)]
pub struct UserMessage {
    pub text: String,
    /// `@` mentions: files of the workspace (text) or images.
    pub attachments: Vec<String>,
    /// Image files named apart (`--image`, a pasted path, the clipboard).
    pub images: Vec<String>,
    /// Text the engine sends in the user's place ("Carry out the plan."): journaled
    /// `synthetic`, not as the user's words.
    pub synthetic: bool,
}

/// The message's entry and what goes with it.
pub(super) struct Taken {
    pub payload: UserPayload,
    /// The images it carries, for the transcript.
    pub images: Vec<ImageInfo>,
    /// The text attachments, journaled after it.
    pub attachments: Vec<String>,
}

/// Reads and stores the message's images and builds its entry (module docs).
pub(super) fn take(ctx: &mut TurnCtx<'_>, message: UserMessage) -> Taken {
    let UserMessage { text, attachments, images: named, synthetic } = message;
    let (mentioned, attachments): (Vec<String>, Vec<String>) =
        attachments.into_iter().partition(|raw| images::looks_like_image(raw));
    let mut payload =
        if synthetic { UserPayload::synthetic(text) } else { UserPayload::text(text) };
    let mut shown = Vec::new();
    let dir = ctx.session.blob_dir();
    let all: Vec<(&String, &str)> =
        named.iter().map(|r| (r, "")).chain(mentioned.iter().map(|r| (r, "@"))).collect();
    let (taken, past) = all.split_at(all.len().min(images::MAX_PER_MESSAGE));
    if !past.is_empty() {
        ctx.emit(Event::Notice { level: NoticeLevel::Warning, message: too_many(past) });
    }
    for &(raw, at) in taken {
        match one(ctx, raw, &dir) {
            Ok((block, scaled)) => {
                shown.push(images::info(&block, scaled));
                payload.content.push(Block::Image(block));
            }
            Err(reason) => ctx.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("{at}{raw} was not attached: {reason}"),
            }),
        }
    }
    if !shown.is_empty() {
        // The blobs are synced; the entry naming them is not written yet.
        crate::pause_point::reached("image:blob");
    }
    Taken { payload, images: shown, attachments }
}

/// The one sentence that refuses the images past the bound, naming the first few.
fn too_many(past: &[(&String, &str)]) -> String {
    const NAMED: usize = 3;
    let name = |raw: &str| {
        let path = std::path::Path::new(raw);
        path.file_name().map_or_else(|| raw.to_owned(), |n| n.to_string_lossy().into_owned())
    };
    let mut names: Vec<String> =
        past.iter().take(NAMED).map(|(raw, at)| format!("{at}{}", name(raw))).collect();
    if past.len() > NAMED {
        names.push(format!("and {} more", past.len() - NAMED));
    }
    format!(
        "{} images were not attached ({}): a message carries at most {} images; send them in \
         another message",
        past.len(),
        names.join(", "),
        images::MAX_PER_MESSAGE
    )
}

fn one(
    ctx: &TurnCtx<'_>,
    raw: &str,
    dir: &std::path::Path,
) -> Result<(codewhale_journal::ImageBlock, bool), String> {
    let workspace = ctx.session.workspace();
    // Any file the user names, the clipboard's copies under the Codewhale home included: only
    // a real image is taken, so no settings file can go this way.
    let resolved = crate::paths::resolve(workspace, raw)?;
    let loaded = images::load(&resolved.path).map_err(|e| e.to_string())?;
    let block = images::store(dir, &loaded).map_err(|e| e.to_string())?;
    Ok((block, loaded.scaled))
}

/// The model refused the request's images: they are left out of its requests from now on
/// (each named in one line), and the user is told once.
pub(super) fn images_refused(ctx: &mut TurnCtx<'_>, error: &ProviderError) {
    let model = ctx.session.model().to_owned();
    ctx.session.refuse_images(model.clone());
    ctx.emit(Event::Notice {
        level: NoticeLevel::Warning,
        message: format!(
            "{model} does not take images (the server said: {error}); the request is sent \
             again with each image named in one line instead — switch to a model that reads \
             images (/model) to show them"
        ),
    });
}
