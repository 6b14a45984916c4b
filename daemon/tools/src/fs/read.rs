//! The read tool: a text file's lines numbered like `cat -n`, or a picture or PDF the model
//! sees (as Claude Code's Read shows them). Lines are streamed and each is kept only up to the
//! display cap, so neither a huge file nor a huge line is loaded whole; a picture or PDF is
//! told by its bytes, never its name, and a picture too large for providers is scaled down.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::Path;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{
    GateRequest, MediaOrigin, Tool, ToolCx, ToolDetails, ToolError, ToolOutput, ToolResult,
    ToolSpec, parse_args,
};
use stepper_protocol::attachment::{MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, human_size, sniff};
use stepper_protocol::{Attachment, AttachmentKind};
use tokio_util::sync::CancellationToken;

use super::file::{BINARY_PROBE_BYTES, binary_error, check_regular, looks_binary};
use super::{blocking, path};
use crate::media::{self, MediaError};

/// Lines returned when the call gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;

/// Characters shown of one line; the rest is cut off with a marker.
const MAX_LINE_CHARS: usize = 2000;

/// Bytes kept of one line: enough for `MAX_LINE_CHARS` characters of any width.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// The most text one call returns, whatever `limit` says: beyond it the model is told where
/// to continue.
const MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// Lines between two looks at the cancellation token.
const CANCEL_CHECK_EVERY: usize = 4096;

const DESCRIPTION: &str = "\
Reads a file from the local file system: a text file's lines numbered like `cat -n`, or a \
picture or PDF for you to see.

Usage:
- `path` is absolute, or relative to the working directory.
- By default up to 2000 lines are returned, starting at the first. For a long file, pass \
`offset` (the 1-based line to start at) and `limit` (how many lines) to read the part you need; \
otherwise prefer reading the whole file.
- Lines longer than 2000 characters are cut off and marked as truncated.
- Each output line is: spaces, the line number, a tab, then the line's text. That prefix is not \
part of the file: never copy it into `old_string` when you edit.
- Pictures (PNG, JPEG, GIF, WebP) and PDFs are shown to you, to look at: read a screenshot, \
a diagram or a PDF to see it. A picture too large for the model is scaled down first; `offset` \
and `limit` do not apply to them.
- Other files must be UTF-8 text; any other binary file is refused with its size. A directory \
is refused too: use `ls` to list it.
- Read a file before you edit it. You can read several files at once by making several read \
calls in one response.";

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// `read {path, offset?, limit?}`: numbered lines of a text file.
pub struct ReadTool;

impl Tool for ReadTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to read: absolute, or relative to the working directory."
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "The line number to start reading at (1-based). Only needed for files too long to read at once."
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many lines to read (default 2000)."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = parse_args(args)?;
            if args.limit == Some(0) {
                return Err(ToolError::InvalidArguments(
                    "limit must be at least 1".into(),
                ));
            }
            // Line 0 does not exist; a model that says 0 means the start.
            let first = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            let requested = path::requested(cx, &args.path)?;
            let hint = if Path::new(&args.path).is_relative() {
                format!("Relative paths start at {}.", cx.cwd.display())
            } else {
                String::new()
            };
            let root = cx.project_root.clone();
            let (path, root) = blocking(move || {
                Ok((
                    path::existing(&requested, &root, &hint)?,
                    path::canonical_root(&root),
                ))
            })
            .await?;

            cx.gate(GateRequest::Read { path: path.clone() }).await?;

            let cancel = cx.cancel.clone();
            let label = path::label(&root, &path);
            blocking(move || match open(&path, &label)? {
                Opened::Media(file, media_type, kind) => {
                    shown(file, media_type, kind, &path, &label)
                }
                Opened::Text(file) => {
                    numbered_lines(file, &path, &label, first, limit, &cancel).map(ToolOutput::text)
                }
            })
            .await
        })
    }
}

