//! `stepper attach`: the ratatui terminal UI, behind a channel contract — `Action`s out,
//! `AppEvent`s in, a cancellation token — so it never sees a socket or daemon code.
//!
//! Empty until the TUI lands; the boundary test already holds it to protocol types only.
