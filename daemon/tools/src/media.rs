//! Images and PDFs a model can see: what a file is (by its bytes, never its name), how big,
//! and a picture scaled down to what every provider takes.
//!
//! One path for the user's attachments (`session/submit {parts}`) and for `read` of a picture
//! or PDF, so both say the same when something is too large or not an image at all.
//!
//! *Scaled, not refused*: a screenshot over a provider's limit (5 MB as base64, 8000 pixels a
//! side) is decoded, resized and encoded again (PNG stays PNG while it fits, else JPEG), on a
//! blocking thread, with the decoder's memory bounded. A PDF is never changed: over its limit it
//! is refused.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use stepper_engine::Media;
use stepper_protocol::attachment::{
    MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, human_size, looks_attachable, sniff,
};
use stepper_protocol::{Attachment, AttachmentKind};

/// The largest image a model is sent: 5 MB as base64 (Anthropic's limit; OpenAI takes more).
pub const SEND_IMAGE_BYTES: u64 = 3_750_000;
/// The longest side of an image a model is sent (Anthropic refuses larger).
pub const SEND_IMAGE_SIDE: u32 = 8000;
/// What the decoder may allocate for one picture.
const DECODE_ALLOC: u64 = 512 * 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MediaError {
    #[error(
        "{name} is not an image or a PDF stepper can show a model (PNG, JPEG, GIF, WebP or PDF, told by its bytes)"
    )]
    NotMedia { name: String },
    #[error(
        "{name} says it is {claimed} but its bytes are {found}: send it without a media type, or fix the type"
    )]
    WrongType {
        name: String,
        claimed: String,
        found: String,
    },
    #[error("{name} is {} — over the {} limit for {kind}s: attach a smaller file", human_size(*size), human_size(*limit))]
    TooLarge {
        name: String,
        kind: AttachmentKind,
        size: u64,
        limit: u64,
    },
    #[error("{name} could not be read as an image ({why}): attach it as PNG or JPEG")]
    Unreadable { name: String, why: String },
}

/// `bytes` as a model gets them: checked (`claimed` is the media type a client said, if any),
/// measured, a picture scaled down when over what providers take. Blocking: call it on a
/// blocking thread for large files.
pub fn prepare(name: &str, bytes: Vec<u8>, claimed: Option<&str>) -> Result<Media, MediaError> {
    let name = name.to_string();
    let Some((media_type, kind)) = sniff(&bytes) else {
        return Err(MediaError::NotMedia { name });
    };
    if let Some(claimed) = claimed
        && !claimed.eq_ignore_ascii_case(media_type)
        && !(claimed.eq_ignore_ascii_case("image/jpg") && media_type == "image/jpeg")
    {
        return Err(MediaError::WrongType {
            name,
            claimed: claimed.to_string(),
            found: media_type.to_string(),
        });
    }
    let size = bytes.len() as u64;
    let limit = match kind {
        AttachmentKind::Document => MAX_DOCUMENT_BYTES,
        _ => MAX_IMAGE_BYTES,
    };
    if size > limit {
        return Err(MediaError::TooLarge {
            name,
            kind,
            size,
            limit,
        });
    }
    match kind {
        AttachmentKind::Document => {
            let pages = pdf_pages(&bytes);
            Ok(media(name, media_type, bytes, None, pages, kind))
        }
        _ => {
            let (bytes, media_type, (width, height)) = fit(&name, bytes, media_type)?;
            Ok(media(
                name,
                media_type,
                bytes,
                Some((width, height)),
                None,
                kind,
            ))
        }
    }
}

/// A picture's size in pixels, read from its header (nothing is decoded); `None` for a PDF
/// or what does not read as a picture.
pub fn pixels(bytes: &[u8]) -> Option<(u32, u32)> {
    let (media_type, AttachmentKind::Image) = sniff(bytes)? else {
        return None;
    };
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes));
    reader.set_format(format_of(media_type));
    reader.into_dimensions().ok()
}

/// Whether a file named `name` may be an image or PDF (its bytes decide).
pub fn may_be_media(name: &str) -> bool {
    looks_attachable(name)
}

/// The sha256 of `bytes`, hex: an attachment's name in the store.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

fn media(
    name: String,
    media_type: &str,
    bytes: Vec<u8>,
    size: Option<(u32, u32)>,
    pages: Option<u32>,
    kind: AttachmentKind,
) -> Media {
    let about = Attachment {
        kind,
        media_type: media_type.to_string(),
        name,
        size: bytes.len() as u64,
        sha256: sha256_hex(&bytes),
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
        pages,
    };
    Media::new(about, Arc::from(bytes))
}

