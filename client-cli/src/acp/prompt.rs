//! `session/prompt`: the editor's blocks made one input (its text, and its images and PDFs as
//! attachments), the folder's trust asked about first, and the answer given when the turn that
//! input started ends.
//!
//! A prompt submits, then waits for the end of the turn its input started; a turn that ends before
//! the wait begins is kept until then.

use serde_json::{Value, json};
use std::sync::Arc;
use stepper_protocol::TurnStatus;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{
    CwdParams, SessionSubmit, SessionSubmitParams, TrustGet, TrustSet, TrustSetParams,
};
use tokio::sync::oneshot;

use super::{AcpError, Conn, Live, map, session_id};
use crate::media::Media;
use crate::session::client_env;
use stepper_protocol::InputPart;

impl Conn {
    pub(super) async fn prompt(self: &Arc<Self>, params: Value) -> Result<Value, AcpError> {
        let id = session_id(&params)?;
        let live = self.live(&id)?;
        let blocks = params
            .get("prompt")
            .and_then(Value::as_array)
            .ok_or_else(|| AcpError::invalid("session/prompt needs prompt: an array of blocks"))?;
        let (text, parts) = prompt_input(blocks)?;
        let daemon = self.daemon().await?;
        self.ask_trust(daemon, &live).await;
        let submitted = daemon
            .call::<SessionSubmit>(SessionSubmitParams {
                parts,
                session_id: id.clone(),
                text,
                env: Some(client_env()),
            })
            .await?;
        let ended = {
            let mut turns = live.turns.lock().unwrap_or_else(|p| p.into_inner());
            match turns.ended.remove(&submitted.input_id) {
                Some(end) => Ok(end),
                None => {
                    let (tx, rx) = oneshot::channel();
                    turns.waiters.insert(submitted.input_id, tx);
                    Err(rx)
                }
            }
        };
        let (status, error) = match ended {
            Ok(end) => end,
            Err(rx) => rx.await.map_err(|_| {
                AcpError::new(
                    -32603,
                    "lost the daemon while the turn ran — the turn goes on there; \
                     session/load shows it",
                )
            })?,
        };
        match status {
            TurnStatus::Completed => Ok(json!({"stopReason": "end_turn"})),
            TurnStatus::Interrupted => Ok(json!({"stopReason": "cancelled"})),
            TurnStatus::Failed => Err(AcpError::new(
                -32603,
                error.unwrap_or_else(|| "the turn failed — see 'stepper daemon logs'".into()),
            )),
        }
    }

    /// Before a folder's first prompt on this connection: when the user never decided about
    /// it and its files ask for what only trust gives, ask the editor (a permission request);
    /// the answer is remembered either way. An editor that cannot answer decides nothing.
    async fn ask_trust(&self, daemon: &DaemonClient, live: &Live) {
        let first = self
            .trust_asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(live.cwd.clone());
        if !first {
            return;
        }
        let Ok(report) = daemon
            .call::<TrustGet>(CwdParams {
                cwd: live.cwd.clone(),
            })
            .await
        else {
            return;
        };
        if report.decided_by.is_some() || report.ignored.is_empty() || report.too_broad.is_some() {
            return;
        }
        let (ours, rx) = self.expect_answer();
        self.request_permission(
            ours,
            &live.id,
            map::trust_question(&report.folder, &report.ignored),
            map::trust_options(),
        );
        let Ok(Ok(answer)) = rx.await else { return };
        let trusted = match answer.pointer("/outcome/optionId").and_then(Value::as_str) {
            Some("trust") => true,
            Some("untrusted") => false,
            _ => return,
        };
        if let Err(e) = daemon
            .call::<TrustSet>(TrustSetParams {
                cwd: live.cwd.clone(),
                trusted,
                all_below: false,
            })
            .await
        {
            eprintln!("stepper acp: trust: {e}");
        }
    }
}

