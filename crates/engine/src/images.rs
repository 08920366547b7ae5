//! Images in user messages (docs/images.md): read an image file the user named, check it, scale
//! it when it is too big, and store it in the session's blob store as an `image` block.
//!
//! Invariants: only PNG, JPEG, GIF and WebP are taken, recognised by their bytes, never by the
//! file name; a file over [`MAX_IMAGE_BYTES`] is refused before it is read whole; an image over
//! [`MAX_SIDE`] pixels on a side is scaled to fit (re-encoded as PNG, or as JPEG when it was
//! one) and every other image is stored byte-for-byte in its own format; decoding runs under
//! allocation limits, so a small file that claims a huge picture is refused, not decoded; the
//! blob is on disk and synced before the block naming it is returned.

use std::io::{Cursor, Read as _};
use std::path::Path;

use codewhale_journal::blob::write_blob;
use codewhale_journal::ImageBlock;
use image::{ImageFormat, ImageReader};

/// Images larger than this are refused.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// Images wider or taller than this are scaled down to fit.
pub const MAX_SIDE: u32 = 2048;
/// The most memory decoding one image may take.
const DECODE_ALLOC: u64 = 512 * 1024 * 1024;
/// Pictures claiming more pixels a side than this are refused without decoding.
const DECODE_SIDE: u32 = 16_384;

/// Why an image was not attached; each reads as one sentence after the file's name.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("it is not a file")]
    NotAFile,
    #[error(
        "it is {} MB, over the 20 MB an image may be; crop it or save it smaller and attach it again",
        mb(*.0)
    )]
    TooBig(u64),
    #[error("it is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
    #[error(
        "it is not a readable {format} image ({reason}); save it again and attach the new file"
    )]
    Malformed { format: &'static str, reason: String },
    #[error("it claims {0}×{1} pixels, more than an image may be decoded at; scale it down first")]
    TooManyPixels(u32, u32),
    #[error("it could not be scaled down: {0}")]
    Scale(String),
    #[error("it could not be stored in the session: {0}")]
    Store(std::io::Error),
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// An image read and checked, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedImage {
    pub bytes: Vec<u8>,
    pub media_type: &'static str,
    pub ext: &'static str,
    pub width: u32,
    pub height: u32,
    /// The name shown for it (the file's name).
    pub name: String,
    /// Whether it was scaled down to fit [`MAX_SIDE`].
    pub scaled: bool,
}

/// Reads the image at `path` and checks it (module docs).
pub fn load(path: &Path) -> Result<LoadedImage, ImageError> {
    let meta = std::fs::metadata(path).map_err(ImageError::Read)?;
    if !meta.is_file() {
        return Err(ImageError::NotAFile);
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(ImageError::Read)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig(bytes.len() as u64));
    }
    let name =
        path.file_name().map_or_else(|| "image".to_owned(), |n| n.to_string_lossy().into_owned());
    from_bytes(bytes, name)
}

