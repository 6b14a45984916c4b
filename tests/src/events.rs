//! Reading a session's event stream in tests: until the event a test waits for, with a
//! deadline, never a sleep.

use std::time::Duration;

use stepper_protocol::AppEvent;
use stepper_protocol::EventEnvelope;
use stepper_protocol::client::EventStream;

/// Read until `done` holds for an event; returns everything read, that event last.
pub async fn read_until(
    stream: &mut EventStream,
    mut done: impl FnMut(&EventEnvelope) -> bool,
) -> Vec<EventEnvelope> {
    let mut events = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .unwrap_or_else(|_| panic!("no event within 30s after {events:#?}"))
            .expect("stream open")
            .expect("event");
        let stop = done(&e);
        events.push(e);
        if stop {
            return events;
        }
    }
}

/// Read until the turn ends.
pub async fn until_turn_finished(stream: &mut EventStream) -> Vec<EventEnvelope> {
    read_until(stream, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await
}

/// An approval a session asked for: its id, what it asks, and what it would run.
pub struct Asked {
    pub request_id: String,
    pub summary: String,
    pub command: Option<String>,
}

/// Read until the next `ApprovalRequested`.
pub async fn next_approval(stream: &mut EventStream) -> Asked {
    let asked = read_until(stream, |e| {
        matches!(e.event, AppEvent::ApprovalRequested { .. })
    })
    .await;
    match asked.into_iter().last().map(|e| e.event) {
        Some(AppEvent::ApprovalRequested {
            request_id,
            summary,
            command,
            ..
        }) => Asked {
            request_id,
            summary,
            command,
        },
        other => panic!("not an approval: {other:?}"),
    }
}

/// The events `stepper ask --format stream-json` printed, one JSON line each.
pub fn stream_json(out: &std::process::Output) -> Vec<EventEnvelope> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event per line"))
        .collect()
}
