//! What the model gets of an MCP server's content: text as it is, pictures and PDFs (a
//! browser's screenshot, an embedded resource's blob) as media it sees, fitted to what
//! providers take by the same path as `read` and the user's attachments, the rest described.
//!
//! *Described, never dropped*: a picture that cannot be shown (not PNG, JPEG, GIF, WebP or
//! PDF by its bytes, too large, past the per-result budget) becomes a line saying what it was
//! and why it is not shown, so the model knows it missed something.

use base64::Engine as _;
use serde_json::Value;
use stepper_engine::Media;
use stepper_engine::tool::ToolOutput;
use stepper_protocol::attachment::{MAX_INPUT_BYTES, MAX_PARTS, sniff};
use stepper_tools::media::prepare;

/// What one result may show the model: as many pictures and documents, and as many bytes of
/// them, as one input of the user's may hold.
pub(crate) struct Budget {
    parts: usize,
    bytes: u64,
}

impl Budget {
    pub(crate) fn new() -> Budget {
        Budget {
            parts: MAX_PARTS,
            bytes: MAX_INPUT_BYTES,
        }
    }
}

/// What the model gets of a tool's result: its text, each picture or PDF as media with a
/// label where it stood, other content described, structured content as JSON when there is
/// nothing else. `tool` names the pictures (`screenshot-1.png`). Blocking: a large picture is
/// scaled down.
pub fn tool_output(result: &rmcp::model::CallToolResult, tool: &str) -> ToolOutput {
    let mut budget = Budget::new();
    let mut parts = Vec::new();
    let mut media = Vec::new();
    for (n, block) in result.content.iter().enumerate() {
        let value = serde_json::to_value(block).unwrap_or_default();
        let kind = value["type"].as_str().unwrap_or("");
        match kind {
            "text" => parts.push(value["text"].as_str().unwrap_or("").to_string()),
            "image" => {
                let mime = value["mimeType"].as_str().unwrap_or("unknown type");
                let data = value["data"].as_str().unwrap_or("");
                let name = format!("{tool}-{}.{}", n + 1, extension(mime));
                parts.push(match shown(&name, data, &mut budget) {
                    Ok(m) => {
                        let label = m.about.label();
                        media.push(m);
                        label
                    }
                    Err(why) => format!(
                        "[image: {mime}, {} bytes of base64, not shown: {why}]",
                        data.len()
                    ),
                });
            }
            "audio" => parts.push(format!(
                "[audio: {}, {} bytes of base64]",
                value["mimeType"].as_str().unwrap_or("unknown type"),
                value["data"].as_str().map_or(0, str::len)
            )),
            "resource_link" => parts.push(format!(
                "[resource link: {}{}]",
                value["uri"].as_str().unwrap_or(""),
                value["name"]
                    .as_str()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )),
            "resource" => {
                let (part, m) = resource(&value["resource"], &mut budget);
                parts.push(part);
                media.extend(m);
            }
            _ => parts.push(value.to_string()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    ToolOutput {
        media,
        ..ToolOutput::text(parts.join("\n"))
    }
}

/// One resource's contents (`{uri, mimeType?, text | blob}`) as the model gets it: its text
/// under its URI, a picture or PDF blob as media with a label, another blob described.
fn resource(contents: &Value, budget: &mut Budget) -> (String, Option<Media>) {
    let uri = contents["uri"].as_str().unwrap_or("");
    if let Some(text) = contents["text"].as_str() {
        return (format!("[resource {uri}]\n{text}"), None);
    }
    match contents["blob"].as_str() {
        Some(blob) => resource_blob(contents, blob, budget),
        None => (format!("[resource {uri}: empty]"), None),
    }
}

/// A resource's `blob` as the model gets it: a picture or PDF as media with a label, another
/// blob described. Blocking: a large picture is scaled down.
pub(crate) fn resource_blob(
    contents: &Value,
    blob: &str,
    budget: &mut Budget,
) -> (String, Option<Media>) {
    let uri = contents["uri"].as_str().unwrap_or("");
    let described = |why: &str| {
        format!(
            "[resource {uri}: {}, {} bytes of base64{why}]",
            contents["mimeType"].as_str().unwrap_or("binary"),
            blob.len()
        )
    };
    // Only what its bytes say is a picture or PDF is shown; any other blob is described.
    let head = decode_head(blob);
    if sniff(&head).is_none() {
        return (described(""), None);
    }
    let name = uri
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or(uri)
        .to_string();
    match shown(&name, blob, budget) {
        Ok(m) => (format!("[resource {uri}] {}", m.about.label()), Some(m)),
        Err(why) => (described(&format!(", not shown: {why}")), None),
    }
}

/// The media a model is shown for base64 `data`, within what is left of `budget`.
fn shown(name: &str, data: &str, budget: &mut Budget) -> Result<Media, String> {
    if budget.parts == 0 {
        return Err(format!(
            "a result shows at most {MAX_PARTS} pictures and documents"
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("its base64 does not decode ({e})"))?;
    let media = prepare(name, bytes, None).map_err(|e| e.to_string())?;
    if media.about.size > budget.bytes {
        return Err(format!(
            "the pictures and documents of one result stay under {}",
            stepper_protocol::attachment::human_size(MAX_INPUT_BYTES)
        ));
    }
    budget.parts -= 1;
    budget.bytes -= media.about.size;
    Ok(media)
}

/// The first bytes of base64 `data`, enough to tell what it holds.
fn decode_head(data: &str) -> Vec<u8> {
    let head: String = data.trim().chars().take(24).collect();
    base64::engine::general_purpose::STANDARD
        .decode(head)
        .unwrap_or_default()
}

fn extension(mime: &str) -> &'static str {
    match mime {
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "application/pdf" => "pdf",
        _ => "png",
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
    use stepper_protocol::AttachmentKind;

    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A real PNG of `width` x `height` pixels.
    fn png(width: u32, height: u32) -> Vec<u8> {
        let pixels =
            image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 7]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(pixels)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n";

    #[test]
    fn a_screenshot_is_shown_to_the_model_and_labelled_where_it_stood() {
        let shot = png(12, 8);
        let result = CallToolResult::success(vec![
            ContentBlock::text("Took a screenshot of the page."),
            ContentBlock::image(b64(&shot), "image/png"),
        ]);
        let out = tool_output(&result, "take_screenshot");
        let [m] = &out.media[..] else {
            panic!("one picture: {:?}", out.media)
        };
        assert_eq!(m.data.as_deref(), Some(&shot[..]));
        assert_eq!(m.about.kind, AttachmentKind::Image);
        assert_eq!(m.about.media_type, "image/png");
        assert_eq!((m.about.width, m.about.height), (Some(12), Some(8)));
        assert_eq!(m.about.name, "take_screenshot-2.png");
        assert_eq!(
            out.content,
            format!("Took a screenshot of the page.\n{}", m.about.label())
        );
    }

    #[test]
    fn an_embedded_pdf_or_picture_blob_is_shown_and_another_blob_described() {
        let blob = |uri: &str, mime: &str, bytes: &[u8]| {
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: uri.into(),
                mime_type: Some(mime.into()),
                blob: b64(bytes),
                meta: None,
            })
        };
        let result = CallToolResult::success(vec![
            blob("file:///docs/spec.pdf", "application/pdf", PDF),
            blob(
                "file:///shots/a.png",
                "application/octet-stream",
                &png(3, 2),
            ),
            blob(
                "file:///x.zip",
                "application/zip",
                b"PK\x03\x04rest of a zip",
            ),
            ContentBlock::embedded_text("file:///notes.md", "# Notes"),
        ]);
        let out = tool_output(&result, "fetch");
        assert_eq!(out.media.len(), 2, "{:?}", out.media);
        assert_eq!(out.media[0].about.kind, AttachmentKind::Document);
        assert_eq!(out.media[0].about.name, "spec.pdf");
        assert_eq!(out.media[0].data.as_deref(), Some(PDF));
        assert_eq!(out.media[1].about.media_type, "image/png");
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(
            lines,
            [
                format!(
                    "[resource file:///docs/spec.pdf] {}",
                    out.media[0].about.label()
                )
                .as_str(),
                &format!(
                    "[resource file:///shots/a.png] {}",
                    out.media[1].about.label()
                ),
                "[resource file:///x.zip: application/zip, 24 bytes of base64]",
                "[resource file:///notes.md]",
                "# Notes",
            ]
        );
    }

    #[test]
    fn a_picture_that_cannot_be_shown_is_described_with_why() {
        let result = CallToolResult::success(vec![
            ContentBlock::image(
                b64(b"<svg xmlns='http://www.w3.org/2000/svg'/>"),
                "image/svg+xml",
            ),
            ContentBlock::image("not base64!", "image/png"),
        ]);
        let out = tool_output(&result, "draw");
        assert!(out.media.is_empty());
        let lines: Vec<&str> = out.content.lines().collect();
        assert!(
            lines[0].starts_with("[image: image/svg+xml, 56 bytes of base64, not shown: draw-1.png is not an image or a PDF"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with(
                "[image: image/png, 11 bytes of base64, not shown: its base64 does not decode"
            ),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn a_result_shows_no_more_pictures_than_an_input_may_hold() {
        let shot = b64(&png(2, 2));
        let blocks = (0..MAX_PARTS + 1)
            .map(|_| ContentBlock::image(shot.clone(), "image/png"))
            .collect();
        let out = tool_output(&CallToolResult::success(blocks), "s");
        assert_eq!(out.media.len(), MAX_PARTS);
        assert!(
            out.content.lines().last().unwrap().ends_with(&format!(
                "not shown: a result shows at most {MAX_PARTS} pictures and documents]"
            )),
            "{}",
            out.content
        );
    }

    #[test]
    fn text_and_structured_content_read_as_before() {
        let out = tool_output(
            &CallToolResult::success(vec![ContentBlock::text("hi")]),
            "t",
        );
        assert_eq!((out.content.as_str(), out.media.len()), ("hi", 0));
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(serde_json::json!({"n": 1}));
        assert_eq!(tool_output(&result, "t").content, r#"{"n":1}"#);
    }
}
