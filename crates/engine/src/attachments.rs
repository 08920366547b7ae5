//! `@` attachments: files of the workspace the user mentioned in a message, read when the
//! message is sent and journaled right after it as synthetic user entries (`synthetic: true`,
//! `attachment: {path, bytes}`), so the model reads them with the turn. Compaction may prune
//! them like tool output; they are never made-up tool calls.
//!
//! A file outside the workspace, one of Codewhale's protected files, a directory, a binary
//! file or an unreadable one is not attached: the user gets a notice saying why and the
//! message goes on without it. A file over [`MAX_ATTACHMENT_BYTES`] is attached cut to that
//! size, with a line saying so.

use codewhale_journal::{Attachment, UserPayload};

use crate::paths;
use crate::session::Session;

/// The most of a file one attachment carries.
pub const MAX_ATTACHMENT_BYTES: usize = 256 * 1024;

/// The entry that attaches `raw` (a path as the user mentioned it), or why it cannot be.
pub fn attach(session: &Session, raw: &str) -> Result<UserPayload, String> {
    let workspace = session.workspace();
    let resolved = paths::resolve(workspace, raw)?;
    if !resolved.inside {
        return Err(format!("{raw} is outside the workspace"));
    }
    if session.protected().covers(workspace, &resolved.path) {
        return Err(format!("{raw} is one of Codewhale's own settings files"));
    }
    let meta = std::fs::metadata(&resolved.path).map_err(|e| format!("cannot read {raw}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{raw} is not a file"));
    }
    // Only what is kept is read: a file of gigabytes costs no more than the limit.
    let mut bytes = Vec::new();
    std::fs::File::open(&resolved.path)
        .and_then(|f| {
            std::io::Read::read_to_end(
                &mut std::io::Read::take(f, MAX_ATTACHMENT_BYTES as u64),
                &mut bytes,
            )
        })
        .map_err(|e| format!("cannot read {raw}: {e}"))?;
    let total = usize::try_from(meta.len()).unwrap_or(usize::MAX).max(bytes.len());
    let kept = &bytes[..];
    if kept.contains(&0) {
        return Err(format!("{raw} looks like a binary file"));
    }
    let text = match std::str::from_utf8(kept) {
        Ok(text) => text.to_owned(),
        // Cut inside a character at the size limit: keep the complete ones.
        Err(e) if e.error_len().is_none() => {
            String::from_utf8_lossy(&kept[..e.valid_up_to()]).into_owned()
        }
        Err(_) => return Err(format!("{raw} is not UTF-8 text")),
    };
    let text = session.redactor().redact(&text).into_owned();
    let shown = paths::display(workspace, &resolved.path);
    let mut body = format!("The user attached the file {shown} ({total} bytes):\n\n```\n{text}");
    if !body.ends_with('\n') {
        body.push('\n');
    }
    body.push_str("```");
    if total > MAX_ATTACHMENT_BYTES {
        body.push_str(&format!(
            "\n[only the first {MAX_ATTACHMENT_BYTES} of {total} bytes are attached; read the \
             file for the rest]"
        ));
    }
    let mut payload = UserPayload::synthetic(body);
    payload.attachment =
        Some(Attachment { path: shown, bytes: Some(total as u64), ..Attachment::default() });
    Ok(payload)
}