/// A prompt's blocks as one input: text as it is, files the editor embedded in tags the
/// model can tell apart, links as references to read; images, and embedded images and
/// PDFs (`blob`s), as its attachments, checked as `stepper ask --image` checks a file.
fn prompt_input(blocks: &[Value]) -> Result<(String, Vec<InputPart>), AcpError> {
    let mut text = String::new();
    let mut media = Vec::new();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let piece = match kind {
            "text" => block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or_default();
                format!("@{}", uri.strip_prefix("file://").unwrap_or(uri))
            }
            "image" => {
                media.push(image(block)?);
                String::new()
            }
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match (
                    resource.get("text").and_then(Value::as_str),
                    resource.get("blob").and_then(Value::as_str),
                ) {
                    (Some(body), _) => format!("<file uri=\"{uri}\">\n{body}\n</file>"),
                    (None, Some(blob)) => {
                        media.push(blob_media(&resource, blob, uri)?);
                        String::new()
                    }
                    (None, None) => format!("@{}", uri.strip_prefix("file://").unwrap_or(uri)),
                }
            }
            other => {
                return Err(AcpError::invalid(format!(
                    "stepper takes text, images, resource links and embedded resources (text, \
                     or an image or PDF blob) in a prompt, not {other:?} (see \
                     promptCapabilities)"
                )));
            }
        };
        if !text.is_empty() && !piece.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    if text.trim().is_empty() && media.is_empty() {
        return Err(AcpError::invalid("the prompt is empty"));
    }
    let parts = crate::media::parts(&media).map_err(|e| AcpError::invalid(format!("{e:#}")))?;
    Ok((text, parts))
}

/// The image types a model is shown.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An `image` block: `data` (base64) with its `mimeType`; its `uri` names it.
fn image(block: &Value) -> Result<Media, AcpError> {
    let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("");
    let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
    if !IMAGE_TYPES.contains(&mime) {
        return Err(AcpError::invalid(format!(
            "stepper takes PNG, JPEG, GIF and WebP images, not {} — convert it to PNG",
            if mime.is_empty() {
                "an image without a mimeType"
            } else {
                mime
            }
        )));
    }
    match block.get("data").and_then(Value::as_str) {
        Some(data) if !data.is_empty() => media_of(data, uri, mime),
        // An image by its file alone: this client is the user, and reads it.
        _ => match uri.strip_prefix("file://") {
            Some(path) => Media::read(std::path::Path::new(path))
                .map_err(|e| AcpError::invalid(format!("{e:#}"))),
            None => Err(AcpError::invalid(
                "an image block needs its data (base64), or a file:// uri",
            )),
        },
    }
}

/// An embedded resource's `blob`: an image or a PDF, by its `mimeType`.
fn blob_media(resource: &Value, blob: &str, uri: &str) -> Result<Media, AcpError> {
    let mime = resource
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !IMAGE_TYPES.contains(&mime) && mime != "application/pdf" {
        return Err(AcpError::invalid(format!(
            "stepper takes embedded images (PNG, JPEG, GIF, WebP) and PDFs, not {} ({uri}) — \
             embed it as text, or link it",
            if mime.is_empty() {
                "a blob without a mimeType"
            } else {
                mime
            }
        )));
    }
    media_of(blob, uri, mime)
}

