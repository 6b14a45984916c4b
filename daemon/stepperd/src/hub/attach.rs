//! An input's parts as a client sent them, made into its text and its attachments: bytes
//! decoded or read from a file inside the session's folder, checked against the protocol's
//! limits, and made ready for a model by `stepper_tools::media` (on a blocking thread: a
//! large picture is scaled down).
//!
//! Everything is refused before anything is stored, with an error that says which part and
//! what to do.

use std::path::Path;

use base64::Engine as _;
use stepper_engine::Media;
use stepper_protocol::attachment::{
    MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, MAX_INPUT_BYTES, MAX_PARTS, PartSource, human_size,
};
use stepper_protocol::{AttachmentKind, InputPart};

use super::HubError;

/// An input as it will be queued: its text and its attachments, with their bytes.
#[derive(Debug, Default)]
pub struct Input {
    pub text: String,
    pub media: Vec<Media>,
}

impl Input {
    pub fn text(text: String) -> Input {
        Input {
            text,
            media: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.media.is_empty()
    }
}

/// `text` and `parts` as one input. Paths are read inside `cwd` only.
pub async fn take_parts(
    cwd: &Path,
    text: String,
    parts: Vec<InputPart>,
) -> Result<Input, HubError> {
    let attached = parts
        .iter()
        .filter(|p| !matches!(p, InputPart::Text { .. }))
        .count();
    if attached > MAX_PARTS {
        return Err(HubError::Invalid(format!(
            "an input holds at most {MAX_PARTS} images and documents ({attached} given): send \
             the rest in another input"
        )));
    }
    let mut input = Input::text(text);
    let mut total = 0u64;
    for (i, part) in parts.into_iter().enumerate() {
        let (kind, source) = match part {
            InputPart::Text { text } => {
                if !input.text.is_empty() && !text.is_empty() {
                    input.text.push_str("\n\n");
                }
                input.text.push_str(&text);
                continue;
            }
            InputPart::Image { source } => (AttachmentKind::Image, source),
            InputPart::Document { source } => (AttachmentKind::Document, source),
        };
        let (name, bytes) = bytes_of(cwd, i, kind, &source).await?;
        total += bytes.len() as u64;
        if total > MAX_INPUT_BYTES {
            return Err(HubError::Invalid(format!(
                "the input's attachments come to over {} together: send some in another input",
                human_size(MAX_INPUT_BYTES)
            )));
        }
        let claimed = source.media_type.clone();
        let media = tokio::task::spawn_blocking(move || {
            stepper_tools::media::prepare(&name, bytes, claimed.as_deref())
        })
        .await
        .map_err(|e| HubError::Invalid(format!("part {i} could not be read: {e}")))?
        .map_err(|e| HubError::Invalid(format!("part {i}: {e}")))?;
        if media.about.kind != kind {
            return Err(HubError::Invalid(format!(
                "part {i} is sent as {kind} but {} is {}: send it as a {} part",
                media.about.name, media.about.media_type, media.about.kind
            )));
        }
        input.media.push(media);
    }
    Ok(input)
}

/// A part's name and bytes: decoded, or read from a file inside `cwd`.
async fn bytes_of(
    cwd: &Path,
    i: usize,
    kind: AttachmentKind,
    source: &PartSource,
) -> Result<(String, Vec<u8>), HubError> {
    let limit = match kind {
        AttachmentKind::Document => MAX_DOCUMENT_BYTES,
        _ => MAX_IMAGE_BYTES,
    };
    let too_large = |size: u64| {
        HubError::Invalid(format!(
            "part {i} is {} — over the {} limit for {kind}s: attach a smaller file",
            human_size(size),
            human_size(limit)
        ))
    };
    match (&source.data, &source.path) {
        (Some(data), None) => {
            // Base64 is four characters for three bytes: refuse before decoding.
            let size = (data.len() as u64 / 4) * 3;
            if size > limit + 3 {
                return Err(too_large(size));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| {
                    HubError::Invalid(format!(
                        "part {i}'s data is not base64 ({e}): send the bytes base64-encoded, \
                         standard alphabet"
                    ))
                })?;
            let name = source.name.clone().unwrap_or_else(|| match kind {
                AttachmentKind::Document => "document.pdf".into(),
                _ => "image".into(),
            });
            Ok((name, bytes))
        }
        (None, Some(path)) => {
            let path = inside(cwd, path, i).await?;
            let size = tokio::fs::metadata(&path)
                .await
                .map_err(|e| unreadable(i, &path, e))?
                .len();
            if size > limit {
                return Err(too_large(size));
            }
            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|e| unreadable(i, &path, e))?;
            let name = source.name.clone().unwrap_or_else(|| {
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.display().to_string())
            });
            Ok((name, bytes))
        }
        _ => Err(HubError::Invalid(format!(
            "part {i} needs exactly one of `data` (base64) and `path`"
        ))),
    }
}

