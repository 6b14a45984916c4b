//! The read tool: a text file's lines numbered like `cat -n`. Lines are streamed and each is
//! kept only up to the display cap, so neither a huge file nor a huge line is loaded whole.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::Path;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{
    GateRequest, Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args,
};
use tokio_util::sync::CancellationToken;

use super::file::{BINARY_PROBE_BYTES, binary_error, check_regular, looks_binary};
use super::{blocking, path};

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
Reads a text file from the local file system and returns its lines numbered like `cat -n`.

Usage:
- `path` is absolute, or relative to the working directory.
- By default up to 2000 lines are returned, starting at the first. For a long file, pass \
`offset` (the 1-based line to start at) and `limit` (how many lines) to read the part you need; \
otherwise prefer reading the whole file.
- Lines longer than 2000 characters are cut off and marked as truncated.
- Each output line is: spaces, the line number, a tab, then the line's text. That prefix is not \
part of the file: never copy it into `old_string` when you edit.
- Only UTF-8 text files can be read; a binary file is refused with its size. A directory is \
refused too: use `ls` to list it.
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
            let content =
                blocking(move || numbered_lines(&path, &label, first, limit, &cancel)).await?;
            Ok(ToolOutput::text(content))
        })
    }
}

/// Lines `first..first + limit` of the file at `path`, numbered, with notes on what was left
/// out.
fn numbered_lines(
    path: &Path,
    label: &str,
    first: usize,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let io_failed = |e: io::Error| path::failed("read", path, &e);
    let mut file = File::open(path).map_err(|e| path::failed("open", path, &e))?;
    let meta = file.metadata().map_err(io_failed)?;
    check_regular(&meta, label)?;
    let size = meta.len();

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
        std::fs::write(dir.path().join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = read(&cx, json!({"path": "img.png"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "img.png is a binary file (16 bytes), not UTF-8 text; the file tools only handle text"
        );
        let err = read(&cx, json!({"path": "latin1.txt"})).await.unwrap_err();
        assert!(err.to_string().contains("binary file (5 bytes)"), "{err}");
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
