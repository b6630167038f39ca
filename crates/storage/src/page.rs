//! The fixed-size page: the unit of every database file, of the buffer pool
//! and of page records in the log.
//!
//! ```text
//!  0        4      5      6        8          12         16              24
//!  +--------+------+------+--------+----------+----------+---------------+----------------+
//!  | crc32c | kind | flag | spare  | page id  | spare    | lsn           | body ...       |
//!  +--------+------+------+--------+----------+----------+---------------+----------------+
//! ```
//! The checksum covers bytes 4..PAGE_SIZE and is computed when a page is
//! *sealed* for the disk, not while it is being edited in memory. The page id
//! is stored so that a page written to the wrong place is caught; the LSN is
//! that of the last log record applied to the page, which is what makes redo
//! idempotent (design.md, I5). An all-zero page is "never written" and is
//! reported as such rather than as a checksum error.

use crate::{Lsn, PageId, StorageError, StorageResult};

/// Page size in bytes. Fixed for the format (design.md §2).
pub const PAGE_SIZE: usize = 8192;
/// Bytes of common header at the start of every page.
pub const PAGE_HEADER: usize = 24;
/// Usable bytes after the header.
pub const PAGE_BODY: usize = PAGE_SIZE - PAGE_HEADER;

const OFF_CRC: usize = 0;
const OFF_KIND: usize = 4;
const OFF_FLAGS: usize = 5;
const OFF_ID: usize = 8;
const OFF_LSN: usize = 16;

/// What a page holds. Stored in byte 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    /// The database file header (page 0).
    Header = 1,
    BTreeLeaf = 2,
    BTreeInternal = 3,
    /// A link of an overflow chain holding a large value.
    Overflow = 4,
    /// A free-list trunk page listing free page ids.
    FreeTrunk = 5,
    /// Attachment content written directly to the file (design.md I7).
    Blob = 6,
    /// A page on the free list whose content is meaningless.
    Free = 7,
}

impl PageKind {
    pub fn from_u8(v: u8) -> Option<PageKind> {
        Some(match v {
            1 => PageKind::Header,
            2 => PageKind::BTreeLeaf,
            3 => PageKind::BTreeInternal,
            4 => PageKind::Overflow,
            5 => PageKind::FreeTrunk,
            6 => PageKind::Blob,
            7 => PageKind::Free,
            _ => return None,
        })
    }
}

/// One page image. Always exactly `PAGE_SIZE` bytes, heap-allocated so
/// that moving it around is cheap.
#[derive(Clone, PartialEq, Eq)]
pub struct PageBuf(Box<[u8; PAGE_SIZE]>);

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf")
            .field("kind", &self.kind())
            .field("id", &self.id())
            .field("lsn", &self.lsn())
            .finish()
    }
}

impl Default for PageBuf {
    fn default() -> Self {
        Self::zeroed()
    }
}

impl PageBuf {
    pub fn zeroed() -> Self {
        PageBuf(Box::new([0u8; PAGE_SIZE]))
    }

    /// A fresh page of the given kind with an empty body.
    pub fn new(kind: PageKind) -> Self {
        let mut p = Self::zeroed();
        p.set_kind(kind);
        p
    }

    /// Wraps raw bytes read from disk or the log. `bytes` must be PAGE_SIZE.
    pub fn from_bytes(bytes: &[u8]) -> StorageResult<Self> {
        if bytes.len() != PAGE_SIZE {
            return Err(StorageError::Invalid(format!(
                "page image of {} bytes, expected {PAGE_SIZE}",
                bytes.len()
            )));
        }
        let mut p = Self::zeroed();
        p.0.copy_from_slice(bytes);
        Ok(p)
    }

    pub fn bytes(&self) -> &[u8; PAGE_SIZE] {
        &self.0
    }

    pub fn bytes_mut(&mut self) -> &mut [u8; PAGE_SIZE] {
        &mut self.0
    }

