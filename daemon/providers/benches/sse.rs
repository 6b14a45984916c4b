//! SSE parsing, per wire format: throughput (MB/s) next to the raw rate of reading the same
//! bytes, and the latency an event gains between arriving on a socket and coming out as a
//! `ChatEvent`, next to the same socket round trip without decoding.
//!
//! `cargo bench -p stepper-providers --bench sse`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use stepper_providers::anthropic::AnthropicWire;
use stepper_providers::openai::ResponsesWire;
use stepper_providers::openai_chat::ChatCompletionsWire;
use stepper_providers::stream::{SseDecoder, WireFormat};

const TARGET_BYTES: usize = 16 * 1024 * 1024;
const CHUNK: usize = 16 * 1024;
const ROUND_TRIPS: usize = 5000;

/// One text-delta event in each format, as a provider sends it.
fn anthropic_event(i: usize) -> String {
    format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"token{i} \"}}}}\n\n"
    )
}

fn responses_event(i: usize) -> String {
    format!(
        "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{i},\"item_id\":\"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654\",\"output_index\":0,\"content_index\":0,\"delta\":\"token{i} \"}}\n\n"
    )
}

fn chat_event(i: usize) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token{i} \"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    )
}

fn body(event: fn(usize) -> String) -> (Vec<u8>, usize) {
    let mut bytes = Vec::with_capacity(TARGET_BYTES + 1024);
    let mut n = 0;
    while bytes.len() < TARGET_BYTES {
        bytes.extend_from_slice(event(n).as_bytes());
        n += 1;
    }
    (bytes, n)
}

fn best_of<F: FnMut() -> usize>(runs: usize, mut f: F) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut out = 0;
    for _ in 0..runs {
        let t = Instant::now();
        out = std::hint::black_box(f());
        best = best.min(t.elapsed());
    }
    (best, out)
}

fn throughput<W: WireFormat>(name: &str, event: fn(usize) -> String, wire: fn() -> W) {
    let (bytes, events) = body(event);
    let mb = bytes.len() as f64 / (1024.0 * 1024.0);
    let (raw, lines) = best_of(5, || {
        bytes
            .chunks(CHUNK)
            .map(|c| c.iter().filter(|b| **b == b'\n').count())
            .sum()
    });
    assert!(lines >= events);
    let (parsed, count) = best_of(5, || {
        let mut decoder = SseDecoder::new(wire());
        let mut out = VecDeque::new();
        let mut n = 0;
        for c in bytes.chunks(CHUNK) {
            decoder.feed(c, &mut out);
            n += out.drain(..).filter(|e| e.is_ok()).count();
        }
        n
    });
    assert_eq!(count, events, "{name}: every event decoded");
    let raw_rate = mb / raw.as_secs_f64();
    let rate = mb / parsed.as_secs_f64();
    println!(
        "  {name:<18} {rate:>8.0} MB/s ({:>5.2} M events/s)   raw read {raw_rate:>8.0} MB/s   parse/raw {:.3}",
        events as f64 / parsed.as_secs_f64() / 1e6,
        rate / raw_rate
    );
}

/// Ping-pong over loopback TCP: the writer sends one event and waits for one byte back; the
/// reader answers when it has the event — decoded to a `ChatEvent`, or merely read to its
/// blank line. The difference is what decoding adds to each event's latency.
fn latency<W: WireFormat>(name: &str, event: fn(usize) -> String, wire: fn() -> W) {
    let run = |decode: bool| -> Duration {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut decoder = SseDecoder::new(wire());
            let mut out = VecDeque::new();
            let mut buf = [0u8; 4096];
            let mut pending = Vec::new();
            loop {
                let n = match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let ready = if decode {
                    decoder.feed(&buf[..n], &mut out);
                    let k = out.len();
                    out.clear();
                    k
                } else {
                    pending.extend_from_slice(&buf[..n]);
                    let k = pending.windows(2).filter(|w| w == b"\n\n").count();
                    if k > 0 {
                        pending.clear();
                    }
                    k
                };
                for _ in 0..ready {
                    s.write_all(b"!").unwrap();
                }
            }
        });
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let events: Vec<String> = (0..ROUND_TRIPS + 200).map(event).collect();
        let mut ack = [0u8; 1];
        let mut times = Vec::with_capacity(ROUND_TRIPS);
        for (i, e) in events.iter().enumerate() {
            let t = Instant::now();
            s.write_all(e.as_bytes()).unwrap();
            s.read_exact(&mut ack).unwrap();
            if i >= 200 {
                times.push(t.elapsed());
            }
        }
        drop(s);
        reader.join().unwrap();
        times.sort();
        times[times.len() / 2]
    };
    let bare = run(false);
    let decoded = run(true);
    // The decoder's own share, timed event by event in-process (the socket is the same
    // for both round trips above, so their difference is noise plus this).
    let mut decoder = SseDecoder::new(wire());
    let mut out = VecDeque::new();
    let mut per_event: Vec<Duration> = (0..ROUND_TRIPS)
        .map(|i| {
            let bytes = event(i);
            let t = Instant::now();
            decoder.feed(bytes.as_bytes(), &mut out);
            let elapsed = t.elapsed();
            assert_eq!(out.drain(..).count(), 1);
            elapsed
        })
        .collect();
    per_event.sort();
    println!(
        "  {name:<18} socket round trip p50: bytes only {bare:>7.1?}, to ChatEvent {decoded:>7.1?}; decode per event p50 {:>6.2?} p99 {:>6.2?}",
        per_event[per_event.len() / 2],
        per_event[per_event.len() * 99 / 100]
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!(
        "SSE throughput, {} MB of text-delta events per format, {} KB chunks (best of 5):",
        TARGET_BYTES / (1024 * 1024),
        CHUNK / 1024
    );
    throughput("anthropic", anthropic_event, AnthropicWire::default);
    throughput("openai responses", responses_event, ResponsesWire::default);
    throughput("chat completions", chat_event, ChatCompletionsWire::default);
    println!("latency from socket bytes to ChatEvent, {ROUND_TRIPS} events over loopback TCP:");
    latency("anthropic", anthropic_event, AnthropicWire::default);
    latency("openai responses", responses_event, ResponsesWire::default);
    latency("chat completions", chat_event, ChatCompletionsWire::default);
}