/// A file opened for reading, told apart by its first bytes.
enum Opened {
    /// A picture or PDF a model can see, of this media type.
    Media(File, &'static str, AttachmentKind),
    Text(File),
}

/// Opens the file at `path` and tells what it holds. Refuses folders and special files.
fn open(path: &Path, label: &str) -> Result<Opened, ToolError> {
    let io_failed = |e: io::Error| path::failed("read", path, &e);
    let file = File::open(path).map_err(|e| path::failed("open", path, &e))?;
    check_regular(&file.metadata().map_err(io_failed)?, label)?;
    let mut head = Vec::with_capacity(16);
    (&file).take(16).read_to_end(&mut head).map_err(io_failed)?;
    Ok(match sniff(&head) {
        Some((media_type, kind)) => Opened::Media(file, media_type, kind),
        None => Opened::Text(file),
    })
}

/// A picture or PDF as the model gets it: a line saying what it is, and the file beside it,
/// scaled down when a picture is too large for providers.
fn shown(
    mut file: File,
    media_type: &str,
    kind: AttachmentKind,
    path: &Path,
    label: &str,
) -> ToolResult {
    let io_failed = |e: io::Error| path::failed("read", path, &e);
    let size = file.metadata().map_err(io_failed)?.len();
    let limit = match kind {
        AttachmentKind::Document => MAX_DOCUMENT_BYTES,
        _ => MAX_IMAGE_BYTES,
    };
    if size > limit {
        let instead = match kind {
            AttachmentKind::Document => {
                "take the pages you need into a smaller PDF (qpdf, pdfseparate) or its text \
                 (pdftotext) and read that"
            }
            _ => "scale it down into a new file (convert, sips) and read that",
        };
        return Err(ToolError::Failed(format!(
            "{label} is {} — over the {} a model is shown of one {kind}: {instead}",
            human_size(size),
            human_size(limit)
        )));
    }
    file.seek(SeekFrom::Start(0)).map_err(io_failed)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes).map_err(io_failed)?;
    let pixels = media::pixels(&bytes);
    let origin = MediaOrigin {
        size: bytes.len() as u64,
        width: pixels.map(|p| p.0),
        height: pixels.map(|p| p.1),
    };
    let mut sent = media::prepare(label, bytes, Some(media_type)).map_err(media_failed)?;
    if let Some(name) = path.file_name() {
        sent.about.name = name.to_string_lossy().into_owned();
    }
    Ok(ToolOutput {
        content: about(label, media_type, &origin, &sent.about),
        details: ToolDetails {
            origin: Some(origin),
            ..Default::default()
        },
        media: vec![sent],
    })
}

/// What `read` says of a picture or PDF beside it: what it is, its pixels or pages, its size,
/// and how it was scaled to fit.
fn about(label: &str, original_type: &str, origin: &MediaOrigin, sent: &Attachment) -> String {
    if sent.kind == AttachmentKind::Document {
        let pages = match sent.pages {
            Some(1) => "1 page, ".to_string(),
            Some(n) => format!("{n} pages, "),
            None => String::new(),
        };
        return format!(
            "PDF read: {label} ({pages}{}). It is attached to this result for you to read.",
            human_size(origin.size)
        );
    }
    let looks = |media_type: &str, width: Option<u32>, height: Option<u32>, size: u64| {
        let format = media_type
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        match (width, height) {
            (Some(w), Some(h)) => format!("{format}, {w}x{h} pixels, {}", human_size(size)),
            _ => format!("{format}, {}", human_size(size)),
        }
    };
    let as_on_disk = looks(original_type, origin.width, origin.height, origin.size);
    let scaled = sent.media_type != original_type
        || (sent.width, sent.height) != (origin.width, origin.height);
    if !scaled {
        return format!(
            "Image read: {label} ({as_on_disk}). It is attached to this result for you to look at."
        );
    }
    format!(
        "Image read: {label} ({as_on_disk}; scaled down to {} to fit what models take). It is \
         attached to this result for you to look at.",
        looks(&sent.media_type, sent.width, sent.height, sent.size)
    )
}

fn media_failed(e: MediaError) -> ToolError {
    ToolError::Failed(e.to_string())
}

