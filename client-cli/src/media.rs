//! The images and documents a client sends with an input: a file (or the clipboard's bytes)
//! checked by what its bytes are and against the protocol's limits before anything is sent,
//! then base64 in an [`InputPart`]. `ask`, the TUI's bridge and ACP all come through here, so
//! each refuses the same things with the same words, and a refused file never leaves an empty
//! session behind.
//!
//! The client is the user: it reads any file the user names, wherever it is (the daemon,
//! given a `path` part, reads only inside the session's folder).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use base64::Engine;
use stepper_protocol::attachment::{
    self, AttachmentKind, InputPart, MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, MAX_PARTS, PartSource,
    human_size,
};

/// An image or a PDF, read and checked, ready to send.
#[derive(Clone, PartialEq, Eq)]
pub struct Media {
    /// For people: the file's name (`clipboard.png` for a pasted image).
    pub name: String,
    pub media_type: String,
    pub kind: AttachmentKind,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for Media {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Media({} {} {} B)",
            self.name,
            self.media_type,
            self.bytes.len()
        )
    }
}

/// What the bytes may be, for messages.
const WHAT_IS_TAKEN: &str = "an image (PNG, JPEG, GIF, WebP) or a PDF";

impl Media {
    /// `bytes` as an attachment named `name`: refused unless they are an image or a PDF
    /// within its kind's limit.
    pub fn of_bytes(name: impl Into<String>, bytes: Vec<u8>) -> anyhow::Result<Media> {
        let name = name.into();
        let Some((media_type, kind)) = attachment::sniff(&bytes) else {
            bail!(
                "{name} is not {WHAT_IS_TAKEN} — convert it, or name it in the prompt for the \
                 agent to read"
            );
        };
        check_size(&name, kind, bytes.len() as u64)?;
        Ok(Media {
            name,
            media_type: media_type.to_string(),
            kind,
            bytes,
        })
    }

    /// The clipboard's image, named `clipboard.png` (or `.jpg`, `.gif`, `.webp`, by what it
    /// is).
    pub fn pasted(bytes: Vec<u8>) -> anyhow::Result<Media> {
        Media::pasted_as("clipboard", bytes)
    }

    /// Bytes from no file, named `stem` and the extension of what they are.
    pub fn pasted_as(stem: &str, bytes: Vec<u8>) -> anyhow::Result<Media> {
        let ext = match attachment::sniff(&bytes) {
            Some(("image/jpeg", _)) => "jpg",
            Some(("image/gif", _)) => "gif",
            Some(("image/webp", _)) => "webp",
            Some(("application/pdf", _)) => "pdf",
            _ => "png",
        };
        Media::of_bytes(format!("{stem}.{ext}"), bytes)
    }

    /// The file at `path` as an attachment named by its file name.
    pub fn read(path: &Path) -> anyhow::Result<Media> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !meta.is_file() {
            bail!("{} is not a file", path.display());
        }
        let largest = MAX_IMAGE_BYTES.max(MAX_DOCUMENT_BYTES);
        if meta.len() > largest {
            bail!(
                "{name} is {}; the most an attachment may be is {} — make it smaller",
                human_size(meta.len()),
                human_size(largest)
            );
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(largest + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Media::of_bytes(name, bytes)
    }

    /// The part that sends it: its bytes, base64, with its type and name.
    pub fn part(&self) -> InputPart {
        let source = PartSource {
            data: Some(base64::engine::general_purpose::STANDARD.encode(&self.bytes)),
            path: None,
            media_type: Some(self.media_type.clone()),
            name: Some(self.name.clone()),
        };
        match self.kind {
            AttachmentKind::Document => InputPart::Document { source },
            _ => InputPart::Image { source },
        }
    }
}

fn check_size(name: &str, kind: AttachmentKind, size: u64) -> anyhow::Result<()> {
    let (most, what) = match kind {
        AttachmentKind::Document => (MAX_DOCUMENT_BYTES, "a PDF"),
        _ => (MAX_IMAGE_BYTES, "an image"),
    };
    if size > most {
        bail!(
            "{name} is {}; the most {what} may be is {} — make it smaller",
            human_size(size),
            human_size(most)
        );
    }
    Ok(())
}

/// The parts that send `media`, once the input as a whole is within the limits (how many,
/// how large together).
pub fn parts(media: &[Media]) -> anyhow::Result<Vec<InputPart>> {
    if media.len() > MAX_PARTS {
        bail!(
            "{} attachments; the most one input takes is {MAX_PARTS} — send them over several \
             prompts",
            media.len()
        );
    }
    let total: u64 = media.iter().map(|m| m.bytes.len() as u64).sum();
    if total > attachment::MAX_INPUT_BYTES {
        bail!(
            "the attachments come to {}; the most one input takes is {} — send them over \
             several prompts",
            human_size(total),
            human_size(attachment::MAX_INPUT_BYTES)
        );
    }
    Ok(media.iter().map(Media::part).collect())
}

/// The files a plain prompt's `@path` words name that are images or PDFs, in order, each
/// once: relative to `cwd`, or from the home folder with `~/`. The words stay in the text.
/// A `/command`'s `@file`s are the daemon's (it includes them as text), so none are taken
/// from it; nor from a word whose file is not an image or PDF by its bytes.
pub fn mentioned(prompt: &str, cwd: &Path) -> Vec<PathBuf> {
    if prompt.trim_start().starts_with('/') {
        return Vec::new();
    }
    let mut found: Vec<PathBuf> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(path) = word
            .strip_prefix('@')
            .map(|p| p.trim_end_matches([',', '.', ';', ':', ')', '?', '!']))
            .filter(|p| attachment::looks_attachable(p))
        else {
            continue;
        };
        let path = resolve(path, cwd);
        if path.is_file() && sniffs(&path) && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// `path` as the user means it: `~/` from the home folder, relative from `cwd`.
pub fn resolve(path: &str, cwd: &Path) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => cwd.join(path),
    }
}

