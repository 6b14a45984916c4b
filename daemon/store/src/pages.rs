//! SQLite's file format read directly (https://sqlite.org/fileformat2.html): the records on
//! each b-tree page of a damaged file, for rows SQL cannot reach — below an interior page
//! that is lost, past a truncation.
//!
//! SQL finds a row by walking from its table's root; one damaged interior page hides every
//! page below it, though those pages are intact. Read page by page, they still give their
//! rows. Which table a record belongs to is not written on its page: the caller matches
//! records to tables by their shape. Pages on the free list hold deleted rows and are
//! skipped, so nothing deleted comes back.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A value of a record, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

/// Which kind of b-tree a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tree {
    /// A rowid table's leaf: the record is a row, with its rowid.
    Table,
    /// An index b-tree (an index, or a table without rowid), leaf or interior: the record
    /// is an index entry or a row, key columns first.
    Index,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub tree: Tree,
    pub rowid: Option<i64>,
    pub fields: Vec<Field>,
}

/// A database file opened for reading page by page.
pub(crate) struct PageFile {
    file: File,
    page_size: u32,
    /// The bytes of a page b-trees use (the page size less the reserved bytes at its end).
    usable: u32,
    pub pages: u32,
}

impl PageFile {
    /// `None` when the header does not say how pages are laid out.
    pub fn open(path: &Path) -> std::io::Result<Option<PageFile>> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut header = [0u8; 100];
        if len < 100 {
            return Ok(None);
        }
        file.read_exact(&mut header)?;
        if &header[..16] != b"SQLite format 3\0" {
            return Ok(None);
        }
        let page_size = match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65536,
            n => u32::from(n),
        };
        if !page_size.is_power_of_two() || !(512..=65536).contains(&page_size) {
            return Ok(None);
        }
        let usable = page_size - u32::from(header[20]);
        if usable < 480 {
            return Ok(None);
        }
        Ok(Some(PageFile {
            file,
            page_size,
            usable,
            pages: u32::try_from(len / u64::from(page_size)).unwrap_or(u32::MAX),
        }))
    }

    fn page(&mut self, number: u32) -> Option<Vec<u8>> {
        if number == 0 || number > self.pages {
            return None;
        }
        let mut buf = vec![0u8; self.page_size as usize];
        self.file
            .seek(SeekFrom::Start(
                u64::from(number - 1) * u64::from(self.page_size),
            ))
            .ok()?;
        self.file.read_exact(&mut buf).ok()?;
        Some(buf)
    }

    /// The pages on the free list (its trunks and their leaves); `None` when the list
    /// cannot be followed to its end, since then deleted rows could not be told apart.
    pub fn free_pages(&mut self) -> Option<HashSet<u32>> {
        let first = self.page(1)?;
        let mut trunk = be32(&first, 32)?;
        let expected = be32(&first, 36)?;
        let mut free = HashSet::new();
        while trunk != 0 {
            if !free.insert(trunk) || free.len() > self.pages as usize {
                return None;
            }
            let page = self.page(trunk)?;
            let leaves = be32(&page, 4)?;
            if leaves > self.usable / 4 - 2 {
                return None;
            }
            for i in 0..leaves as usize {
                free.insert(be32(&page, 8 + 4 * i)?);
            }
            trunk = be32(&page, 0)?;
        }
        (free.len() as u64 == u64::from(expected)).then_some(free)
    }

    /// The records on page `number` if it is a b-tree page that holds records (a table's
    /// leaf, or an index's leaf or interior page). A cell that does not parse is skipped;
    /// a page that does not look like a b-tree page gives nothing.
    pub fn records_on(&mut self, number: u32) -> Vec<Record> {
        let Some(page) = self.page(number) else {
            return Vec::new();
        };
        let at = if number == 1 { 100 } else { 0 };
        let (tree, header) = match page[at] {
            0x0d => (Tree::Table, 8),
            0x0a => (Tree::Index, 8),
            0x02 => (Tree::Index, 12),
            _ => return Vec::new(),
        };
        let usable = self.usable as usize;
        let Some(cells) = be16(&page, at + 3) else {
            return Vec::new();
        };
        let pointers = at + header;
        if pointers + 2 * cells > usable {
            return Vec::new();
        }
        let mut records = Vec::new();
        for i in 0..cells {
            let Some(cell) = be16(&page, pointers + 2 * i) else {
                continue;
            };
            if cell < pointers + 2 * cells || cell >= usable {
                continue;
            }
            if let Some(record) = self.cell(&page[..usable], cell, tree, header == 12) {
                records.push(record);
            }
        }
        records
    }

    /// The record of the cell at `at`.
    fn cell(&mut self, page: &[u8], at: usize, tree: Tree, interior: bool) -> Option<Record> {
        let mut at = if interior { at + 4 } else { at };
        let (size, n) = varint(page.get(at..)?)?;
        at += n;
        let rowid = match tree {
            Tree::Table => {
                let (rowid, n) = varint(page.get(at..)?)?;
                at += n;
                Some(rowid as i64)
            }
            Tree::Index => None,
        };
        let size = usize::try_from(size).ok()?;
        let local = self.local_size(size, tree);
        let mut payload = page.get(at..at + local)?.to_vec();
        if local < size {
            let mut next = be32(page, at + local)?;
            let mut hops = 0;
            while payload.len() < size {
                hops += 1;
                if hops > size / (self.usable as usize - 4) + 1 {
                    return None;
                }
                let overflow = self.page(next)?;
                let take = (size - payload.len()).min(self.usable as usize - 4);
                payload.extend_from_slice(overflow.get(4..4 + take)?);
                next = be32(&overflow, 0)?;
            }
        }
        Some(Record {
            tree,
            rowid,
            fields: record(&payload)?,
        })
    }

    /// How much of a payload of `size` bytes is on the page itself (the rest overflows).
    fn local_size(&self, size: usize, tree: Tree) -> usize {
        let u = self.usable as usize;
        let max = match tree {
            Tree::Table => u - 35,
            Tree::Index => (u - 12) * 64 / 255 - 23,
        };
        if size <= max {
            return size;
        }
        let min = (u - 12) * 32 / 255 - 23;
        let k = min + (size - min) % (u - 4);
        if k <= max { k } else { min }
    }
}

