//! The write-ahead log as SQLite will replay it, read before the store opens: whether
//! anything in it is about to be dropped without a word.
//!
//! SQLite replays a WAL's frames from the start and stops at the first frame whose salts or
//! running checksum do not match (or at a damaged header, which drops the whole file),
//! keeping what the last commit frame before that point covered. Frames after it are
//! ignored silently. Some of them are normal: SQLite reuses the file after a checkpoint, so
//! frames of an earlier generation (an older salt) follow the live ones, and a crash leaves
//! the frames of a transaction that never committed. This module reads the file as
//! SQLite's `walIndexRecover` does and reports only the rest (see [`WalDamage`]).

use std::path::Path;

const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;
const MAGIC: u32 = 0x377f_0682;
const VERSION: u32 = 3_007_000;
/// Salt-1 grows by one at each checkpoint that restarts the file; frames whose salt-1 is at
/// most this far behind the header's are taken as left from an earlier generation.
const STALE_GENERATIONS: u32 = 1 << 20;

/// What SQLite will drop of a WAL when it opens the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalDamage {
    /// The header does not check out, so SQLite replays nothing of the file's `bytes`.
    Header { bytes: u64 },
    /// A frame in the middle breaks the chain: `frames` frames written after it in the same
    /// generation, `commits` of them ending a transaction, are not replayed.
    Broken {
        at_frame: u64,
        frames: u64,
        commits: u64,
    },
    /// After the last frame SQLite replays come `frames` frames that are neither of this
    /// generation nor left from an earlier one: bytes written over the file's tail.
    Garbage { at_frame: u64, frames: u64 },
}

impl WalDamage {
    /// What was dropped, for a person.
    pub fn describe(&self) -> String {
        match self {
            WalDamage::Header { bytes } => {
                format!("its header is damaged, so none of its {bytes} bytes were replayed")
            }
            WalDamage::Broken {
                at_frame,
                frames,
                commits,
            } => format!(
                "frame {at_frame} is damaged, so the {frames} frames written after it \
                 ({commits} committed transactions) were not replayed"
            ),
            WalDamage::Garbage { at_frame, frames } => format!(
                "{frames} frames from frame {at_frame} on are not SQLite's (bytes written over \
                 its tail) and were not replayed"
            ),
        }
    }
}

/// A WAL as SQLite will replay it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRead {
    /// Whole frames in the file.
    pub frames: u64,
    /// Frames of the chain SQLite replays (up to its last commit frame, it keeps them).
    pub replayed: u64,
    /// What it will drop that is worth reporting.
    pub damage: Option<WalDamage>,
}

/// Read the WAL whose bytes are `wal` as SQLite will replay it.
pub fn read(wal: &[u8]) -> WalRead {
    let mut read = WalRead {
        frames: 0,
        replayed: 0,
        damage: None,
    };
    if wal.len() <= HEADER {
        // Empty, or a header torn by a crash before any frame: nothing was committed here.
        return read;
    }
    let magic = be32(wal, 0);
    let big_endian = magic & 1 == 1;
    let page_size = be32(wal, 8);
    let header_ok = magic & !1 == MAGIC
        && be32(wal, 4) == VERSION
        && page_size.is_power_of_two()
        && (512..=65536).contains(&page_size)
        && checksum(big_endian, &wal[..24], (0, 0)) == (be32(wal, 24), be32(wal, 28));
    if !header_ok {
        read.damage = Some(WalDamage::Header {
            bytes: wal.len() as u64,
        });
        return read;
    }
    let salts = (be32(wal, 16), be32(wal, 20));
    let frame_size = FRAME_HEADER + page_size as usize;
    let frames = (wal.len() - HEADER) / frame_size;
    let frame = |i: usize| &wal[HEADER + i * frame_size..HEADER + (i + 1) * frame_size];
    read.frames = frames as u64;

    // The chain SQLite replays: salts and the running checksum must match, frame by frame.
    let mut sum = (be32(wal, 24), be32(wal, 28));
    let mut chain = 0;
    while chain < frames {
        let f = frame(chain);
        if (be32(f, 8), be32(f, 12)) != salts || be32(f, 0) == 0 {
            break;
        }
        let next = checksum(
            big_endian,
            &f[FRAME_HEADER..],
            checksum(big_endian, &f[..8], sum),
        );
        if next != (be32(f, 16), be32(f, 20)) {
            break;
        }
        sum = next;
        chain += 1;
    }
    read.replayed = chain as u64;

    // What follows the chain: this generation's frames (dropped with it), an earlier
    // generation's (normal), or neither.
    let (mut ours, mut ours_committed, mut garbage) = (0u64, 0u64, 0u64);
    for i in chain..frames {
        let f = frame(i);
        let salt1 = be32(f, 8);
        if (salt1, be32(f, 12)) == salts {
            ours += 1;
            if be32(f, 4) != 0 {
                ours_committed += 1;
            }
        } else if salts.0.wrapping_sub(salt1).wrapping_sub(1) >= STALE_GENERATIONS {
            garbage += 1;
        }
    }
    let at_frame = chain as u64 + 1;
    read.damage = if ours_committed > 0 {
        // A torn last frame (a crash mid-transaction) has no commit of its generation after
        // it; a commit after the break was written and is lost.
        Some(WalDamage::Broken {
            at_frame,
            frames: ours,
            commits: ours_committed,
        })
    } else if garbage > 0 {
        Some(WalDamage::Garbage {
            at_frame,
            frames: garbage,
        })
    } else {
        None
    };
    read
}

/// What SQLite will drop of the WAL whose bytes are `wal`, if anything worth reporting.
pub fn inspect(wal: &[u8]) -> Option<WalDamage> {
    read(wal).damage
}

