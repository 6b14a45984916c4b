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
