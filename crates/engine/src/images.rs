//! Images in user messages (docs/images.md): read an image file the user named, check it, scale
//! it when it is too big, and store it in the session's blob store as an `image` block.
//!
//! Invariants: only PNG, JPEG, GIF and WebP are taken, recognised by their bytes, never by the
//! file name; a file over [`MAX_IMAGE_BYTES`] is refused before it is read whole; an image over
//! [`MAX_SIDE`] pixels on a side is scaled to fit (re-encoded as PNG, or as JPEG when it was
//! one) and every other image is stored byte-for-byte in its own format; decoding runs under
//! allocation limits and only after the picture's declared size is checked (at most
//! [`MAX_PIXELS`]), so a small file that claims a huge picture is refused, not decoded or
//! scaled; a JPEG cut short (no end marker after its last scan) is refused, though its decoder
//! would fill the missing part with grey; the blob is on disk and synced before the block naming
//! it is returned, and read back only as the session's own file whose bytes hash to its name
//! ([`read_blob`]). A message carries at most [`MAX_PER_MESSAGE`] images.

use std::io::Cursor;
use std::path::Path;

use codewhale_journal::blob::write_blob;
use codewhale_journal::ImageBlock;
use image::{ImageFormat, ImageReader};

/// Images larger than this are refused.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// Images wider or taller than this are scaled down to fit.
pub const MAX_SIDE: u32 = 2048;
/// The most pixels an image may declare: checked before it is decoded or scaled.
pub const MAX_PIXELS: u64 = 40_000_000;
/// The most images one message carries; the rest are refused in one sentence.
pub const MAX_PER_MESSAGE: usize = 20;
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
    #[error(
        "it declares {0}×{1} pixels, over the 40 megapixels an image may have; scale it down \
         and attach it again"
    )]
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
    // Non-blocking and regular only: a FIFO swapped in since the check is refused, not waited on.
    let bytes = match crate::bounded::read_regular(path, MAX_IMAGE_BYTES) {
        Ok(Some((_, true))) => return Err(ImageError::TooBig(MAX_IMAGE_BYTES + 1)),
        Ok(Some((bytes, false))) => bytes,
        Ok(None) => return Err(ImageError::Read(std::io::ErrorKind::NotFound.into())),
        Err(_) => return Err(ImageError::NotAFile),
    };
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
    if width > DECODE_SIDE
        || height > DECODE_SIDE
        || u64::from(width) * u64::from(height) > MAX_PIXELS
    {
        return Err(ImageError::TooManyPixels(width, height));
    }
    if format == ImageFormat::Jpeg && !jpeg_ends(&bytes) {
        return Err(ImageError::Malformed {
            format: label,
            reason: "the file is cut short: it ends before its last scan does".into(),
        });
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

/// Whether a JPEG ends: an end-of-image marker (`FF D9`) after its last start-of-scan
/// (`FF DA`). Inside a scan every `FF` is followed by `00` or a restart marker, so a marker
/// there is real; a thumbnail's markers all come before the main scan.
fn jpeg_ends(bytes: &[u8]) -> bool {
    let marker = |code: u8| bytes.windows(2).rposition(|w| w == [0xFF, code]);
    match (marker(0xDA), marker(0xD9)) {
        (Some(scan), Some(end)) => end > scan,
        _ => false,
    }
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

/// Whether `block` is an imported image with its bytes inline (what [`import_inline`] stores).
pub fn is_inline(block: &codewhale_journal::Block) -> bool {
    matches!(block, codewhale_journal::Block::Opaque(raw)
        if serde_json::from_str::<serde_json::Value>(raw.get())
            .is_ok_and(|v| v["type"] == "image" && v["source"]["type"] == "base64"))
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

    /// A real PNG of `side`×`side` black pixels (8-bit grey), written row by row so making it
    /// costs no more than a row: `side` = 16384 gives a file of about 300 KB.
    pub(crate) fn pixel_bomb(side: u32) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, side, side);
            encoder.set_color(png::ColorType::Grayscale);
            encoder.set_compression(png::Compression::High);
            let mut writer = encoder.write_header().unwrap();
            let mut stream = writer.stream_writer().unwrap();
            let row = vec![0u8; side as usize];
            for _ in 0..side {
                std::io::Write::write_all(&mut stream, &row).unwrap();
            }
            stream.finish().unwrap();
            writer.finish().unwrap();
        }
        out
    }

    #[test]
    fn a_small_file_declaring_a_huge_picture_is_refused_before_decoding_or_scaling() {
        let bomb = pixel_bomb(16_384);
        assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
        let measured = codewhale_provider::test_support::peak::measure(
            module_path!(),
            "a_small_file_declaring_a_huge_picture_is_refused_before_decoding_or_scaling",
            || match from_bytes(bomb, "bomb.png".into()) {
                Ok(loaded) => format!("attached {}×{}", loaded.width, loaded.height),
                Err(e) => e.to_string(),
            },
        );
        let Some(peak) = measured.unwrap() else { return };
        // Decoding it would take 256 MiB and scaling it several times that.
        assert!(peak.growth < 32 << 20, "peak grew by {} MiB: {peak:?}", peak.growth >> 20);
        assert_eq!(
            peak.said,
            "it declares 16384×16384 pixels, over the 40 megapixels an image may have; scale it \
             down and attach it again"
        );
        // Just under the bound, a picture is still taken.
        assert!(from_bytes(pixel_bomb(6_000), "big.png".into()).is_ok());
    }

    #[test]
    fn an_imported_pixel_bomb_is_refused_the_same_way_and_never_stored() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(pixel_bomb(16_384));
        let raw = serde_json::json!({"type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": data}});
        let block: codewhale_journal::Block = serde_json::from_str(&raw.to_string()).unwrap();
        assert!(is_inline(&block));
        let stored = import_inline(&block, dir.path(), 1).unwrap();
        let codewhale_journal::Block::Text(text) = &stored else { panic!("{stored:?}") };
        assert!(text.text.contains("declares 16384×16384 pixels"), "{}", text.text);
        assert_eq!(std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0), 0);
    }

    /// A JPEG of `w`×`h` pixels.
    fn jpeg(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            let noise = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) as u8;
            image::Rgb([x as u8, noise, y as u8])
        });
        let mut out = Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img).write_to(&mut out, ImageFormat::Jpeg).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_jpeg_cut_short_is_refused() {
        // Most of its bytes are the scan, so each cut below falls inside it.
        let whole = jpeg(256, 256);
        assert!(from_bytes(whole.clone(), "whole.jpg".into()).is_ok());
        for keep in [whole.len() - 2, whole.len() * 2 / 3, whole.len() / 2] {
            let err = from_bytes(whole[..keep].to_vec(), "cut.jpg".into()).unwrap_err();
            assert!(err.to_string().starts_with("it is not a readable JPEG image"), "{err}");
            assert!(err.to_string().contains("cut short"), "{keep}: {err}");
        }
        // Bytes after the end marker (some cameras add a trailer) are not a cut.
        let mut trailer = whole.clone();
        trailer.extend_from_slice(b"trailer");
        assert!(from_bytes(trailer, "trailer.jpg".into()).is_ok());
    }

    #[test]
    fn a_blob_is_read_only_as_itself() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = from_bytes(png(8, 8), "dot.png".into()).unwrap();
        let block = store(dir.path(), &loaded).unwrap();
        assert_eq!(read_blob(dir.path(), &block.blob).unwrap(), loaded.bytes);
        // Swapped for a link to another file (a secret of the user's): refused, not sent.
        let secret = dir.path().join("shadow");
        std::fs::write(&secret, "root:$6$hash").unwrap();
        let path = dir.path().join(&block.blob);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&secret, &path).unwrap();
        let err = read_blob(dir.path(), &block.blob).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // Swapped for other bytes: refused.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, png(9, 9)).unwrap();
        let err = read_blob(dir.path(), &block.blob).unwrap_err();
        assert!(err.to_string().contains("do not match its name"), "{err}");
        // A FIFO: refused at once.
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, &path, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        assert!(read_blob(dir.path(), &block.blob).is_err());
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