/// [`inspect`] on the file at `path`; a missing file has nothing to drop.
pub fn inspect_file(path: &Path) -> std::io::Result<Option<WalDamage>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(inspect(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// SQLite's WAL checksum (`walChecksumBytes`) over `data`, continuing from `sum`: words in
/// the byte order the magic number names.
fn checksum(big_endian: bool, data: &[u8], sum: (u32, u32)) -> (u32, u32) {
    let (mut s1, mut s2) = sum;
    for pair in data.chunks_exact(8) {
        let word = |b: &[u8]| {
            let b = [b[0], b[1], b[2], b[3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        s1 = s1.wrapping_add(word(&pair[..4])).wrapping_add(s2);
        s2 = s2.wrapping_add(word(&pair[4..])).wrapping_add(s1);
    }
    (s1, s2)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const PAGE: usize = 512;

    /// A WAL as SQLite writes it: a header, then frames `(page, commit)` with their
    /// running checksums.
    struct Wal {
        bytes: Vec<u8>,
        sum: (u32, u32),
        salts: (u32, u32),
    }

    impl Wal {
        fn new(salts: (u32, u32)) -> Wal {
            let mut bytes = Vec::new();
            for word in [MAGIC, VERSION, PAGE as u32, 0, salts.0, salts.1] {
                bytes.extend_from_slice(&word.to_be_bytes());
            }
            let sum = checksum(false, &bytes, (0, 0));
            bytes.extend_from_slice(&sum.0.to_be_bytes());
            bytes.extend_from_slice(&sum.1.to_be_bytes());
            Wal { bytes, sum, salts }
        }

        fn frame(&mut self, page: u32, commit: bool) -> &mut Wal {
            self.frame_with(page, commit, self.salts)
        }

        fn frame_with(&mut self, page: u32, commit: bool, salts: (u32, u32)) -> &mut Wal {
            let mut header = Vec::new();
            for word in [page, u32::from(commit) * 10, salts.0, salts.1] {
                header.extend_from_slice(&word.to_be_bytes());
            }
            let data = vec![page as u8; PAGE];
            let sum = checksum(false, &data, checksum(false, &header[..8], self.sum));
            if salts == self.salts {
                self.sum = sum;
            }
            header.extend_from_slice(&sum.0.to_be_bytes());
            header.extend_from_slice(&sum.1.to_be_bytes());
            self.bytes.extend_from_slice(&header);
            self.bytes.extend_from_slice(&data);
            self
        }

        fn frame_offset(i: usize) -> usize {
            HEADER + i * (FRAME_HEADER + PAGE)
        }
    }

    #[test]
    fn a_whole_chain_drops_nothing() {
        let mut wal = Wal::new((7, 99));
        wal.frame(2, false).frame(3, true).frame(2, true);
        assert_eq!(inspect(&wal.bytes), None);
        assert_eq!(inspect(&[]), None);
    }

    #[test]
    fn a_transaction_cut_by_a_crash_is_not_damage() {
        let mut wal = Wal::new((7, 99));
        wal.frame(2, true).frame(3, false).frame(4, false);
        // The last frame torn: it and the frame before never committed.
        let end = wal.bytes.len();
        wal.bytes[end - 10] ^= 0xff;
        assert_eq!(inspect(&wal.bytes), None);
    }

    #[test]
    fn frames_of_an_earlier_generation_are_normal() {
        let mut wal = Wal::new((7, 99));
        wal.frame(2, true);
        wal.frame_with(3, true, (6, 1234))
            .frame_with(4, true, (5, 55));
        assert_eq!(inspect(&wal.bytes), None);
    }

    #[test]
    fn a_damaged_frame_before_later_commits_is_reported() {
        let mut wal = Wal::new((7, 99));
        wal.frame(2, true)
            .frame(3, false)
            .frame(4, true)
            .frame(5, true);
        wal.bytes[Wal::frame_offset(1) + FRAME_HEADER + 100] ^= 0x01;
        assert_eq!(
            inspect(&wal.bytes),
            Some(WalDamage::Broken {
                at_frame: 2,
                frames: 3,
                commits: 2
            })
        );
    }

    #[test]
    fn garbage_after_the_last_frame_is_reported() {
        let mut wal = Wal::new((7, 99));
        wal.frame(2, true);
        wal.bytes
            .extend(std::iter::repeat_n(0xa5, 3 * (FRAME_HEADER + PAGE)));
        assert_eq!(
            inspect(&wal.bytes),
            Some(WalDamage::Garbage {
                at_frame: 2,
                frames: 3
            })
        );
    }

    #[test]
    fn a_damaged_header_drops_the_file() {
        let mut wal = Wal::new((7, 99));
        wal.frame(2, true);
        wal.bytes[9] ^= 0x40;
        assert!(matches!(
            inspect(&wal.bytes),
            Some(WalDamage::Header { .. })
        ));
    }

    /// The checksum and byte order are SQLite's: a WAL SQLite wrote replays to its end.
    #[tokio::test]
    async fn a_wal_sqlite_wrote_checks_out() {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
        use sqlx::{ConnectOptions, Connection};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let mut conn = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .connect()
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (x TEXT)")
            .execute(&mut conn)
            .await
            .unwrap();
        for i in 0..20 {
            sqlx::query("INSERT INTO t VALUES (?)")
                .bind("x".repeat(i * 300))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        // Read while the connection is open: closing it would checkpoint the WAL away.
        let bytes = std::fs::read(dir.path().join("w.db-wal")).unwrap();
        let read = read(&bytes);
        assert!(read.frames >= 21, "{read:?}");
        assert_eq!(read.replayed, read.frames);
        assert_eq!(read.damage, None);
        conn.close().await.unwrap();
    }
}