/// Lines `first..first + limit` of the file at `path`, numbered, with notes on what was left
/// out.
fn numbered_lines(
    mut file: File,
    path: &Path,
    label: &str,
    first: usize,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let io_failed = |e: io::Error| path::failed("read", path, &e);
    file.seek(SeekFrom::Start(0)).map_err(io_failed)?;
    let size = file.metadata().map_err(io_failed)?.len();

    let mut head = Vec::with_capacity(BINARY_PROBE_BYTES);
    (&file)
        .take(BINARY_PROBE_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io_failed)?;
    if looks_binary(&head) {
        return Err(binary_error(label, size));
    }
    file.seek(SeekFrom::Start(0)).map_err(io_failed)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);

    let mut line = Vec::new();
    let mut number = 0;
    while number + 1 < first {
        if number % CANCEL_CHECK_EVERY == 0 && cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        match next_line(&mut reader, 0, &mut line).map_err(io_failed)? {
            Some(_) => number += 1,
            None => {
                return Err(ToolError::Failed(format!(
                    "{label} has only {number} lines, so offset {first} is past its end"
                )));
            }
        }
    }

    let mut out = String::new();
    let mut shown = 0;
    let mut capped = false;
    while shown < limit {
        if shown % CANCEL_CHECK_EVERY == 0 && cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Some(len) = next_line(&mut reader, MAX_LINE_BYTES, &mut line).map_err(io_failed)?
        else {
            break;
        };
        let kept_whole = len == line.len();
        let text = decode(&line, kept_whole).ok_or_else(|| binary_error(label, size))?;
        let text = if number == 0 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        let (text, cut) = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((at, _)) => (&text[..at], true),
            None => (text, !kept_whole),
        };
        let mut rendered = format!("{:>6}\t{text}", number + 1);
        if cut {
            rendered.push_str(&format!(
                " [... line truncated to {MAX_LINE_CHARS} characters; it has {len} bytes]"
            ));
        }
        if shown > 0 && out.len() + rendered.len() + 1 > MAX_OUTPUT_BYTES {
            capped = true;
            break;
        }
        out.push_str(&rendered);
        out.push('\n');
        number += 1;
        shown += 1;
    }

    if shown == 0 {
        return Ok(format!("({label} is empty)"));
    }
    let more = capped
        || (shown == limit
            && next_line(&mut reader, 0, &mut line)
                .map_err(io_failed)?
                .is_some());
    if more {
        let why = if capped {
            " (the output was capped at 256 KiB)"
        } else {
            ""
        };
        out.push_str(&format!(
            "\n[Showed lines {first}-{number} of {label}{why}; more lines follow. Call read with \
             offset={} to continue.]\n",
            number + 1
        ));
    }
    Ok(out)
}

