//! What a client sends, read beneath the WebSocket library, for the two requests it would
//! answer badly: one over the message limit (the library answers `id: null`, so a client
//! that matches replies by id waits forever) and one whose `id` JSON-RPC does not allow (an
//! object, an array, a boolean: the library takes it for a notification and says nothing).
//!
//! [`Inbound`] passes the bytes through as they come, and follows the frames (RFC 6455) to
//! read each message's top-level `id` as it streams past, without keeping the message. A
//! message over the limit is not handed on: in its place the library gets a small request,
//! `rpc.tooLarge` with the `id` found, which [`crate::server`]'s middleware answers with
//! `-32007`. A message whose `id` is not allowed goes on as it is (the library drops it), and
//! `rpc.invalidRequest` with `id: null` follows it, answered with `-32600`. A message sent in
//! fragments is held until its last fragment, so that one that grows past the limit is never
//! half handed on.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The method the library is handed in place of a message over the limit.
pub const TOO_LARGE_METHOD: &str = "rpc.tooLarge";
/// The method that follows a message whose `id` JSON-RPC does not allow.
pub const INVALID_REQUEST_METHOD: &str = "rpc.invalidRequest";

/// The longest `id` carried over to a reply, in bytes of JSON; a longer one is answered with
/// `id: null`.
const MAX_ID_BYTES: usize = 1024;

/// A client's stream with its messages followed: reads go through [`Framer`], writes go
/// straight to the stream.
pub struct Inbound<S> {
    inner: S,
    framer: Framer,
    input: Box<[u8]>,
}

