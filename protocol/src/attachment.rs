//! Images and documents in an input.
//!
//! A client sends an input as [`InputPart`]s: text, images (PNG, JPEG, GIF, WebP) and
//! documents (PDF), each as bytes (base64) or as a path the daemon reads inside the session's
//! folder. The daemon stores each attachment's bytes once in the session, under its sha256,
//! and events, contexts and exports name it by an [`Attachment`]: never its bytes again
//! (`session/attachment` hands them out).
//!
//! The limits are here so clients and the daemon say the same: [`MAX_PARTS`],
//! [`MAX_IMAGE_BYTES`], [`MAX_DOCUMENT_BYTES`], [`MAX_INPUT_BYTES`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// At most this many attachments in one input.
pub const MAX_PARTS: usize = 20;
/// An image's largest size, as sent. The daemon scales a larger picture down to what
/// providers take (5 MB, 8000 px a side) before a model sees it.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// A document's largest size (providers take 32 MB requests; base64 adds a third).
pub const MAX_DOCUMENT_BYTES: u64 = 20 * 1024 * 1024;
/// The attachments of one input together, as sent (it fits a 32 MiB request as base64).
pub const MAX_INPUT_BYTES: u64 = 20 * 1024 * 1024;

open_enum! {
    /// What an attachment holds.
    pub enum AttachmentKind {
        /// A picture: PNG, JPEG, GIF or WebP.
        Image = "image",
        /// A PDF.
        Document = "document",
    }
}

/// An attachment as events, contexts and exports name it; its bytes are stored once in the
/// session, under `sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub kind: AttachmentKind,
    /// `image/png`, `image/jpeg`, `image/gif`, `image/webp` or `application/pdf`.
    pub media_type: String,
    /// The file's name, for people (`shot.png`; `clipboard.png` for a pasted image).
    pub name: String,
    /// Its size in bytes, as stored (after any scaling).
    pub size: u64,
    /// The sha256 of its bytes, hex: what `session/attachment` takes.
    pub sha256: String,
    /// An image's size in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// A document's number of pages, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
}

impl Attachment {
    /// How the composer and the transcript show it: `[image: shot.png 120 KB]`.
    pub fn label(&self) -> String {
        format!("[{}: {} {}]", self.kind, self.name, human_size(self.size))
    }
}

/// `512 B`, `120 KB`, `2.1 MB`.
pub fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        // Tenths of a megabyte, in integers (no float casts).
        let tenths = (bytes * 10).div_ceil(1024 * 1024);
        format!("{}.{} MB", tenths / 10, tenths % 10)
    }
}

/// One part of an input as a client sends it. Text parts are joined (with a blank line) into
/// the input's text; the others are its attachments, in order, which the model sees before
/// the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum InputPart {
    Text {
        text: String,
    },
    /// An image: `data` (base64) or `path`.
    Image {
        #[serde(flatten)]
        source: PartSource,
    },
    /// A PDF: `data` (base64) or `path`.
    Document {
        #[serde(flatten)]
        source: PartSource,
    },
}

/// Where an attachment's bytes come from: exactly one of `data` and `path`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartSource {
    /// The bytes, base64 (standard alphabet, padded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// A file the daemon reads: absolute, or relative to the session's folder, and inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The media type; the daemon checks it against the bytes, and finds it when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// A name for people (the path's file name when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl InputPart {
    /// An image part from bytes.
    pub fn image(name: impl Into<String>, data: String) -> InputPart {
        InputPart::Image {
            source: PartSource {
                data: Some(data),
                name: Some(name.into()),
                ..PartSource::default()
            },
        }
    }

    /// A part for a file's bytes: an image or a document by what the bytes are; `None` for
    /// anything else.
    pub fn of_bytes(name: impl Into<String>, bytes: &[u8], base64: String) -> Option<InputPart> {
        let (media_type, kind) = sniff(bytes)?;
        let source = PartSource {
            data: Some(base64),
            media_type: Some(media_type.to_string()),
            name: Some(name.into()),
            path: None,
        };
        Some(match kind {
            AttachmentKind::Document => InputPart::Document { source },
            _ => InputPart::Image { source },
        })
    }
}

/// What `bytes` are, by their first bytes (never by a name): the media type and kind of a
/// PNG, JPEG, GIF, WebP or PDF; `None` for anything else.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, AttachmentKind)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(("image/png", AttachmentKind::Image))
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(("image/jpeg", AttachmentKind::Image))
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(("image/gif", AttachmentKind::Image))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(("image/webp", AttachmentKind::Image))
    } else if bytes.starts_with(b"%PDF-") {
        Some(("application/pdf", AttachmentKind::Document))
    } else {
        None
    }
}

/// Whether a file name looks like something [`sniff`] takes (for completion and `@` words;
/// the bytes decide).
pub fn looks_attachable(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_say_what_a_file_is() {
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n...."),
            Some(("image/png", AttachmentKind::Image))
        );
        assert_eq!(
            sniff(b"\xFF\xD8\xFF\xE0"),
            Some(("image/jpeg", AttachmentKind::Image))
        );
        assert_eq!(
            sniff(b"GIF89a.."),
            Some(("image/gif", AttachmentKind::Image))
        );
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(("image/webp", AttachmentKind::Image))
        );
        assert_eq!(
            sniff(b"%PDF-1.7\n"),
            Some(("application/pdf", AttachmentKind::Document))
        );
        assert_eq!(sniff(b"<svg"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn parts_read_as_the_protocol_documents_them() {
        let parts: Vec<InputPart> = serde_json::from_value(serde_json::json!([
            {"type": "text", "text": "what is wrong here?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mediaType": "image/png", "name": "a.png"},
            {"type": "document", "path": "spec.pdf"}
        ]))
        .unwrap();
        assert_eq!(
            parts[1],
            InputPart::Image {
                source: PartSource {
                    data: Some("iVBORw0KGgo=".into()),
                    media_type: Some("image/png".into()),
                    name: Some("a.png".into()),
                    path: None,
                }
            }
        );
        assert!(
            matches!(&parts[2], InputPart::Document { source } if source.path.as_deref() == Some("spec.pdf"))
        );
    }

    #[test]
    fn sizes_read_for_people() {
        assert_eq!(human_size(900), "900 B");
        assert_eq!(human_size(120 * 1024), "120 KB");
        assert_eq!(human_size(2 * 1024 * 1024 + 100 * 1024), "2.1 MB");
        let a = Attachment {
            kind: AttachmentKind::Image,
            media_type: "image/png".into(),
            name: "shot.png".into(),
            size: 120 * 1024,
            sha256: "ab".into(),
            width: Some(10),
            height: Some(10),
            pages: None,
        };
        assert_eq!(a.label(), "[image: shot.png 120 KB]");
    }
}
