//! Why a turn was interrupted: a person asked (`session/interrupt`, Esc), the daemon is
//! stopping, or the store stopped taking the session's events. Every part of a turn watches one cancellation token, which says only *that* it
//! was interrupted; the [`Interrupt`] beside it says *why*, so that what the turn's cut-short
//! tool calls and its end tell the user and the model is true.

use std::sync::{Arc, OnceLock};

/// Who interrupted a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// A client asked.
    User,
    /// The daemon is stopping (SIGTERM, `daemon/shutdown`) and its grace period ran out.
    Shutdown,
    /// The store stopped taking the session's events (a full disk, a held lock): the turn's
    /// end says why, from the store.
    Store,
}

impl Interruption {
    /// What a tool call cut short gives back, to the model and in its `ToolCallFinished`.
    pub fn tool_output(self) -> &'static str {
        match self {
            Interruption::User => "cancelled by the user",
            Interruption::Shutdown => {
                "the daemon was stopped while this tool call ran; it may have partly run"
            }
            Interruption::Store => {
                "stopped because the session store cannot write; it may have partly run"
            }
        }
    }

    /// What the turn's `TurnFinished` says: nothing when the user asked (they know why).
    pub fn turn_error(self) -> Option<&'static str> {
        match self {
            Interruption::User | Interruption::Store => None,
            Interruption::Shutdown => {
                Some("the daemon was stopped while this turn ran — submit again to continue")
            }
        }
    }
}

/// Why one turn was interrupted, shared by its loops: set by whoever interrupts it, before
/// the token is cancelled, and read by the turn once it sees the cancellation. The first
/// reason given stays.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<OnceLock<Interruption>>);

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Record why; a reason given earlier stays.
    pub fn set(&self, why: Interruption) {
        let _ = self.0.set(why);
    }

    /// Why the turn was interrupted; a person's doing unless said otherwise.
    pub fn why(&self) -> Interruption {
        self.0.get().copied().unwrap_or(Interruption::User)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_stays_and_a_person_is_the_default() {
        let interrupt = Interrupt::new();
        assert_eq!(interrupt.why(), Interruption::User);
        let shared = interrupt.clone();
        shared.set(Interruption::Shutdown);
        interrupt.set(Interruption::User);
        assert_eq!(interrupt.why(), Interruption::Shutdown);
        assert!(interrupt.why().turn_error().is_some());
        assert!(Interruption::User.turn_error().is_none());
    }
}