/// SQLite's file header, mended in a scratch copy at `path` (its WAL at `wal`): rebuilt when it does not check out
/// (bytes written over the start of the file: SQLite reads nothing, `SQLITE_NOTADB`), and
/// its page count lowered to the pages the file has (a truncated file: SQLite refuses every
/// read when the header counts more). The rest of page 1 (the schema's root) must still be
/// there for anything to be read.
pub(crate) fn repair_header(path: &Path, wal: &Path) -> std::io::Result<Header> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let len = file.metadata()?.len();
    let mut header = [0u8; 100];
    if len < 100 || file.read_exact(&mut header).is_err() {
        return Ok(Header::Sound);
    }
    let (header, state) = if header_checks_out(&header) {
        let page_size = match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65536,
            n => u32::from(n),
        };
        let pages = u32::try_from(len / u64::from(page_size)).unwrap_or(u32::MAX);
        if u32::from_be_bytes([header[28], header[29], header[30], header[31]]) <= pages {
            return Ok(Header::Sound);
        }
        let mut mended = header;
        mended[28..32].copy_from_slice(&pages.to_be_bytes());
        (mended, Header::Sound)
    } else {
        (fresh_header(&mut file, len, wal)?, Header::Rebuilt)
    };
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&header)?;
    Ok(state)
}

/// What [`repair_header`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// As SQLite wrote it (its page count perhaps lowered to the file's).
    Sound,
    /// Rebuilt: what it said of the free list is gone.
    Rebuilt,
}

