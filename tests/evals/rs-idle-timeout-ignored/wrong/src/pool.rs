use crate::conn::Conn;
use crate::error::Error;
use crate::Secs;

/// The open connections, bounded by a capacity, with idle reaping.
#[derive(Debug)]
pub struct Pool {
    conns: Vec<Conn>,
    capacity: usize,
    idle_timeout_secs: u64,
    next_id: u64,
}

impl Pool {
    pub fn new(capacity: usize, idle_timeout_secs: u64) -> Pool {
        Pool {
            conns: Vec::new(),
            capacity,
            idle_timeout_secs,
            next_id: 1,
        }
    }

    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    pub fn set_idle_timeout(&mut self, secs: u64) {
        self.idle_timeout_secs = secs;
    }

    pub fn open(&mut self, peer: &str, now: Secs) -> Result<u64, Error> {
        if self.conns.len() >= self.capacity {
            return Err(Error::Full { max: self.capacity });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.conns.push(Conn::new(id, peer, now));
        Ok(id)
    }

    pub fn get_mut(&mut self, id: u64) -> Result<&mut Conn, Error> {
        self.conns
            .iter_mut()
            .find(|c| c.id == id)
            .ok_or(Error::UnknownConn(id))
    }

    pub fn close(&mut self, id: u64) -> Option<Conn> {
        let index = self.conns.iter().position(|c| c.id == id)?;
        Some(self.conns.remove(index))
    }

    /// Closes every connection idle for the timeout or longer; returns them.
    pub fn reap(&mut self, now: Secs) -> Vec<Conn> {
        let timeout = self.idle_timeout_secs;
        let (idle, live): (Vec<Conn>, Vec<Conn>) = std::mem::take(&mut self.conns)
            .into_iter()
            .partition(|c| c.idle_for(now) >= timeout);
        self.conns = live;
        idle
    }

    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }
}