/// Whether the file's first bytes are an image's or a PDF's.
fn sniffs(path: &Path) -> bool {
    let mut head = [0u8; 16];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    attachment::sniff(&head[..read]).is_some()
}

/// Every file the user gave: what was piped in, `--image` files, then those the prompt
/// mentions, each once; read and checked, with the parts that send them.
pub fn gather(
    given: &[PathBuf],
    prompt: &str,
    cwd: &Path,
    piped: Option<Media>,
) -> anyhow::Result<Vec<InputPart>> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for path in given
        .iter()
        .map(|p| cwd.join(p))
        .chain(mentioned(prompt, cwd))
    {
        let same = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !paths
            .iter()
            .any(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()) == same)
        {
            paths.push(path);
        }
    }
    let read = paths
        .iter()
        .map(|p| Media::read(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let media: Vec<Media> = piped.into_iter().chain(read).collect();
    parts(&media)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    const PDF: &[u8] = b"%PDF-1.7\n%\xe2\xe3\n";

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), PNG).unwrap();
        std::fs::write(dir.path().join("spec.pdf"), PDF).unwrap();
        std::fs::write(dir.path().join("fake.png"), b"not a picture").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"hello").unwrap();
        dir
    }

    #[test]
    fn a_prompt_attaches_the_images_and_pdfs_it_mentions() {
        let dir = folder();
        let cwd = dir.path();
        let found = mentioned(
            "what is wrong in @shot.png? compare @spec.pdf, @fake.png, @notes.txt, \
             @missing.png and @shot.png again",
            cwd,
        );
        assert_eq!(found, vec![cwd.join("shot.png"), cwd.join("spec.pdf")]);
        // A command's @file is the daemon's to include.
        assert!(mentioned("/review @shot.png", cwd).is_empty());
    }

    #[test]
    fn given_and_mentioned_files_go_once_each_as_base64_parts() {
        let dir = folder();
        let cwd = dir.path();
        let parts = gather(
            &[PathBuf::from("shot.png")],
            "see @shot.png and @spec.pdf",
            cwd,
            None,
        )
        .unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            serde_json::to_value(&parts[0]).unwrap(),
            serde_json::json!({
                "type": "image",
                "data": "iVBORw0KGgoAAAANSUhEUg==",
                "mediaType": "image/png",
                "name": "shot.png"
            })
        );
        assert!(
            matches!(&parts[1], InputPart::Document { source } if source.media_type.as_deref() == Some("application/pdf"))
        );
        // What was piped in goes first, named by what it is.
        let piped = Media::pasted_as("stdin", PNG.to_vec()).unwrap();
        let parts = gather(&[], "what is this?", cwd, Some(piped)).unwrap();
        assert!(
            matches!(&parts[..], [InputPart::Image { source }] if source.name.as_deref() == Some("stdin.png"))
        );
    }

    #[test]
    fn what_cannot_be_sent_is_refused_with_what_to_do() {
        let dir = folder();
        let cwd = dir.path();
        let said = |given: &str| {
            format!(
                "{:#}",
                gather(&[PathBuf::from(given)], "look", cwd, None).unwrap_err()
            )
        };
        insta::assert_snapshot!(said("notes.txt"), @"notes.txt is not an image (PNG, JPEG, GIF, WebP) or a PDF — convert it, or name it in the prompt for the agent to read");
        assert!(
            said("missing.png").starts_with("cannot read "),
            "{}",
            said("missing.png")
        );
        let mut big = PNG.to_vec();
        big.resize(usize::try_from(MAX_IMAGE_BYTES).unwrap() + 1, 0);
        let err = Media::of_bytes("big.png", big).unwrap_err();
        insta::assert_snapshot!(format!("{err:#}"), @"big.png is 20.1 MB; the most an image may be is 20.0 MB — make it smaller");
        let one = Media::of_bytes("a.png", PNG.to_vec()).unwrap();
        let err = parts(&vec![one; MAX_PARTS + 1]).unwrap_err();
        insta::assert_snapshot!(format!("{err:#}"), @"21 attachments; the most one input takes is 20 — send them over several prompts");
    }
}