/// A picture as it is sent: its bytes, their media type, and its size in pixels.
type Fitted = (Vec<u8>, &'static str, (u32, u32));

/// The picture within what providers take, with its size in pixels.
fn fit(name: &str, bytes: Vec<u8>, media_type: &'static str) -> Result<Fitted, MediaError> {
    let unreadable = |why: String| MediaError::Unreadable {
        name: name.to_string(),
        why,
    };
    let reader = || {
        let mut reader = image::ImageReader::new(std::io::Cursor::new(&bytes[..]));
        reader.set_format(format_of(media_type));
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(DECODE_ALLOC);
        reader.limits(limits);
        reader
    };
    let (width, height) = reader()
        .into_dimensions()
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 <= SEND_IMAGE_BYTES
        && width <= SEND_IMAGE_SIDE
        && height <= SEND_IMAGE_SIDE
    {
        return Ok((bytes, media_type, (width, height)));
    }
    let picture = reader().decode().map_err(|e| unreadable(e.to_string()))?;
    // Fit the sides first; then, while the encoding is too large, take a quarter of the
    // pixels away at a time.
    let mut side = SEND_IMAGE_SIDE.min(width.max(height));
    for _ in 0..8 {
        let scaled = if width.max(height) > side {
            picture.resize(side, side, image::imageops::FilterType::Triangle)
        } else {
            picture.clone()
        };
        let (w, h) = (scaled.width(), scaled.height());
        let keep_png = media_type == "image/png" || scaled.color().has_alpha();
        let encoded = if keep_png {
            encode(&scaled, image::ImageFormat::Png)
                .filter(|png| png.len() as u64 <= SEND_IMAGE_BYTES)
                .map(|png| (png, "image/png"))
        } else {
            None
        };
        let encoded = match encoded {
            Some(e) => Some(e),
            None => encode(
                &image::DynamicImage::ImageRgb8(scaled.to_rgb8()),
                image::ImageFormat::Jpeg,
            )
            .map(|jpeg| (jpeg, "image/jpeg")),
        };
        if let Some((out, out_type)) = encoded
            && out.len() as u64 <= SEND_IMAGE_BYTES
        {
            return Ok((out, out_type, (w, h)));
        }
        side = side.saturating_mul(3) / 4;
        if side < 64 {
            break;
        }
    }
    Err(unreadable(
        "it stays over 5 MB however far it is scaled".into(),
    ))
}

fn encode(picture: &image::DynamicImage, format: image::ImageFormat) -> Option<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    picture.write_to(&mut out, format).ok()?;
    Some(out.into_inner())
}

fn format_of(media_type: &str) -> image::ImageFormat {
    match media_type {
        "image/jpeg" => image::ImageFormat::Jpeg,
        "image/gif" => image::ImageFormat::Gif,
        "image/webp" => image::ImageFormat::WebP,
        _ => image::ImageFormat::Png,
    }
}

/// A PDF's number of pages, counted by its page objects (`/Type /Page`, not `/Pages`);
/// `None` when none are found (a compressed object stream hides them).
fn pdf_pages(bytes: &[u8]) -> Option<u32> {
    let mut pages = 0u32;
    let needle = b"/Type";
    let mut i = 0;
    while let Some(at) = find(&bytes[i..], needle) {
        let mut j = i + at + needle.len();
        while bytes.get(j).is_some_and(|b| b.is_ascii_whitespace()) {
            j += 1;
        }
        if bytes[j..].starts_with(b"/Page") && !bytes[j..].starts_with(b"/Pages") {
            pages += 1;
        }
        i = j;
    }
    (pages > 0).then_some(pages)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let picture = image::RgbImage::from_fn(width, height, |x, y| {
            // Noise, so the encoding is not tiny.
            let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) as u8;
            image::Rgb([v, v.wrapping_mul(3), v.wrapping_add(y as u8)])
        });
        encode(
            &image::DynamicImage::ImageRgb8(picture),
            image::ImageFormat::Png,
        )
        .unwrap()
    }

    #[test]
    fn a_small_picture_is_kept_as_it_is_and_measured() {
        let bytes = png(40, 30);
        let media = prepare("a.png", bytes.clone(), Some("image/png")).unwrap();
        assert_eq!(media.data.as_deref(), Some(&bytes[..]));
        assert_eq!(media.about.media_type, "image/png");
        assert_eq!(
            (media.about.width, media.about.height),
            (Some(40), Some(30))
        );
        assert_eq!(media.about.sha256, sha256_hex(&bytes));
        assert_eq!(media.about.kind, AttachmentKind::Image);
    }

    #[test]
    fn a_picture_too_large_to_send_is_scaled_down() {
        let bytes = png(1500, 1500);
        assert!(bytes.len() as u64 > SEND_IMAGE_BYTES, "{}", bytes.len());
        let media = prepare("big.png", bytes, None).unwrap();
        assert!(media.about.size <= SEND_IMAGE_BYTES);
        // No alpha to keep: the same pixels as JPEG fit.
        assert_eq!(media.about.media_type, "image/jpeg");
        let media = prepare("wide.png", png(9000, 8), None).unwrap();
        assert_eq!(media.about.width, Some(SEND_IMAGE_SIDE));
        assert_eq!(media.about.media_type, "image/png");
    }

    #[test]
    fn what_is_not_an_image_or_pdf_is_refused_by_its_bytes() {
        let err = prepare("x.png", b"hello".to_vec(), None).unwrap_err();
        assert!(matches!(err, MediaError::NotMedia { .. }));
        let err = prepare("x.jpg", png(2, 2), Some("image/jpeg")).unwrap_err();
        assert!(err.to_string().contains("its bytes are image/png"), "{err}");
        let err = prepare("x.png", b"\x89PNG\r\n\x1a\nbroken".to_vec(), None).unwrap_err();
        assert!(matches!(err, MediaError::Unreadable { .. }), "{err}");
    }

    #[test]
    fn a_pdf_is_kept_whole_with_its_pages_counted() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >>\n2 0 obj << /Type /Page >>\n3 0 obj << /Type/Page >>\n%%EOF".to_vec();
        let media = prepare("spec.pdf", pdf.clone(), Some("application/pdf")).unwrap();
        assert_eq!(media.about.kind, AttachmentKind::Document);
        assert_eq!(media.about.pages, Some(2));
        assert_eq!(media.data.as_deref(), Some(&pdf[..]));
        let mut big = pdf;
        big.resize(MAX_DOCUMENT_BYTES as usize + 1, b' ');
        let err = prepare("big.pdf", big, None).unwrap_err();
        assert!(err.to_string().contains("over the 20.0 MB limit"), "{err}");
    }
}