    /// The body after the common header.
    pub fn body(&self) -> &[u8] {
        &self.0[PAGE_HEADER..]
    }

    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.0[PAGE_HEADER..]
    }

    pub fn kind(&self) -> Option<PageKind> {
        PageKind::from_u8(self.0[OFF_KIND])
    }

    pub fn set_kind(&mut self, kind: PageKind) {
        self.0[OFF_KIND] = kind as u8;
    }

    pub fn flags(&self) -> u8 {
        self.0[OFF_FLAGS]
    }

    pub fn set_flags(&mut self, flags: u8) {
        self.0[OFF_FLAGS] = flags;
    }

    pub fn id(&self) -> PageId {
        PageId(u32::from_le_bytes(
            self.0[OFF_ID..OFF_ID + 4].try_into().unwrap(),
        ))
    }

    pub fn lsn(&self) -> Lsn {
        Lsn(u64::from_le_bytes(
            self.0[OFF_LSN..OFF_LSN + 8].try_into().unwrap(),
        ))
    }

    pub fn set_lsn(&mut self, lsn: Lsn) {
        self.0[OFF_LSN..OFF_LSN + 8].copy_from_slice(&lsn.0.to_le_bytes());
    }

    fn compute_crc(&self) -> u32 {
        page_crc(&self.0[..])
    }

    /// Stamps id and LSN and computes the checksum: the last step before the
    /// page goes to disk.
    pub fn seal(&mut self, id: PageId, lsn: Lsn) {
        seal_in_place(&mut self.0[..], id, lsn);
    }

    /// Checks a page read from disk: checksum, stored id and a known kind.
    /// `file` names the database in the error.
    pub fn verify(&self, file: &str, id: PageId) -> StorageResult<()> {
        if self.0.iter().all(|b| *b == 0) {
            return Err(StorageError::corrupt(file, id, "page was never written"));
        }
        let stored = u32::from_le_bytes(self.0[OFF_CRC..OFF_CRC + 4].try_into().unwrap());
        if stored != self.compute_crc() {
            return Err(StorageError::corrupt(file, id, "checksum mismatch"));
        }
        if self.id() != id {
            return Err(StorageError::corrupt(
                file,
                id,
                format!("page claims to be {}", self.id()),
            ));
        }
        if self.kind().is_none() {
            return Err(StorageError::corrupt(
                file,
                id,
                format!("unknown page kind {}", self.0[OFF_KIND]),
            ));
        }
        Ok(())
    }
}

/// Little-endian field helpers shared by the page structures.
fn page_crc(page: &[u8]) -> u32 {
    crc32c::crc32c(&page[OFF_KIND..])
}

/// Makes `page` (PAGE_SIZE bytes, for example one page of a larger write
/// buffer) a page of `kind` with the given flags, leaving its body as is.
/// With [`seal_in_place`], lets bulk writers build pages where they will
/// be written from instead of copying each out of a [`PageBuf`].
pub fn init_in_place(page: &mut [u8], kind: PageKind) {
    assert_eq!(page.len(), PAGE_SIZE, "a page is PAGE_SIZE bytes");
    page[..PAGE_HEADER].fill(0);
    page[OFF_KIND] = kind as u8;
}

/// [`PageBuf::seal`] for a page held in a larger buffer.
pub fn seal_in_place(page: &mut [u8], id: PageId, lsn: Lsn) {
    assert_eq!(page.len(), PAGE_SIZE, "a page is PAGE_SIZE bytes");
    page[OFF_ID..OFF_ID + 4].copy_from_slice(&id.0.to_le_bytes());
    page[OFF_LSN..OFF_LSN + 8].copy_from_slice(&lsn.0.to_le_bytes());
    let crc = page_crc(page);
    page[OFF_CRC..OFF_CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

pub fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_then_verify_round_trips() {
        let mut p = PageBuf::new(PageKind::BTreeLeaf);
        p.body_mut()[10] = 42;
        p.seal(PageId(7), Lsn(99));
        p.verify("t", PageId(7)).unwrap();
        assert_eq!(p.lsn(), Lsn(99));
        assert_eq!(p.id(), PageId(7));
    }

    #[test]
    fn pages_built_in_place_equal_page_bufs() {
        let mut p = PageBuf::new(PageKind::Blob);
        p.body_mut()[..5].copy_from_slice(b"hello");
        p.seal(PageId(12), Lsn(3));
        let mut buf = vec![0xAAu8; 3 * PAGE_SIZE];
        let slot = &mut buf[PAGE_SIZE..2 * PAGE_SIZE];
        slot[PAGE_HEADER..].fill(0);
        slot[PAGE_HEADER..PAGE_HEADER + 5].copy_from_slice(b"hello");
        init_in_place(slot, PageKind::Blob);
        seal_in_place(slot, PageId(12), Lsn(3));
        assert_eq!(slot, &p.bytes()[..]);
        PageBuf::from_bytes(slot)
            .unwrap()
            .verify("t", PageId(12))
            .unwrap();
    }

    #[test]
    fn flipped_bit_is_reported_with_page() {
        let mut p = PageBuf::new(PageKind::Overflow);
        p.seal(PageId(3), Lsn(1));
        p.bytes_mut()[100] ^= 1;
        let e = p.verify("mail/a.fdb", PageId(3)).unwrap_err().to_string();
        assert!(
            e.contains("mail/a.fdb") && e.contains("page 3") && e.contains("checksum"),
            "{e}"
        );
    }

    #[test]
    fn misplaced_and_blank_pages_are_distinguished() {
        let mut p = PageBuf::new(PageKind::Overflow);
        p.seal(PageId(3), Lsn(1));
        assert!(p
            .verify("f", PageId(4))
            .unwrap_err()
            .to_string()
            .contains("claims"));
        let z = PageBuf::zeroed();
        assert!(z
            .verify("f", PageId(4))
            .unwrap_err()
            .to_string()
            .contains("never written"));
    }
}

/// Bytes of the header that are stamped at seal time (crc, id, lsn) and so
/// are never part of a delta: kind and flags (4..8) are.
fn is_sealed_field(off: usize) -> bool {
    off < OFF_KIND || (OFF_ID..PAGE_HEADER).contains(&off)
}

/// One changed byte range of a page, as logged in a page-delta record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeltaRange {
    pub offset: u16,
    pub bytes: Vec<u8>,
}