/// Checks `bytes` as an image called `name` (module docs).
pub fn from_bytes(bytes: Vec<u8>, name: String) -> Result<LoadedImage, ImageError> {
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig(bytes.len() as u64));
    }
    let format = image::guess_format(&bytes).map_err(|_| ImageError::NotAnImage)?;
    let (media_type, ext, label) = match format {
        ImageFormat::Png => ("image/png", "png", "PNG"),
        ImageFormat::Jpeg => ("image/jpeg", "jpg", "JPEG"),
        ImageFormat::Gif => ("image/gif", "gif", "GIF"),
        ImageFormat::WebP => ("image/webp", "webp", "WebP"),
        _ => return Err(ImageError::NotAnImage),
    };
    let malformed =
        |e: image::ImageError| ImageError::Malformed { format: label, reason: e.to_string() };
    let (width, height) = ImageReader::with_format(Cursor::new(&bytes), format)
        .into_dimensions()
        .map_err(malformed)?;
    if width > DECODE_SIDE || height > DECODE_SIDE {
        return Err(ImageError::TooManyPixels(width, height));
    }
    // Decoded whole, so a file cut short or damaged is refused here rather than by the model.
    let mut reader = ImageReader::with_format(Cursor::new(&bytes), format);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(DECODE_ALLOC);
    limits.max_image_width = Some(DECODE_SIDE);
    limits.max_image_height = Some(DECODE_SIDE);
    reader.limits(limits);
    let decoded = reader.decode().map_err(malformed)?;
    if width.max(height) <= MAX_SIDE {
        return Ok(LoadedImage { bytes, media_type, ext, width, height, name, scaled: false });
    }
    let scaled = decoded.resize(MAX_SIDE, MAX_SIDE, image::imageops::FilterType::Triangle);
    let (out_format, media_type, ext) = match format {
        ImageFormat::Jpeg => (ImageFormat::Jpeg, "image/jpeg", "jpg"),
        _ => (ImageFormat::Png, "image/png", "png"),
    };
    let scaled = match out_format {
        // JPEG has no alpha channel.
        ImageFormat::Jpeg => image::DynamicImage::ImageRgb8(scaled.to_rgb8()),
        _ => scaled,
    };
    let mut out = Cursor::new(Vec::new());
    scaled.write_to(&mut out, out_format).map_err(|e| ImageError::Scale(e.to_string()))?;
    Ok(LoadedImage {
        bytes: out.into_inner(),
        media_type,
        ext,
        width: scaled.width(),
        height: scaled.height(),
        name,
        scaled: true,
    })
}

/// The bytes of blob `name` in the blob folder `dir`, read as one of the session's own files
/// (never through a link, never a FIFO, at most [`MAX_IMAGE_BYTES`]) and only if they hash to
/// the name: a blob swapped for a link to another file, or for other bytes, is never sent.
pub fn read_blob(dir: &Path, name: &str) -> std::io::Result<Vec<u8>> {
    let path = codewhale_journal::blob::blob_path(dir, name)?;
    let bytes = crate::bounded::read_own(&path, MAX_IMAGE_BYTES)?
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    if !codewhale_journal::blob::names_bytes(name, &bytes) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "its bytes do not match its name (the blob store was changed)",
        ));
    }
    Ok(bytes)
}

/// Stores `image` in the blob folder `dir` and returns the block that names it; the blob is
/// synced before this returns.
pub fn store(dir: &Path, image: &LoadedImage) -> Result<ImageBlock, ImageError> {
    let blob = write_blob(dir, &image.bytes, image.ext).map_err(ImageError::Store)?;
    Ok(ImageBlock {
        blob,
        media_type: image.media_type.to_owned(),
        width: image.width,
        height: image.height,
        bytes: image.bytes.len() as u64,
        name: image.name.clone(),
        extra: Default::default(),
    })
}

/// An imported user message's image with its bytes inline (`{"type":"image","source":
/// {"type":"base64",...}}`, as the import conversion hands it over) stored in the blob folder
/// `dir`: its image block, or a one-line text saying why it could not be kept. `None` for
/// any other block.
pub fn import_inline(
    block: &codewhale_journal::Block,
    dir: &Path,
    n: u64,
) -> Option<codewhale_journal::Block> {
    use base64::Engine as _;
    use codewhale_journal::Block;
    #[derive(serde::Deserialize)]
    struct Source {
        media_type: String,
        data: String,
    }
    #[derive(serde::Deserialize)]
    struct Inline {
        #[serde(rename = "type")]
        ty: String,
        source: Source,
    }
    let Block::Opaque(raw) = block else { return None };
    let inline: Inline =
        serde_json::from_str(raw.get()).ok().filter(|i: &Inline| i.ty == "image")?;
    let media = inline.source.media_type;
    let kept = base64::engine::general_purpose::STANDARD
        .decode(inline.source.data.trim())
        .map_err(|e| format!("its data is not base64 ({e})"))
        .and_then(|bytes| {
            let ext = media.rsplit('/').next().unwrap_or("png");
            from_bytes(bytes, format!("imported-{n}.{ext}")).map_err(|e| e.to_string())
        })
        .and_then(|image| store(dir, &image).map_err(|e| e.to_string()));
    Some(match kept {
        Ok(image) => Block::Image(image),
        Err(reason) => Block::text(format!("[image ({media}) not imported: {reason}]")),
    })
}

