//! An incremental Server-Sent Events parser, shared by every wire format that streams SSE.
//!
//! Bytes go in as they arrive, in chunks cut anywhere; complete events come out. Follows the
//! WHATWG event-stream rules that providers use: `event:` and `data:` fields, multi-line
//! data joined by `\n`, comments and unknown fields ignored, `\n`, `\r\n` or `\r` line ends.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, empty when absent.
    pub event: String,
    pub data: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SseError {
    #[error("an event-stream line is not UTF-8")]
    NotUtf8,
    #[error("an event-stream line is longer than {0} bytes")]
    LineTooLong(usize),
}

/// The longest line accepted; a provider event is far smaller, so more means a broken stream.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    /// Where the scan for a line end resumes, so a long line is not rescanned per chunk.
    scanned: usize,
    /// A `\r` ended the previous chunk: a `\n` starting the next one belongs to it.
    skip_lf: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feed a chunk; complete events are pushed to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.skip_lf {
            self.skip_lf = false;
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
        }
        self.buf.extend_from_slice(chunk);
        // Lines are handled as borrowed slices of the buffer, taken out of `self` meanwhile:
        // a line costs no allocation of its own.
        let buf = std::mem::take(&mut self.buf);
        let mut start = 0;
        let mut i = self.scanned;
        let mut result = Ok(());
        while i < buf.len() {
            let b = buf[i];
            if b == b'\n' || b == b'\r' {
                let line_end = i;
                if b == b'\r' {
                    if i + 1 < buf.len() {
                        if buf[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                }
                match std::str::from_utf8(&buf[start..line_end]) {
                    Ok(line) => self.line(line, out),
                    Err(_) => {
                        result = Err(SseError::NotUtf8);
                        break;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buf = buf;
        result?;
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > MAX_LINE {
            return Err(SseError::LineTooLong(MAX_LINE));
        }
        Ok(())
    }

    /// The stream ended: an event not yet terminated by a blank line is dispatched, as
    /// providers sometimes omit the final blank line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let line = std::str::from_utf8(&rest)
                .map_err(|_| SseError::NotUtf8)?
                .to_owned();
            self.line(&line, out);
        }
        self.dispatch(out);
        Ok(())
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        } else {
            self.event.clear();
        }
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            p.feed(chunk, &mut out).unwrap();
        }
        p.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn events_survive_any_chunking_and_line_ending() {
        let input = "event: a\ndata: one\n\n: comment\nevent: b\r\ndata: two\r\ndata:three\r\n\r\n\
                     data: x\r\rretry: 5\nid: 1\ndata: last";
        let expected = vec![
            SseEvent {
                event: "a".into(),
                data: "one".into(),
            },
            SseEvent {
                event: "b".into(),
                data: "two\nthree".into(),
            },
            SseEvent {
                event: "".into(),
                data: "x".into(),
            },
            SseEvent {
                event: "".into(),
                data: "last".into(),
            },
        ];
        for size in 1..input.len() {
            assert_eq!(
                parse_in_chunks(input.as_bytes(), size),
                expected,
                "chunk size {size}"
            );
        }
    }

    #[test]
    fn multibyte_text_split_across_chunks() {
        let input = "data: héllo → 世界\n\n".as_bytes();
        for size in 1..input.len() {
            assert_eq!(parse_in_chunks(input, size)[0].data, "héllo → 世界");
        }
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        assert_eq!(
            p.feed(b"data: \xff\xfe\n", &mut out),
            Err(SseError::NotUtf8)
        );
    }
}