/// The byte ranges where `new` differs from `old`, ignoring the sealed
/// header fields. Ranges closer than 16 bytes are merged, so a typical
/// B+tree edit becomes a handful of ranges rather than hundreds. Equal
/// stretches are skipped 64 and 8 bytes at a time: this runs under a
/// database's writer lock for every page a commit touches.
pub fn page_delta(old: &PageBuf, new: &PageBuf) -> Vec<DeltaRange> {
    let (a, b) = (old.bytes(), new.bytes());
    let mut runs: Vec<(usize, usize)> = Vec::new();
    diff_runs(a, b, OFF_KIND, OFF_ID, &mut runs);
    diff_runs(a, b, PAGE_HEADER, PAGE_SIZE, &mut runs);
    runs.into_iter()
        .map(|(s, e)| DeltaRange {
            offset: s as u16,
            bytes: b[s..e].to_vec(),
        })
        .collect()
}

/// Appends the differing runs of `a` and `b` within `from..to`, merging a
/// run into the previous one when the gap is under 16 bytes and both lie
/// in the same region.
fn diff_runs(a: &[u8], b: &[u8], from: usize, to: usize, out: &mut Vec<(usize, usize)>) {
    const MERGE_GAP: usize = 16;
    let region_start = out.len();
    let mut i = from;
    while i < to {
        if i + 64 <= to && a[i..i + 64] == b[i..i + 64] {
            i += 64;
            continue;
        }
        if i + 8 <= to && a[i..i + 8] == b[i..i + 8] {
            i += 8;
            continue;
        }
        if a[i] == b[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < to && a[i] != b[i] {
            i += 1;
        }
        let mergeable =
            out.len() > region_start && out.last().is_some_and(|l| start - l.1 <= MERGE_GAP);
        match out.last_mut() {
            Some(last) if mergeable => last.1 = i,
            _ => out.push((start, i)),
        }
    }
}

/// Applies delta ranges to a page. Ranges that fall outside the page or
/// onto sealed header fields are rejected, not clipped.
pub fn apply_delta(page: &mut PageBuf, ranges: &[DeltaRange]) -> StorageResult<()> {
    for r in ranges {
        let start = r.offset as usize;
        let end = start + r.bytes.len();
        if end > PAGE_SIZE || (start..end).any(is_sealed_field) {
            return Err(StorageError::Invalid(format!(
                "delta range {start}..{end} is outside the page body"
            )));
        }
    }
    for r in ranges {
        let start = r.offset as usize;
        page.bytes_mut()[start..start + r.bytes.len()].copy_from_slice(&r.bytes);
    }
    Ok(())
}

#[cfg(test)]
mod delta_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn delta_reproduces_new_page(edits in proptest::collection::vec((PAGE_HEADER..PAGE_SIZE, any::<u8>()), 0..200),
                                     kind_change in any::<bool>()) {
            let mut old = PageBuf::new(PageKind::BTreeLeaf);
            old.seal(PageId(5), Lsn(10));
            let mut new = old.clone();
            for (off, v) in edits { new.bytes_mut()[off] = v; }
            if kind_change { new.set_kind(PageKind::Overflow); }
            new.seal(PageId(5), Lsn(20));
            let d = page_delta(&old, &new);
            let mut rebuilt = old.clone();
            apply_delta(&mut rebuilt, &d).unwrap();
            rebuilt.seal(PageId(5), Lsn(20));
            prop_assert_eq!(rebuilt, new);
        }
    }

    #[test]
    fn delta_rejects_ranges_outside_the_body() {
        let mut p = PageBuf::zeroed();
        let bad = [DeltaRange {
            offset: 8190,
            bytes: vec![1, 2, 3],
        }];
        assert!(apply_delta(&mut p, &bad).is_err());
        let hdr = [DeltaRange {
            offset: 0,
            bytes: vec![1],
        }];
        assert!(apply_delta(&mut p, &hdr).is_err());
    }
}