/// A header for a file of `len` bytes, from what can be told: the page size the WAL names
/// (else the one most pages agree with), UTF-8, schema format 4.
fn fresh_header(file: &mut File, len: u64, wal: &Path) -> std::io::Result<[u8; 100]> {
    let wal_page_size = std::fs::read(wal)
        .ok()
        .filter(|wal| wal.len() >= 32 && wal[0..3] == [0x37, 0x7f, 0x06])
        .map(|wal| u32::from_be_bytes([wal[8], wal[9], wal[10], wal[11]]))
        .filter(|size| size.is_power_of_two() && (512..=65536).contains(size));
    let page_size = match wal_page_size {
        Some(size) => size,
        None => guess_page_size(file, len)?,
    };
    let pages = u32::try_from(len / u64::from(page_size)).unwrap_or(u32::MAX);
    let mut fresh = [0u8; 100];
    fresh[..16].copy_from_slice(b"SQLite format 3\0");
    // 65536 is written as 1: the field has two bytes.
    let stored = if page_size == 65536 { 1 } else { page_size };
    fresh[16..18].copy_from_slice(&u16::try_from(stored).unwrap_or(4096).to_be_bytes());
    // WAL when there is one, so the copied WAL is replayed over the pages.
    fresh[18] = if wal_page_size.is_some() { 2 } else { 1 };
    fresh[19] = fresh[18];
    fresh[21] = 64;
    fresh[22] = 32;
    fresh[23] = 32;
    fresh[24..28].copy_from_slice(&1u32.to_be_bytes()); // change counter
    fresh[28..32].copy_from_slice(&pages.to_be_bytes());
    fresh[40..44].copy_from_slice(&1u32.to_be_bytes()); // schema cookie
    fresh[44..48].copy_from_slice(&4u32.to_be_bytes()); // schema format
    fresh[56..60].copy_from_slice(&1u32.to_be_bytes()); // UTF-8
    fresh[92..96].copy_from_slice(&1u32.to_be_bytes()); // the page count is current
    fresh[96..100].copy_from_slice(&3_046_000u32.to_be_bytes());
    Ok(fresh)
}

fn header_checks_out(header: &[u8; 100]) -> bool {
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => u32::from(n),
    };
    &header[..16] == b"SQLite format 3\0"
        && page_size.is_power_of_two()
        && (512..=65536).contains(&page_size)
        && matches!(header[18], 1 | 2)
        && matches!(header[19], 1 | 2)
        && header[21..24] == [64, 32, 32]
        && matches!(
            u32::from_be_bytes([header[56], header[57], header[58], header[59]]),
            0..=3
        )
}

/// The page size under which the most pages start like b-tree pages (a type byte, then a
/// cell count that fits), looking at the first pages after page 1.
fn guess_page_size(file: &mut File, len: u64) -> std::io::Result<u32> {
    let mut best = (0, 4096);
    for size in [4096u32, 1024, 2048, 8192, 16384, 32768, 65536, 512] {
        let mut hits = 0;
        for page in 1..64u64 {
            let at = page * u64::from(size);
            if at + 8 > len {
                break;
            }
            let mut head = [0u8; 8];
            file.seek(SeekFrom::Start(at))?;
            file.read_exact(&mut head)?;
            let cells = u32::from(u16::from_be_bytes([head[3], head[4]]));
            if matches!(head[0], 2 | 5 | 10 | 13) && cells * 2 + 12 <= size {
                hits += 1;
            }
        }
        if hits > best.0 {
            best = (hits, size);
        }
    }
    Ok(best.1)
}

/// A record's fields: the header (its size, then each field's serial type), then the
/// values. `None` unless the header and the values use exactly the payload's bytes.
fn record(payload: &[u8]) -> Option<Vec<Field>> {
    let (header, mut at) = varint(payload)?;
    let header = usize::try_from(header).ok()?;
    if header > payload.len() || header < at {
        return None;
    }
    let mut types = Vec::new();
    while at < header {
        let (serial, n) = varint(payload.get(at..header)?)?;
        types.push(serial);
        at += n;
    }
    let mut body = header;
    let mut fields = Vec::with_capacity(types.len());
    for serial in types {
        let (field, n) = field(serial, payload.get(body..)?)?;
        fields.push(field);
        body += n;
    }
    (body == payload.len()).then_some(fields)
}