/// The image files `text` mentions with `@` (`@shot.png`; relative to `workspace`, absolute
/// or under `~/`) that exist, as written, without repeats.
pub fn mentioned(text: &str, workspace: &Path) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(raw) = word.strip_prefix('@') else { continue };
        let raw = raw.trim_end_matches([',', ';', ')', '?', '!', ':']);
        if found.iter().any(|f| f == raw) || !looks_like_image(raw) {
            continue;
        }
        let exists = crate::paths::resolve(workspace, raw).is_ok_and(|r| r.path.is_file());
        if exists {
            found.push(raw.to_owned());
        }
    }
    found
}

/// How the front end shows a stored image; `scaled` when it was scaled down on the way in.
pub fn info(block: &ImageBlock, scaled: bool) -> codewhale_protocol::ImageInfo {
    codewhale_protocol::ImageInfo {
        name: block.name.clone(),
        width: block.width,
        height: block.height,
        bytes: block.bytes,
        scaled,
    }
}

/// Whether `path` names an image by its extension: how an `@` mention is told apart from a
/// text attachment before the file is read.
pub fn looks_like_image(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"].iter().any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG of `w`×`h` pixels.
    pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba([x as u8, y as u8, 90, 255]));
        let mut out = Cursor::new(Vec::new());
        image::DynamicImage::ImageRgba8(img).write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_small_image_is_kept_byte_for_byte_in_its_format() {
        let bytes = png(64, 48);
        let loaded = from_bytes(bytes.clone(), "shot.png".into()).unwrap();
        assert_eq!((loaded.width, loaded.height, loaded.media_type), (64, 48, "image/png"));
        assert_eq!(loaded.bytes, bytes);
        assert!(!loaded.scaled);
    }

    #[test]
    fn an_image_over_2048_pixels_is_scaled_to_fit() {
        let loaded = from_bytes(png(3000, 1000), "wide.png".into()).unwrap();
        assert!(loaded.scaled);
        assert_eq!((loaded.width, loaded.height), (2048, 683));
        let again = from_bytes(loaded.bytes, "wide.png".into()).unwrap();
        assert_eq!(
            (again.width, again.height),
            (2048, 683),
            "the stored bytes are the scaled image"
        );
    }

    #[test]
    fn a_malformed_or_foreign_file_is_refused_with_a_reason() {
        let mut cut = png(64, 48);
        cut.truncate(cut.len() / 2);
        let err = from_bytes(cut, "cut.png".into()).unwrap_err();
        assert!(matches!(err, ImageError::Malformed { format: "PNG", .. }), "{err}");
        let err = from_bytes(b"just some text".to_vec(), "notes.png".into()).unwrap_err();
        assert_eq!(err.to_string(), "it is not a PNG, JPEG, GIF or WebP image");
    }

    #[test]
    fn a_file_over_20_mb_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.png");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let err = load(&path).unwrap_err();
        assert!(err.to_string().starts_with("it is 20.0 MB, over the 20 MB"), "{err}");
    }

    #[test]
    fn a_stored_image_is_named_by_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = from_bytes(png(8, 8), "dot.png".into()).unwrap();
        let block = store(dir.path(), &loaded).unwrap();
        assert!(block.blob.ends_with(".png"));
        assert_eq!(std::fs::read(dir.path().join(&block.blob)).unwrap(), loaded.bytes);
        assert_eq!(block.bytes, loaded.bytes.len() as u64);
        assert_eq!(info(&block, false).name, "dot.png");
    }
}