impl<S> Inbound<S> {
    pub fn new(inner: S, limit: u64) -> Inbound<S> {
        Inbound {
            inner,
            framer: Framer::new(limit),
            input: vec![0; 64 * 1024].into_boxed_slice(),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Inbound<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.framer.has_output() {
                this.framer.take_output(buf);
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.input);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                return Poll::Ready(Ok(()));
            }
            this.framer.push(read.filled());
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Inbound<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The client's bytes in, the bytes the WebSocket library is to read out.
pub(crate) struct Framer {
    limit: u64,
    state: State,
    /// The data message under way, from its first frame to its last.
    message: Option<Message>,
    out: Vec<u8>,
    /// How much of `out` was read already.
    read: usize,
    /// The frame under way ends its message.
    last: bool,
}

enum State {
    /// The HTTP upgrade request, passed on whole: how much of its blank line was seen.
    Handshake(usize),
    /// A frame's header, until it is whole.
    Header(Vec<u8>),
    Payload {
        left: u64,
        mask: Option<[u8; 4]>,
        /// Where in the mask the next byte is.
        at: usize,
        what: Bytes,
    },
}

#[derive(Clone, Copy, PartialEq)]
enum Bytes {
    /// A control frame (or one the library will refuse): passed on, not followed.
    Control,
    /// A frame of the message: passed on (or held, when the message is fragmented) and read.
    Data,
    /// A frame of a message over the limit: read for its id, not passed on.
    Dropped,
}

struct Message {
    /// Payload bytes so far.
    bytes: u64,
    scan: IdScan,
    /// The frames (as sent) of a fragmented message, until its last.
    held: Option<Vec<u8>>,
    over: bool,
}

impl Framer {
    pub(crate) fn new(limit: u64) -> Framer {
        Framer {
            limit,
            state: State::Handshake(0),
            message: None,
            out: Vec::new(),
            read: 0,
            last: false,
        }
    }

    fn has_output(&self) -> bool {
        self.read < self.out.len()
    }

    fn take_output(&mut self, buf: &mut ReadBuf<'_>) {
        let n = buf.remaining().min(self.out.len() - self.read);
        buf.put_slice(&self.out[self.read..self.read + n]);
        self.read += n;
        if self.read == self.out.len() {
            self.out.clear();
            self.read = 0;
            // A held message released whole left a large buffer: not kept for the
            // connection's life.
            if self.out.capacity() > 1024 * 1024 {
                self.out.shrink_to(64 * 1024);
            }
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            bytes = match &mut self.state {
                State::Handshake(seen) => {
                    const END: &[u8] = b"\r\n\r\n";
                    let mut used = 0;
                    while used < bytes.len() && *seen < END.len() {
                        *seen = if bytes[used] == END[*seen] {
                            *seen + 1
                        } else if bytes[used] == b'\r' {
                            1
                        } else {
                            0
                        };
                        used += 1;
                    }
                    self.out.extend_from_slice(&bytes[..used]);
                    if *seen == END.len() {
                        self.state = State::Header(Vec::with_capacity(14));
                    }
                    &bytes[used..]
                }
                State::Header(header) => {
                    let want = header_len(header);
                    let used = (want - header.len()).min(bytes.len());
                    header.extend_from_slice(&bytes[..used]);
                    if header.len() == header_len(header) {
                        let header = std::mem::take(header);
                        self.frame(&header);
                    }
                    &bytes[used..]
                }
                State::Payload {
                    left,
                    mask,
                    at,
                    what,
                } => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(bytes.len());
                    let (chunk, rest) = bytes.split_at(n);
                    let what = *what;
                    if what != Bytes::Control {
                        if let Some(message) = &mut self.message {
                            message.read(chunk, *mask, *at);
                            if what == Bytes::Data {
                                match &mut message.held {
                                    Some(held) => held.extend_from_slice(chunk),
                                    None => self.out.extend_from_slice(chunk),
                                }
                            }
                        }
                    } else {
                        self.out.extend_from_slice(chunk);
                    }
                    *at = (*at + n) % 4;
                    *left -= n as u64;
                    if *left == 0 {
                        self.frame_done();
                    }
                    rest
                }
            };
        }
    }

    /// A whole header: decide what becomes of the frame.
    fn frame(&mut self, header: &[u8]) {
        let fin = header[0] & 0x80 != 0;
        let opcode = header[0] & 0x0F;
        let masked = header[1] & 0x80 != 0;
        let len = match header[1] & 0x7F {
            126 => u64::from(u16::from_be_bytes([header[2], header[3]])),
            127 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&header[2..10]);
                u64::from_be_bytes(b)
            }
            n => u64::from(n),
        };
        let mask = masked.then(|| {
            let m = &header[header.len() - 4..];
            [m[0], m[1], m[2], m[3]]
        });
        let what = match opcode {
            // A first frame, text or binary. One that interrupts a fragmented message breaks
            // the framing: what was held goes on, for the library to refuse.
            1 | 2 => {
                if let Some(held) = self.message.take().and_then(|m| m.held) {
                    self.out.extend_from_slice(&held);
                }
                self.message = Some(Message {
                    bytes: 0,
                    scan: IdScan::default(),
                    held: (!fin).then(Vec::new),
                    over: false,
                });
                Bytes::Data
            }
            // A continuation, of the message under way (the library refuses a stray one).
            0 if self.message.is_some() => Bytes::Data,
            _ => Bytes::Control,
        };
        let what = match (what, &mut self.message) {
            (Bytes::Data, Some(message)) => {
                message.bytes = message.bytes.saturating_add(len);
                if message.bytes > self.limit && !message.over {
                    message.over = true;
                    message.held = None;
                }
                if message.over {
                    Bytes::Dropped
                } else {
                    if let Some(held) = &mut message.held {
                        held.extend_from_slice(header);
                    } else {
                        self.out.extend_from_slice(header);
                    }
                    Bytes::Data
                }
            }
            _ => {
                self.out.extend_from_slice(header);
                Bytes::Control
            }
        };
        // The last frame of a message is `fin`; a control frame never ends one.
        self.last = fin && what != Bytes::Control;
        self.state = State::Payload {
            left: len,
            mask,
            at: 0,
            what,
        };
        if len == 0 {
            self.frame_done();
        }
    }

    /// A frame's payload has passed: when it was its message's last, hand the message on
    /// (or what stands for it).
    fn frame_done(&mut self) {
        self.state = State::Header(Vec::with_capacity(14));
        if !std::mem::take(&mut self.last) {
            return;
        }
        let Some(message) = self.message.take() else {
            return;
        };
        if message.over {
            let id = message.scan.id().unwrap_or("null");
            let request = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{TOO_LARGE_METHOD}","params":{{"bytes":{}}}}}"#,
                message.bytes
            );
            push_frame(&mut self.out, request.as_bytes());
            return;
        }
        if let Some(held) = message.held {
            self.out.extend_from_slice(&held);
        }
        // Only what the library takes for a notification is otherwise left unanswered.
        if message.scan.found == Found::Invalid && message.scan.request_shaped() {
            let request =
                format!(r#"{{"jsonrpc":"2.0","id":null,"method":"{INVALID_REQUEST_METHOD}"}}"#);
            push_frame(&mut self.out, request.as_bytes());
        }
    }
}