fn field(serial: u64, bytes: &[u8]) -> Option<(Field, usize)> {
    let int = |n: usize| -> Option<(Field, usize)> {
        let b = bytes.get(..n)?;
        // Sign-extended from the first byte.
        let mut v: i64 = if b[0] & 0x80 != 0 { -1 } else { 0 };
        for byte in b {
            v = (v << 8) | i64::from(*byte);
        }
        Some((Field::Integer(v), n))
    };
    match serial {
        0 => Some((Field::Null, 0)),
        1 => int(1),
        2 => int(2),
        3 => int(3),
        4 => int(4),
        5 => int(6),
        6 => int(8),
        7 => {
            let b: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
            Some((Field::Real(f64::from_be_bytes(b)), 8))
        }
        8 => Some((Field::Integer(0), 0)),
        9 => Some((Field::Integer(1), 0)),
        10 | 11 => None,
        n => {
            let len = usize::try_from((n - 12) / 2).ok()?;
            let data = bytes.get(..len)?.to_vec();
            Some((
                if n % 2 == 0 {
                    Field::Blob(data)
                } else {
                    Field::Text(data)
                },
                len,
            ))
        }
    }
}

/// SQLite's varint: 7 bits a byte, high bit set on all but the last, the ninth byte whole.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for (i, byte) in bytes.iter().take(9).enumerate() {
        if i == 8 {
            return Some(((v << 8) | u64::from(*byte), 9));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn be16(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at + 2)?;
    Some(usize::from(u16::from_be_bytes([b[0], b[1]])))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x80]), None);
    }

    #[test]
    fn a_record_uses_its_payload_exactly() {
        // Header of 4 bytes: NULL, 1-byte int, text of 2 bytes ("hi" is 13 + 2*2 = 17).
        let payload = [4, 0, 1, 17, 0xfe, b'h', b'i'];
        assert_eq!(
            record(&payload),
            Some(vec![
                Field::Null,
                Field::Integer(-2),
                Field::Text(b"hi".to_vec())
            ])
        );
        assert_eq!(record(&payload[..6]), None);
        assert_eq!(record(&[payload.as_slice(), &[0]].concat()), None);
    }

    /// Every row of a real file is found on its pages, overflowing ones included, and
    /// nothing of the rows deleted from it.
    #[tokio::test]
    async fn the_rows_of_a_file_sqlite_wrote_are_on_its_pages() {
        use sqlx::{ConnectOptions, Connection};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .connect()
            .await
            .unwrap();
        for sql in [
            "CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)",
            "CREATE TABLE w (a TEXT, b INTEGER, c BLOB, PRIMARY KEY (a, b)) WITHOUT ROWID",
        ] {
            sqlx::query(sql).execute(&mut conn).await.unwrap();
        }
        sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
        for i in 0..300i64 {
            sqlx::query("INSERT INTO t VALUES (?, ?)")
                .bind(format!("k{i}"))
                .bind("x".repeat(usize::try_from(i).unwrap() * 40))
                .execute(&mut conn)
                .await
                .unwrap();
            sqlx::query("INSERT INTO w VALUES (?, ?, ?)")
                .bind(format!("s{}", i % 7))
                .bind(i)
                .bind(vec![7u8; usize::try_from(i).unwrap() * 30])
                .execute(&mut conn)
                .await
                .unwrap();
        }
        sqlx::query("COMMIT").execute(&mut conn).await.unwrap();
        sqlx::query("DELETE FROM t WHERE id LIKE 'k1%'")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();

        let mut file = PageFile::open(&path).unwrap().unwrap();
        let free = file.free_pages().unwrap();
        let mut rows = 0;
        let mut entries = 0;
        for page in (1..=file.pages).filter(|p| !free.contains(p)) {
            for r in file.records_on(page) {
                match (r.tree, r.fields.as_slice()) {
                    (Tree::Table, [Field::Text(id), Field::Text(body)]) => {
                        let i: usize = std::str::from_utf8(&id[1..]).unwrap().parse().unwrap();
                        assert!(!id.starts_with(b"k1"), "a deleted row came back");
                        assert_eq!(body.len(), i * 40);
                        rows += 1;
                    }
                    (Tree::Index, [Field::Text(_), Field::Integer(i), Field::Blob(c)]) => {
                        assert_eq!(c.len(), usize::try_from(*i).unwrap() * 30);
                        entries += 1;
                    }
                    _ => {}
                }
            }
        }
        // 300 rows less k1, k10..k19, k100..k199.
        assert_eq!(rows, 300 - 111);
        assert_eq!(entries, 300);
    }
}