/// `path` (relative to `cwd`, or absolute) resolved, and inside `cwd`: a client reads files
/// elsewhere itself and sends their bytes.
async fn inside(cwd: &Path, path: &str, i: usize) -> Result<std::path::PathBuf, HubError> {
    // A folder that is not absolute is refused by `session/create` after the parts are read:
    // nothing may be read relative to the daemon's own folder meanwhile.
    if !cwd.is_absolute() {
        return Err(HubError::Invalid(format!(
            "cwd {:?} must be an absolute path",
            cwd.display().to_string()
        )));
    }
    let joined = cwd.join(path);
    let real = tokio::fs::canonicalize(&joined)
        .await
        .map_err(|e| unreadable(i, &joined, e))?;
    let root = tokio::fs::canonicalize(cwd)
        .await
        .map_err(|e| unreadable(i, cwd, e))?;
    if !real.starts_with(&root) {
        return Err(HubError::Invalid(format!(
            "part {i}: {path} is outside the session's folder {}: send its bytes as `data` \
             instead",
            cwd.display()
        )));
    }
    Ok(real)
}

fn unreadable(i: usize, path: &Path, e: std::io::Error) -> HubError {
    HubError::Invalid(format!("part {i}: cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Vec<u8> {
        // A 1×1 PNG.
        base64::engine::general_purpose::STANDARD
            .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
            .unwrap()
    }

    fn data_part(bytes: &[u8]) -> InputPart {
        InputPart::image(
            "dot.png",
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )
    }

    #[tokio::test]
    async fn text_parts_join_the_text_and_media_parts_are_measured() {
        let dir = tempfile::tempdir().unwrap();
        let input = take_parts(
            dir.path(),
            "look".into(),
            vec![
                data_part(&png()),
                InputPart::Text {
                    text: "closely".into(),
                },
            ],
        )
        .await
        .unwrap();
        assert_eq!(input.text, "look\n\nclosely");
        assert_eq!(input.media.len(), 1);
        assert_eq!(input.media[0].about.name, "dot.png");
        assert_eq!(input.media[0].about.width, Some(1));
    }

    #[tokio::test]
    async fn a_path_is_read_inside_the_folder_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("dot.png"), png()).unwrap();
        let path_part = |path: &str| InputPart::Image {
            source: PartSource {
                path: Some(path.into()),
                ..PartSource::default()
            },
        };
        let input = take_parts(dir.path(), String::new(), vec![path_part("dot.png")])
            .await
            .unwrap();
        assert_eq!(input.media[0].about.name, "dot.png");
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.png"), png()).unwrap();
        let far = outside.path().join("x.png").display().to_string();
        let err = take_parts(dir.path(), String::new(), vec![path_part(&far)])
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("outside the session's folder"),
            "{err}"
        );
        let err = take_parts(dir.path(), String::new(), vec![path_part("../x.png")])
            .await
            .unwrap_err();
        assert!(err.to_string().contains("part 0"), "{err}");
    }

    #[tokio::test]
    async fn what_breaks_a_limit_or_a_shape_is_refused_saying_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let many = vec![data_part(&png()); MAX_PARTS + 1];
        let err = take_parts(dir.path(), "x".into(), many).await.unwrap_err();
        assert!(err.to_string().contains("at most 20"), "{err}");
        let err = take_parts(
            dir.path(),
            "x".into(),
            vec![InputPart::image("a.png", "%%%".into())],
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("not base64"), "{err}");
        let err = take_parts(
            dir.path(),
            "x".into(),
            vec![InputPart::Image {
                source: PartSource::default(),
            }],
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("exactly one of"), "{err}");
        let pdf_as_image = InputPart::image(
            "spec.pdf",
            base64::engine::general_purpose::STANDARD.encode(b"%PDF-1.4\n%%EOF"),
        );
        let err = take_parts(dir.path(), "x".into(), vec![pdf_as_image])
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("send it as a document part"),
            "{err}"
        );
        let huge = "A".repeat((MAX_IMAGE_BYTES as usize / 3) * 4 + 100);
        let err = take_parts(
            dir.path(),
            "x".into(),
            vec![InputPart::image("h.png", huge)],
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("over the 20.0 MB limit"), "{err}");
    }
}