/// The bytes of `data` (base64), named by the last part of `uri`, checked by what they are.
fn media_of(data: &str, uri: &str, mime: &str) -> Result<Media, AcpError> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| AcpError::invalid(format!("the {mime} block's data is not base64: {e}")))?;
    let name = uri
        .rsplit(['/', '\\'])
        .next()
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| match mime {
            "application/pdf" => "document.pdf".to_string(),
            _ => format!("image.{}", mime.rsplit('/').next().unwrap_or("png")),
        });
    Media::of_bytes(name, bytes).map_err(|e| AcpError::invalid(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG's first bytes, base64.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUg==";
    const PDF: &str = "JVBERi0xLjcK";

    fn said(blocks: &[Value]) -> String {
        let e = prompt_input(blocks).unwrap_err();
        assert_eq!(e.code, -32602);
        e.message
    }

    #[test]
    fn a_prompt_joins_text_links_and_embedded_files() {
        let blocks = [
            json!({"type": "text", "text": "review this"}),
            json!({"type": "resource_link", "uri": "file:///p/src/lib.rs", "name": "lib.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/a.md", "text": "# A"}}),
        ];
        let (text, parts) = prompt_input(&blocks).unwrap();
        assert_eq!(
            text,
            "review this\n@/p/src/lib.rs\n<file uri=\"file:///p/a.md\">\n# A\n</file>"
        );
        assert!(parts.is_empty());
        assert!(prompt_input(&[json!({"type": "text", "text": "  "})]).is_err());
    }

    #[test]
    fn images_and_embedded_pdfs_are_the_inputs_attachments() {
        let blocks = [
            json!({"type": "text", "text": "what is wrong here?"}),
            json!({"type": "image", "data": PNG, "mimeType": "image/png", "uri": "file:///p/shot.png"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/spec.pdf", "blob": PDF, "mimeType": "application/pdf"}}),
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
        ];
        let (text, parts) = prompt_input(&blocks).unwrap();
        assert_eq!(text, "what is wrong here?");
        assert_eq!(
            serde_json::to_value(&parts).unwrap(),
            json!([
                {"type": "image", "data": PNG, "mediaType": "image/png", "name": "shot.png"},
                {"type": "document", "data": PDF, "mediaType": "application/pdf", "name": "spec.pdf"},
                {"type": "image", "data": PNG, "mediaType": "image/png", "name": "image.png"},
            ])
        );
        // An image by its file alone is read here.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.png");
        std::fs::write(&file, b"\x89PNG\r\n\x1a\n").unwrap();
        let uri = format!("file://{}", file.display());
        let by_file = [json!({"type": "image", "mimeType": "image/png", "uri": uri})];
        let (_, parts) = prompt_input(&by_file).unwrap();
        assert!(
            matches!(&parts[..], [InputPart::Image { source }] if source.name.as_deref() == Some("s.png"))
        );
        // An image alone is a prompt.
        let alone = [json!({"type": "image", "data": PNG, "mimeType": "image/png"})];
        assert_eq!(prompt_input(&alone).unwrap().1.len(), 1);
    }

    #[test]
    fn what_cannot_be_shown_is_refused_saying_why() {
        let svg = [json!({"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"})];
        insta::assert_snapshot!(said(&svg), @"stepper takes PNG, JPEG, GIF and WebP images, not image/svg+xml — convert it to PNG");
        let zip = [
            json!({"type": "resource", "resource": {"uri": "file:///p/a.zip", "blob": "UEsDBA==", "mimeType": "application/zip"}}),
        ];
        insta::assert_snapshot!(said(&zip), @"stepper takes embedded images (PNG, JPEG, GIF, WebP) and PDFs, not application/zip (file:///p/a.zip) — embed it as text, or link it");
        let lying = [
            json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png", "uri": "file:///p/x.png"}),
        ];
        insta::assert_snapshot!(said(&lying), @"x.png is not an image (PNG, JPEG, GIF, WebP) or a PDF — convert it, or name it in the prompt for the agent to read");
        let empty = [json!({"type": "image", "data": "", "mimeType": "image/png"})];
        assert_eq!(
            said(&empty),
            "an image block needs its data (base64), or a file:// uri"
        );
        let garbled = [json!({"type": "image", "data": "%%%", "mimeType": "image/png"})];
        assert!(said(&garbled).starts_with("the image/png block's data is not base64"));
        let audio = [json!({"type": "audio", "data": "", "mimeType": "audio/wav"})];
        assert!(said(&audio).contains("not \"audio\""));
    }
}
