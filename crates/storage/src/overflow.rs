//! Overflow chains: values too large for a B+tree entry.
//!
//! A large note is split over a singly linked chain of pages. Chains are
//! written whole and freed whole, never edited in place, so a simple list
//! is enough; each page says how many of its bytes are used and the reader
//! checks the total against the length the referencing entry recorded.
//!
//! ```text
//!   body: 0 next page u32 (0 = end) | 4 bytes used u32 | 8 data ...
//! ```

use crate::page::{get_u32, put_u32, PAGE_BODY};
use crate::{PageBuf, PageId, PageKind, PageStore, PageStoreMut, StorageError, StorageResult};

/// Data bytes per overflow page.
pub const OVERFLOW_DATA: usize = PAGE_BODY - 8;

/// Writes `data` to a new chain and returns its first page.
pub fn write(s: &mut impl PageStoreMut, data: &[u8]) -> StorageResult<PageId> {
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[][..]]
    } else {
        data.chunks(OVERFLOW_DATA).collect()
    };
    let ids = (0..chunks.len())
        .map(|_| s.allocate())
        .collect::<StorageResult<Vec<_>>>()?;
    for (i, chunk) in chunks.iter().enumerate() {
        let mut p = PageBuf::new(PageKind::Overflow);
        let next = ids.get(i + 1).copied().unwrap_or(PageId::NONE);
        put_u32(p.body_mut(), 0, next.0);
        put_u32(p.body_mut(), 4, chunk.len() as u32);
        p.body_mut()[8..8 + chunk.len()].copy_from_slice(chunk);
        s.write(ids[i], p);
    }
    Ok(ids[0])
}

/// Reads one link of a chain, which must be an overflow page.
fn read_link(s: &impl PageStore, at: PageId) -> StorageResult<std::sync::Arc<PageBuf>> {
    let p = s.read(at)?;
    if p.kind() != Some(PageKind::Overflow) {
        return Err(StorageError::corrupt(
            s.name(),
            at,
            "expected an overflow page",
        ));
    }
    Ok(p)
}

/// Reads a chain of exactly `len` bytes.
pub fn read(s: &impl PageStore, first: PageId, len: u64) -> StorageResult<Vec<u8>> {
    let mut out = Vec::with_capacity(len.min(64 << 20) as usize);
    let mut at = first;
    let limit = len / OVERFLOW_DATA as u64 + 1;
    for _ in 0..limit {
        let p = read_link(s, at)?;
        let used = get_u32(p.body(), 4) as usize;
        if used > OVERFLOW_DATA || out.len() as u64 + used as u64 > len {
            return Err(StorageError::corrupt(
                s.name(),
                at,
                "overflow chain longer than recorded",
            ));
        }
        out.extend_from_slice(&p.body()[8..8 + used]);
        let next = PageId(get_u32(p.body(), 0));
        if next.is_none() {
            if out.len() as u64 != len {
                return Err(StorageError::corrupt(
                    s.name(),
                    at,
                    format!("overflow chain holds {} bytes, expected {len}", out.len()),
                ));
            }
            return Ok(out);
        }
        at = next;
    }
    Err(StorageError::corrupt(
        s.name(),
        first,
        "overflow chain does not end",
    ))
}

/// Frees every page of a chain.
pub fn free(s: &mut impl PageStoreMut, first: PageId) -> StorageResult<()> {
    let mut ids = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut at = first;
    while !at.is_none() {
        let p = read_link(s, at)?;
        if !seen.insert(at) {
            return Err(StorageError::corrupt(
                s.name(),
                at,
                "overflow chain has a cycle",
            ));
        }
        ids.push(at);
        at = PageId(get_u32(p.body(), 0));
    }
    for id in ids {
        s.free(id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::MemStore;

    #[test]
    fn round_trips_every_size_class_and_frees_all_pages() {
        for size in [0usize, 1, OVERFLOW_DATA, OVERFLOW_DATA + 1, 1 << 20] {
            let mut s = MemStore::new();
            let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let first = write(&mut s, &data).unwrap();
            assert_eq!(read(&s, first, size as u64).unwrap(), data);
            assert!(read(&s, first, size as u64 + 1).is_err());
            if size > 0 {
                assert!(read(&s, first, size as u64 - 1).is_err());
            }
            free(&mut s, first).unwrap();
            assert_eq!(s.live_pages(), 0);
        }
    }
}
