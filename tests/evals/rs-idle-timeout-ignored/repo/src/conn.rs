use crate::Secs;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conn {
    pub id: u64,
    pub peer: String,
    pub last_active: Secs,
}

impl Conn {
    pub fn new(id: u64, peer: &str, now: Secs) -> Conn {
        Conn {
            id,
            peer: peer.to_string(),
            last_active: now,
        }
    }

    pub fn touch(&mut self, now: Secs) {
        self.last_active = now;
    }

    pub fn idle_for(&self, now: Secs) -> Secs {
        now.saturating_sub(self.last_active)
    }
}