/// How long the header that starts with `header` is (at least 2 bytes).
fn header_len(header: &[u8]) -> usize {
    if header.len() < 2 {
        return 2;
    }
    let extended = match header[1] & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if header[1] & 0x80 != 0 { 4 } else { 0 };
    2 + extended + mask
}

/// A whole text frame as a client sends it (masked, here with a mask of zeros).
fn push_frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.push(0x81);
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(payload);
}

impl Message {
    /// Payload bytes as sent, `at` bytes into the mask.
    fn read(&mut self, chunk: &[u8], mask: Option<[u8; 4]>, at: usize) {
        if self.scan.done() {
            return;
        }
        for (i, &b) in chunk.iter().enumerate() {
            let b = match mask {
                Some(m) => b ^ m[(at + i) % 4],
                None => b,
            };
            self.scan.byte(b);
            if self.scan.done() {
                return;
            }
        }
    }
}

/// What a message's top-level `id` is, read a byte at a time.
#[derive(Default)]
struct IdScan {
    phase: Phase,
    /// Depth inside the value being skipped (objects and arrays).
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The key being read (only its first bytes matter).
    key: Vec<u8>,
    /// The `id` value, as JSON text.
    id: Vec<u8>,
    found: Found,
    /// The top-level keys `jsonrpc` and `method` were seen, and the object closed.
    jsonrpc: bool,
    method: bool,
    closed: bool,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Phase {
    #[default]
    Start,
    Key,
    InKey,
    Colon,
    Value,
    /// Inside a value; `true` when it is the `id`'s.
    InValue(bool),
    Comma,
    Done,
}

#[derive(Default, Clone, Copy, PartialEq, Debug)]
enum Found {
    /// Not read yet, or not an object.
    #[default]
    Unknown,
    Valid,
    /// `id` is there and JSON-RPC (or the library) does not take it.
    Invalid,
}

impl IdScan {
    fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The `id`'s JSON, when one JSON-RPC takes was found.
    fn id(&self) -> Option<&str> {
        (self.found == Found::Valid)
            .then(|| std::str::from_utf8(&self.id).ok())
            .flatten()
    }

    fn byte(&mut self, b: u8) {
        let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match self.phase {
            Phase::Start if space => {}
            Phase::Start if b == b'{' => self.phase = Phase::Key,
            Phase::Key if space || b == b',' => {}
            Phase::Key if b == b'"' => {
                self.key.clear();
                self.phase = Phase::InKey;
            }
            // Only a key's first eight bytes are kept: enough to tell `id`, `method` and
            // `jsonrpc` from the rest. An escaped one is never taken for them.
            Phase::InKey if self.escaped => {
                self.escaped = false;
                self.key.push(0);
            }
            Phase::InKey if b == b'\\' => self.escaped = true,
            Phase::InKey if b == b'"' => {
                self.jsonrpc |= self.key == b"jsonrpc";
                self.method |= self.key == b"method";
                self.phase = Phase::Colon;
            }
            Phase::InKey if self.key.len() < 8 => self.key.push(b),
            Phase::InKey => {}
            Phase::Colon if space => {}
            Phase::Colon if b == b':' => self.phase = Phase::Value,
            Phase::Value if space => {}
            Phase::Value => {
                let is_id = self.key == b"id";
                self.phase = Phase::InValue(is_id);
                if is_id && matches!(b, b'{' | b'[' | b't' | b'f') {
                    // Read on to the end: whether the rest makes it a request matters.
                    self.found = Found::Invalid;
                    self.phase = Phase::InValue(false);
                    self.value_byte(b, false, true);
                    return;
                }
                self.value_byte(b, is_id, true);
            }
            Phase::InValue(is_id) => self.value_byte(b, is_id, false),
            Phase::Comma if space => {}
            Phase::Comma if b == b',' => self.phase = Phase::Key,
            Phase::Comma | Phase::Key if b == b'}' => {
                self.closed = true;
                self.phase = Phase::Done;
            }
            // The object ended (or is not one): no `id` to find, or a text the library will
            // refuse on its own.
            _ => self.phase = Phase::Done,
        }
    }