/// Reads the next line into `buf` without its `\n` or `\r\n`, keeping at most `keep` bytes
/// and skipping the rest. Returns the line's full length in bytes, or `None` at the end.
fn next_line<R: BufRead>(
    reader: &mut R,
    keep: usize,
    buf: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    buf.clear();
    let mut total = 0;
    let mut last = None;
    let mut any = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        any = true;
        let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], at + 1, true),
            None => (available, available.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if let Some(&byte) = chunk.last() {
            last = Some(byte);
        }
        total += chunk.len();
        reader.consume(used);
        if done {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if last == Some(b'\r') {
        total -= 1;
        if buf.len() > total {
            buf.pop();
        }
    }
    Ok(Some(total))
}

/// The line as text, or `None` if it is not UTF-8. A line cut short may end inside a
/// character; that partial character is dropped.
fn decode(bytes: &[u8], whole: bool) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(e) if !whole && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stepper_engine::tool::{GateRequest, Tool, ToolCx, ToolError};

    use super::*;
    use crate::fs::testing;
    use std::io::Write as _;

    async fn read(cx: &ToolCx, args: serde_json::Value) -> Result<String, ToolError> {
        ReadTool.call(args, cx).await.map(|out| out.content)
    }

    #[tokio::test]
    async fn numbers_lines_like_cat_n() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "first\n\tsecond\n\nlast").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "a.txt"})).await.unwrap();
        assert_eq!(
            out,
            "     1\tfirst\n     2\t\tsecond\n     3\t\n     4\tlast\n"
        );
    }

    #[tokio::test]
    async fn asks_the_gate_with_the_resolved_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/f.txt"), "x\n").unwrap();
        let (cx, gate) = testing::allow(&root.join("sub"));
        read(&cx, json!({"path": "../sub/./f.txt"})).await.unwrap();
        assert_eq!(
            gate.requests(),
            [GateRequest::Read {
                path: root.join("sub/f.txt")
            }]
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn gate_sees_the_target_of_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("target.txt"), "x\n").unwrap();
        std::os::unix::fs::symlink(root.join("target.txt"), root.join("link.txt")).unwrap();
        let (cx, gate) = testing::allow(&root);
        read(&cx, json!({"path": "link.txt"})).await.unwrap();
        assert_eq!(
            gate.requests(),
            [GateRequest::Read {
                path: root.join("target.txt")
            }]
        );
    }

    #[tokio::test]
    async fn denied_read_returns_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), "hunter2\n").unwrap();
        let (cx, gate) = testing::deny(dir.path());
        let err = read(&cx, json!({"path": "secret"})).await.unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
        assert_eq!(gate.requests().len(), 1);
    }

    #[tokio::test]
    async fn offset_and_limit_select_a_range_and_say_how_to_continue() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("f"), text).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "f", "offset": 3, "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            out,
            "     3\tline 3\n     4\tline 4\n\n[Showed lines 3-4 of f; more lines follow. Call \
             read with offset=5 to continue.]\n"
        );
        let out = read(&cx, json!({"path": "f", "offset": 9, "limit": 2}))
            .await
            .unwrap();
        assert_eq!(out, "     9\tline 9\n    10\tline 10\n");
        let out = read(&cx, json!({"path": "f", "offset": 0, "limit": 1}))
            .await
            .unwrap();
        assert!(out.starts_with("     1\tline 1\n"), "{out}");
    }

    #[tokio::test]
    async fn offset_past_the_end_and_zero_limit_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a\nb\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "f", "offset": 5}))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "f has only 2 lines, so offset 5 is past its end"
        );
        let err = read(&cx, json!({"path": "f", "limit": 0}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err:?}");
        let err = read(&cx, json!({"file": "f"})).await.unwrap_err();
        assert!(err.to_string().contains("missing field `path`"), "{err}");
    }

    #[tokio::test]
    async fn default_limit_is_two_thousand_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big"), "x\n".repeat(2500)).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "big"})).await.unwrap();
        assert_eq!(out.lines().filter(|l| l.ends_with("\tx")).count(), 2000);
        assert!(
            out.contains("Call read with offset=2001 to continue."),
            "{out}"
        );
    }

    #[tokio::test]
    async fn long_lines_are_truncated_with_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let long = "é".repeat(5000);
        std::fs::write(dir.path().join("f"), format!("short\n{long}\nend\n")).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "f"})).await.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "     1\tshort");
        let expected = format!(
            "     2\t{} [... line truncated to 2000 characters; it has 10000 bytes]",
            "é".repeat(2000)
        );
        assert_eq!(lines[1], expected);
        assert_eq!(lines[2], "     3\tend");
    }

    #[tokio::test]
    async fn a_huge_line_without_newlines_is_streamed_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("min.js"), "a".repeat(3 * 1024 * 1024)).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "min.js"})).await.unwrap();
        assert!(out.len() < 2100, "{}", out.len());
        assert!(out.contains("it has 3145728 bytes"), "{out}");
    }

    #[tokio::test]
    async fn output_is_capped_in_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let line = "y".repeat(1999);
        std::fs::write(dir.path().join("f"), format!("{line}\n").repeat(1000)).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "f"})).await.unwrap();
        assert!(out.len() <= MAX_OUTPUT_BYTES + 300, "{}", out.len());
        assert!(
            out.contains("capped at 256 KiB"),
            "{}",
            &out[out.len() - 200..]
        );
        let shown = out.lines().filter(|l| l.ends_with('y')).count();
        assert!(out.contains(&format!("offset={} to continue", shown + 1)));
    }

    #[tokio::test]
    async fn crlf_endings_and_bom_are_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.txt"), "\u{feff}one\r\ntwo\r\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = read(&cx, json!({"path": "w.txt"})).await.unwrap();
        assert_eq!(out, "     1\tone\n     2\ttwo\n");
    }

    #[tokio::test]
    async fn binary_files_are_refused_with_their_size() {
        let dir = tempfile::tempdir().unwrap();
        // A zip: binary, and no picture or PDF.
        std::fs::write(
            dir.path().join("a.png"),
            b"PK\x03\x04\x14\0\0\0\x08\0\0\0\0\0\0\0",
        )
        .unwrap();
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "a.png"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "a.png is a binary file (16 bytes), not UTF-8 text; the file tools only handle text"
        );
        let err = read(&cx, json!({"path": "latin1.txt"})).await.unwrap_err();
        assert!(err.to_string().contains("binary file (5 bytes)"), "{err}");
    }

    /// A picture of noise (so its encoding is not tiny) in `format`.
    fn picture(width: u32, height: u32, format: image::ImageFormat) -> Vec<u8> {
        let pixels = image::RgbImage::from_fn(width, height, |x, y| {
            let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) as u8;
            image::Rgb([v, v.wrapping_mul(3), v.wrapping_add(y as u8)])
        });
        let mut out = io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(pixels)
            .write_to(&mut out, format)
            .unwrap();
        out.into_inner()
    }

    /// A two-page PDF, written by hand.
    const PDF: &[u8] = b"%PDF-1.4\n\
        1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
        2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj\n\
        3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj\n\
        4 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj\n\
        trailer << /Root 1 0 R >>\n%%EOF\n";

    #[tokio::test]
    async fn a_picture_is_shown_to_the_model_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let png = picture(40, 30, image::ImageFormat::Png);
        std::fs::create_dir(dir.path().join("shots")).unwrap();
        std::fs::write(dir.path().join("shots/login.png"), &png).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = ReadTool
            .call(json!({"path": "shots/login.png", "offset": 5}), &cx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            format!(
                "Image read: shots/login.png (PNG, 40x30 pixels, {}). It is attached to this \
                 result for you to look at.",
                human_size(png.len() as u64)
            )
        );
        let [shown] = &out.media[..] else {
            panic!("one picture: {:?}", out.media)
        };
        assert_eq!(shown.data.as_deref(), Some(&png[..]));
        assert_eq!(shown.about.media_type, "image/png");
        assert_eq!(shown.about.kind, AttachmentKind::Image);
        assert_eq!(shown.about.name, "login.png");
        assert_eq!(
            (shown.about.width, shown.about.height),
            (Some(40), Some(30))
        );
        assert_eq!(
            out.details.origin,
            Some(MediaOrigin {
                size: png.len() as u64,
                width: Some(40),
                height: Some(30)
            })
        );
    }

    #[tokio::test]
    async fn a_picture_is_told_by_its_bytes_not_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let jpeg = picture(64, 48, image::ImageFormat::Jpeg);
        std::fs::write(dir.path().join("photo.txt"), &jpeg).unwrap();
        std::fs::write(dir.path().join("notes.jpg"), "not a picture\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = ReadTool
            .call(json!({"path": "photo.txt"}), &cx)
            .await
            .unwrap();
        assert!(
            out.content
                .starts_with("Image read: photo.txt (JPEG, 64x48 pixels, "),
            "{}",
            out.content
        );
        assert_eq!(out.media[0].about.media_type, "image/jpeg");
        assert_eq!(out.media[0].data.as_deref(), Some(&jpeg[..]));
        assert_eq!(
            read(&cx, json!({"path": "notes.jpg"})).await.unwrap(),
            "     1\tnot a picture\n"
        );
    }

    #[tokio::test]
    async fn a_picture_too_large_for_providers_is_scaled_down() {
        let dir = tempfile::tempdir().unwrap();
        let png = picture(1500, 1500, image::ImageFormat::Png);
        assert!(png.len() as u64 > media::SEND_IMAGE_BYTES, "{}", png.len());
        std::fs::write(dir.path().join("big.png"), &png).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = ReadTool
            .call(json!({"path": "big.png"}), &cx)
            .await
            .unwrap();
        let sent = &out.media[0].about;
        assert!(sent.size <= media::SEND_IMAGE_BYTES, "{}", sent.size);
        assert_eq!(sent.media_type, "image/jpeg");
        assert_eq!(
            out.content,
            format!(
                "Image read: big.png (PNG, 1500x1500 pixels, {}; scaled down to JPEG, \
                 {}x{} pixels, {} to fit what models take). It is attached to this result for \
                 you to look at.",
                human_size(png.len() as u64),
                sent.width.unwrap(),
                sent.height.unwrap(),
                human_size(sent.size)
            )
        );
        assert_eq!(out.details.origin.unwrap().size, png.len() as u64);
    }

    #[tokio::test]
    async fn a_pdf_is_shown_whole_with_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spec.pdf"), PDF).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = ReadTool
            .call(json!({"path": "spec.pdf"}), &cx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            format!(
                "PDF read: spec.pdf (2 pages, {}). It is attached to this result for you to read.",
                human_size(PDF.len() as u64)
            )
        );
        assert_eq!(out.media[0].about.kind, AttachmentKind::Document);
        assert_eq!(out.media[0].about.media_type, "application/pdf");
        assert_eq!(out.media[0].about.pages, Some(2));
        assert_eq!(out.media[0].data.as_deref(), Some(PDF));
    }

    #[tokio::test]
    async fn a_pdf_over_the_limit_is_refused_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("huge.pdf")).unwrap();
        (&file).write_all(PDF).unwrap();
        // Sparse: the size is checked before anything past the first bytes is read.
        file.set_len(MAX_DOCUMENT_BYTES + 1).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "huge.pdf"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "huge.pdf is {} — over the 20.0 MB a model is shown of one document: take the \
                 pages you need into a smaller PDF (qpdf, pdfseparate) or its text (pdftotext) \
                 and read that",
                human_size(MAX_DOCUMENT_BYTES + 1)
            )
        );
    }

    #[tokio::test]
    async fn a_broken_picture_says_it_cannot_be_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "img.png"})).await.unwrap_err();
        assert!(
            err.to_string()
                .starts_with("img.png could not be read as an image"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_picture_asks_the_gate_like_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.png"), picture(2, 2, image::ImageFormat::Png)).unwrap();
        let (cx, gate) = testing::allow(&root);
        ReadTool.call(json!({"path": "a.png"}), &cx).await.unwrap();
        assert_eq!(
            gate.requests(),
            [GateRequest::Read {
                path: root.join("a.png")
            }]
        );
        let (cx, _) = testing::deny(&root);
        let err = ReadTool
            .call(json!({"path": "a.png"}), &cx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
    }

    #[tokio::test]
    async fn empty_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("e"), "").unwrap();
        let cx = ToolCx::permissive(dir.path());
        assert_eq!(
            read(&cx, json!({"path": "e"})).await.unwrap(),
            "(e is empty)"
        );
    }

    #[tokio::test]
    async fn directory_suggests_ls() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "src"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "src is a directory, not a file; use ls to list it"
        );
    }

    #[tokio::test]
    async fn missing_file_suggests_close_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "cargo.toml"})).await.unwrap_err();
        let message = err.to_string();
        assert!(message.contains("cargo.toml does not exist."), "{message}");
        assert!(message.contains("Did you mean"), "{message}");
        assert!(message.contains("Cargo.toml?"), "{message}");
        assert!(message.contains("Relative paths start at"), "{message}");
        let err = read(&cx, json!({"path": ""})).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err:?}");
    }

    #[tokio::test]
    async fn a_cancelled_call_stops() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a\n".repeat(10)).unwrap();
        let cx = ToolCx::permissive(dir.path());
        cx.cancel.cancel();
        assert_eq!(
            read(&cx, json!({"path": "f"})).await.unwrap_err(),
            ToolError::Cancelled
        );
    }

    #[test]
    fn next_line_keeps_at_most_the_cap_and_reports_the_full_length() {
        let mut reader = io::Cursor::new(b"abcdef\r\nxy\r\n\nlast".to_vec());
        let mut buf = Vec::new();
        assert_eq!(next_line(&mut reader, 3, &mut buf).unwrap(), Some(6));
        assert_eq!(buf, b"abc");
        assert_eq!(next_line(&mut reader, 3, &mut buf).unwrap(), Some(2));
        assert_eq!(buf, b"xy");
        assert_eq!(next_line(&mut reader, 3, &mut buf).unwrap(), Some(0));
        assert_eq!(next_line(&mut reader, 3, &mut buf).unwrap(), Some(4));
        assert_eq!(buf, b"las");
        assert_eq!(next_line(&mut reader, 3, &mut buf).unwrap(), None);
    }
}
