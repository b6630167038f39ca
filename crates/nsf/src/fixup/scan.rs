//! Phase 1, scan: read every page of the file once, in order, and verify
//! it (checksum, page id). The result says which pages can be trusted and
//! which verified pages are B+tree leaves (where salvage looks for notes
//! no tree reaches any more).

use super::report::BadPage;
use std::collections::BTreeSet;
use storage::backend::read_exact_at;
use storage::{FileHandle, PageBuf, PageId, PageKind, PAGE_SIZE};

/// Pages read per I/O.
const CHUNK: u64 = 128;
/// Bad pages listed in the report (all are counted).
pub(crate) const LISTED: usize = 1000;

#[derive(Default)]
pub(crate) struct PageScan {
    pub pages: u64,
    pub ok: u64,
    pub bad: BTreeSet<u32>,
    pub listed: Vec<BadPage>,
    /// Verified pages of kind B+tree leaf.
    pub leaves: Vec<PageId>,
}

pub(crate) fn scan(file: &dyn FileHandle, name: &str) -> std::io::Result<PageScan> {
    let pages = file.len()? / PAGE_SIZE as u64;
    let mut out = PageScan {
        pages,
        ..PageScan::default()
    };
    let mut buf = vec![0u8; (CHUNK as usize) * PAGE_SIZE];
    let mut at = 0u64;
    while at < pages {
        let n = CHUNK.min(pages - at);
        let raw = &mut buf[..n as usize * PAGE_SIZE];
        read_exact_at(file, raw, at * PAGE_SIZE as u64)?;
        for (i, bytes) in raw.chunks(PAGE_SIZE).enumerate() {
            let id = PageId((at + i as u64) as u32);
            classify(&mut out, id, bytes, name);
        }
        at += n;
    }
    Ok(out)
}

fn classify(out: &mut PageScan, id: PageId, bytes: &[u8], name: &str) {
    if bytes.iter().all(|b| *b == 0) {
        // Never written (reserved and not yet used): nothing to check.
        out.ok += 1;
        return;
    }
    let verdict = PageBuf::from_bytes(bytes).and_then(|p| p.verify(name, id).map(|()| p));
    match verdict {
        Ok(page) => {
            out.ok += 1;
            if page.kind() == Some(PageKind::BTreeLeaf) {
                out.leaves.push(id);
            }
        }
        Err(e) => {
            out.bad.insert(id.0);
            if out.listed.len() < LISTED {
                out.listed.push(BadPage {
                    page: id.0,
                    reason: e.to_string(),
                });
            }
        }
    }
}
