//! A WebSocket client written from RFC 6455 with nothing but a blocking Unix socket: text
//! frames out (masked, as a client's must be), whole messages in (continuations joined, pings
//! answered). The conformance test speaks the protocol with it as an outside client would,
//! and the foundation bench times calls without the project's client library.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::TestEnv;

/// How long any one read may block before the test fails instead of hanging.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A WebSocket client over the daemon's Unix socket: text frames, masked as a client's must be.
pub struct Ws {
    stream: UnixStream,
    /// Notifications read while waiting for a reply, in arrival order.
    pub notifications: VecDeque<String>,
}

impl Ws {
    /// Connect and upgrade. Any path works; no subprotocol is asked for.
    pub fn connect(env: &TestEnv, path: &str) -> Ws {
        let mut stream = UnixStream::connect(env.places().socket).unwrap();
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: stepperd\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(
            head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            "the accept key of RFC 6455's example: {head}"
        );
        Ws {
            stream,
            notifications: VecDeque::new(),
        }
    }

    pub fn send(&mut self, text: &str) {
        self.send_fragments(&[text]);
    }

    /// One text message sent as a frame per part: the first a text frame, the others
    /// continuation frames, the last with FIN.
    pub fn send_fragments(&mut self, parts: &[&str]) {
        for (i, part) in parts.iter().enumerate() {
            let fin = if i + 1 == parts.len() { 0x80u8 } else { 0 };
            let opcode = if i == 0 { 0x1u8 } else { 0x0 };
            self.send_frame(fin | opcode, part.as_bytes());
        }
    }

    fn send_frame(&mut self, first: u8, payload: &[u8]) {
        let mut frame = vec![first];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).unwrap();
    }

    /// The next whole text message (continuation frames joined; pings answered).
    pub fn receive(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).unwrap();
            let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0F);
            assert_eq!(head[1] & 0x80, 0, "a server's frames are not masked");
            let len = match head[1] & 0x7F {
                126 => {
                    let mut b = [0u8; 2];
                    self.stream.read_exact(&mut b).unwrap();
                    u64::from(u16::from_be_bytes(b))
                }
                127 => {
                    let mut b = [0u8; 8];
                    self.stream.read_exact(&mut b).unwrap();
                    u64::from_be_bytes(b)
                }
                n => u64::from(n),
            };
            let mut payload = vec![0u8; usize::try_from(len).unwrap()];
            self.stream.read_exact(&mut payload).unwrap();
            match opcode {
                0x9 => {
                    // Ping: answer with a pong carrying the same data.
                    let mask = [0u8; 4];
                    let mut pong = vec![0x8A, 0x80 | payload.len() as u8];
                    pong.extend_from_slice(&mask);
                    pong.extend_from_slice(&payload);
                    self.stream.write_all(&pong).unwrap();
                }
                0xA => {}
                0x8 => panic!("the daemon closed the connection"),
                _ => {
                    message.extend_from_slice(&payload);
                    if fin {
                        return String::from_utf8(message).unwrap();
                    }
                }
            }
        }
    }

    /// Send a request and return its reply; notifications that come first are kept.
    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            request["params"] = params;
        }
        self.call_text(id, &request.to_string())
    }

    pub fn call_text(&mut self, id: u64, text: &str) -> Value {
        serde_json::from_str(&self.call_raw(id, text)).unwrap()
    }

    /// Send a request as text and return its reply as text (`id` null for a request the
    /// daemon could not read as one).
    pub fn call_raw(&mut self, id: u64, text: &str) -> String {
        self.send(text);
        loop {
            let message = self.receive();
            let value: Value = serde_json::from_str(&message).unwrap();
            if value.get("method").is_some() {
                self.notifications.push_back(message);
                continue;
            }
            assert_eq!(value["jsonrpc"], "2.0", "{message}");
            assert!(value["id"] == id || value["id"].is_null(), "{message}");
            return message;
        }
    }

    /// The next `session/event` notification: its subscription and its result as sent.
    pub fn event(&mut self) -> (Value, Box<RawValue>) {
        let message = match self.notifications.pop_front() {
            Some(m) => m,
            None => self.receive(),
        };
        #[derive(serde::Deserialize)]
        struct Notification {
            method: String,
            params: NotificationParams,
        }
        #[derive(serde::Deserialize)]
        struct NotificationParams {
            subscription: Value,
            result: Box<RawValue>,
        }
        let n: Notification = serde_json::from_str(&message).unwrap();
        assert_eq!(n.method, "session/event", "{message}");
        (n.params.subscription, n.params.result)
    }
}