    /// A byte of a key's value; a primitive value ends at the byte after it.
    fn value_byte(&mut self, b: u8, is_id: bool, first: bool) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            if is_id {
                self.keep(b);
            }
            if !self.in_string && self.depth == 0 {
                self.value_done(is_id);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if is_id {
                    self.keep(b);
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 {
                    self.value_done(is_id);
                }
            }
            _ if self.depth > 0 => {}
            // A number or `null` ends at what follows it.
            b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}' if !first => {
                self.value_done(is_id);
                self.byte(b);
            }
            _ => {
                if is_id {
                    self.keep(b);
                }
            }
        }
    }

    fn keep(&mut self, b: u8) {
        if self.id.len() <= MAX_ID_BYTES {
            self.id.push(b);
        }
    }

    /// Whether the message is an object with `jsonrpc` and `method` (what a request has).
    fn request_shaped(&self) -> bool {
        self.closed && self.jsonrpc && self.method
    }

    fn value_done(&mut self, is_id: bool) {
        self.phase = Phase::Comma;
        if !is_id {
            return;
        }
        // What the library takes as an id: a string, an integer that fits in 64 bits, null.
        let taken = self.id.len() <= MAX_ID_BYTES
            && match serde_json::from_slice::<serde_json::Value>(&self.id) {
                Ok(serde_json::Value::String(_) | serde_json::Value::Null) => true,
                Ok(serde_json::Value::Number(n)) => n.is_u64(),
                _ => false,
            };
        self.found = if taken {
            Found::Valid
        } else if self.id.len() > MAX_ID_BYTES {
            Found::Unknown
        } else {
            Found::Invalid
        };
        // A usable id is all there is to learn; past an unusable one, read on.
        if self.found == Found::Valid {
            self.phase = Phase::Done;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> (Found, Option<String>) {
        let mut s = IdScan::default();
        for b in text.bytes() {
            s.byte(b);
            if s.done() {
                break;
            }
        }
        (s.found, s.id().map(str::to_string))
    }

    #[test]
    fn finds_the_top_level_id_wherever_it_stands() {
        let valid = |t: &str, id: &str| assert_eq!(scan(t), (Found::Valid, Some(id.into())), "{t}");
        valid(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#, "7");
        valid(
            r#"{"params":{"id":{"x":1},"s":"\"id\":3"},"id":"a\"b"}"#,
            r#""a\"b""#,
        );
        valid(
            r#" { "method" : "x" , "params" : [1,{"id":2}] , "id" : 42 } "#,
            "42",
        );
        valid(r#"{"id":null,"method":"x"}"#, "null");
        valid(r#"{"method":"x","id":12}"#, "12");
    }

    #[test]
    fn tells_an_id_json_rpc_does_not_take() {
        for text in [
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
            r#"{"id":[1],"method":"x"}"#,
            r#"{"id":true,"method":"x"}"#,
            r#"{"id":-1,"method":"x"}"#,
            r#"{"id":1.5,"method":"x"}"#,
        ] {
            assert_eq!(scan(text).0, Found::Invalid, "{text}");
        }
        // A notification has none; a batch or garbage is the library's to refuse.
        for text in [
            r#"{"method":"x"}"#,
            r#"[{"id":{}}]"#,
            "garbage",
            r#"{"idx":{}}"#,
        ] {
            assert_eq!(scan(text).0, Found::Unknown, "{text}");
        }
        // Refused by the library already (no method): nothing to add.
        let mut s = IdScan::default();
        r#"{"jsonrpc":"2.0","id":{"method":1}}"#
            .bytes()
            .for_each(|b| s.byte(b));
        assert!(s.found == Found::Invalid && !s.request_shaped());
        let mut s = IdScan::default();
        r#"{"jsonrpc":"2.0","id":[1,{"a":"}"}],"method":"x"}"#
            .bytes()
            .for_each(|b| s.byte(b));
        assert!(s.found == Found::Invalid && s.request_shaped());
    }

    fn frame(payload: &[u8], opcode: u8, fin: bool) -> Vec<u8> {
        let mask = [1u8, 2, 3, 4];
        let mut f = vec![(if fin { 0x80 } else { 0 }) | opcode];
        match payload.len() {
            n if n < 126 => f.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                f.push(0x80 | 126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(0x80 | 127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(&mask);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        f
    }

    /// Feed `input` a few bytes at a time (the way reads split it), return the output.
    fn run(limit: u64, input: &[u8], step: usize) -> Vec<u8> {
        let mut framer = Framer::new(limit);
        for chunk in input.chunks(step) {
            framer.push(chunk);
        }
        framer.out[framer.read..].to_vec()
    }

    const HELLO: &[u8] = b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n";

    #[test]
    fn passes_what_it_does_not_change_as_it_came() {
        let mut input = HELLO.to_vec();
        input.extend(frame(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#, 1, true));
        input.extend(frame(b"ping", 9, true));
        input.extend(frame(br#"{"jsonrpc":"2.0","#, 1, false));
        input.extend(frame(b"ping", 9, true));
        input.extend(frame(br#""id":2,"method":"b"}"#, 0, true));
        for step in [1, 3, 7, 1000] {
            let out = run(1000, &input, step);
            // The control frame between the fragments goes first; the message is held whole.
            let mut expected = HELLO.to_vec();
            expected.extend(frame(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#, 1, true));
            expected.extend(frame(b"ping", 9, true));
            expected.extend(frame(b"ping", 9, true));
            expected.extend(frame(br#"{"jsonrpc":"2.0","#, 1, false));
            expected.extend(frame(br#""id":2,"method":"b"}"#, 0, true));
            assert_eq!(out, expected, "step {step}");
        }
    }

    #[test]
    fn a_message_over_the_limit_becomes_a_request_with_its_id() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"a","params":"{}","id":"k"}}"#,
            "x".repeat(300)
        );
        let mut input = HELLO.to_vec();
        input.extend(frame(big.as_bytes(), 1, true));
        input.extend(frame(br#"{"id":3}"#, 1, true));
        let out = run(100, &input, 5);
        let mut expected = HELLO.to_vec();
        let bytes = big.len();
        expected.extend(frame_unmasked(
            format!(r#"{{"jsonrpc":"2.0","id":"k","method":"rpc.tooLarge","params":{{"bytes":{bytes}}}}}"#)
                .as_bytes(),
        ));
        expected.extend(frame(br#"{"id":3}"#, 1, true));
        assert_eq!(out, expected);

        // In fragments, it is dropped when it crosses the limit, with nothing handed on.
        let mut input = HELLO.to_vec();
        input.extend(frame(br#"{"id":9,"params":""#, 1, false));
        input.extend(frame(&[b'x'; 90], 0, false));
        input.extend(frame(br#""}"#, 0, true));
        let out = run(100, &input, 4);
        let text = String::from_utf8_lossy(&out[HELLO.len() + 2 + 4..]).to_string();
        assert!(
            text.starts_with(r#"{"jsonrpc":"2.0","id":9,"method":"rpc.tooLarge""#),
            "{text}"
        );
        assert_eq!(out.len(), HELLO.len() + 6 + text.len());
    }

    #[test]
    fn an_id_json_rpc_does_not_take_is_followed_by_a_request_to_refuse_it() {
        let mut input = HELLO.to_vec();
        input.extend(frame(br#"{"jsonrpc":"2.0","id":{},"method":"a"}"#, 1, true));
        let out = run(1000, &input, 2);
        let mut expected = HELLO.to_vec();
        expected.extend(frame(br#"{"jsonrpc":"2.0","id":{},"method":"a"}"#, 1, true));
        expected.extend(frame_unmasked(
            br#"{"jsonrpc":"2.0","id":null,"method":"rpc.invalidRequest"}"#,
        ));
        assert_eq!(out, expected);
    }

    fn frame_unmasked(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        push_frame(&mut out, payload);
        out
    }
}
