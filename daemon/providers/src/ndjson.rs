//! Lines of another agent CLI's output (`claude -p --output-format stream-json`, `codex
//! app-server`), reassembled from pipe chunks cut anywhere — mid-line and mid-UTF-8 — as
//! JSON values. A line that is not JSON (a warning the CLI prints) is kept as text, for a
//! notice, never an error; the last line is flushed when the stream ends without a newline.

/// One line of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Json(serde_json::Value),
    /// Not a protocol line: what the CLI said, as text (invalid UTF-8 replaced).
    Other(String),
}

/// The longest line kept whole; a longer one is a broken stream, given as `Other` with its
/// start.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct Lines {
    buf: Vec<u8>,
    /// Where the search for the next newline resumes.
    scanned: usize,
    /// The current line passed `MAX_LINE`: the rest of it is dropped.
    overlong: bool,
}

impl Lines {
    pub fn new() -> Lines {
        Lines::default()
    }

    /// Feed a chunk; each complete line goes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Line>) {
        self.buf.extend_from_slice(chunk);
        while let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
            let end = self.scanned + at;
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            self.scanned = 0;
            if std::mem::take(&mut self.overlong) {
                continue;
            }
            push(&line[..line.len() - 1], out);
        }
        self.scanned = self.buf.len();
        if self.buf.len() > MAX_LINE {
            let start = String::from_utf8_lossy(&self.buf[..256.min(self.buf.len())]).into_owned();
            out.push(Line::Other(format!(
                "[a line over {MAX_LINE} bytes was dropped; it began: {start}]"
            )));
            self.buf.clear();
            self.scanned = 0;
            self.overlong = true;
        }
    }

    /// The stream ended: its last line, when it had no newline.
    pub fn finish(&mut self, out: &mut Vec<Line>) {
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        if !std::mem::take(&mut self.overlong) {
            push(&rest, out);
        }
    }
}

fn push(line: &[u8], out: &mut Vec<Line>) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) if value.is_object() => out.push(Line::Json(value)),
        _ => out.push(Line::Other(
            String::from_utf8_lossy(line).trim().to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn all(chunks: &[&[u8]]) -> Vec<Line> {
        let mut lines = Lines::new();
        let mut out = Vec::new();
        for c in chunks {
            lines.feed(c, &mut out);
        }
        lines.finish(&mut out);
        out
    }

    #[test]
    fn lines_cut_anywhere_come_out_whole() {
        let text = "{\"type\":\"assistant\",\"text\":\"héllo — ✓\"}\n{\"type\":\"result\"}\n";
        let bytes = text.as_bytes();
        let expected = vec![
            Line::Json(json!({"type": "assistant", "text": "héllo — ✓"})),
            Line::Json(json!({"type": "result"})),
        ];
        // Every cut point, mid-UTF-8 included.
        for cut in 0..bytes.len() {
            assert_eq!(
                all(&[&bytes[..cut], &bytes[cut..]]),
                expected,
                "cut at {cut}"
            );
        }
        // A byte at a time.
        let one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(all(&one), expected);
    }

    #[test]
    fn the_last_line_without_a_newline_and_noise_between() {
        let out = all(&[
            b"Warning: update available\r\n",
            b"\n{\"type\":\"system\"}\n",
            b"[1, 2]\n",
            b"{\"type\":\"result\",\"ok\":true}",
        ]);
        assert_eq!(
            out,
            vec![
                Line::Other("Warning: update available".into()),
                Line::Json(json!({"type": "system"})),
                Line::Other("[1, 2]".into()),
                Line::Json(json!({"type": "result", "ok": true})),
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_text_not_a_failure() {
        let out = all(&[b"\xff\xfe oops\n{\"a\":1}\n"]);
        assert!(matches!(&out[0], Line::Other(t) if t.contains("oops")));
        assert_eq!(out[1], Line::Json(json!({"a": 1})));
    }
}
