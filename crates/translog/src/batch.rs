//! What a caller appends: one transaction's page changes as a batch.
//!
//! A batch becomes Begin, one record per page, and Commit, appended
//! contiguously (I3), so recovery can tell a whole transaction from a torn
//! one by the presence of its Commit alone. Everything that recovery would
//! later refuse — a path that escapes the data directory, a delta that does
//! not fit a page, a record too large for an extent — is refused here
//! instead, when the caller can still react.

use crate::geometry::Geometry;
use crate::record::Body;
use crate::LogError;
use std::borrow::Cow;
use std::path::{Component, Path};
use storage::page::{apply_delta, DeltaRange};
use storage::{Lsn, PageBuf, PageId};

/// A transaction id, unique for the life of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxnId(pub u64);

/// The new content of one page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageChange {
    /// The whole page (its crc, id and LSN fields are set at redo).
    Image(PageBuf),
    /// Changed ranges against the page's previous committed version.
    Delta(Vec<DeltaRange>),
}

/// One transaction's changes to one database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// The database instance id.
    pub db_iid: u64,
    /// The database's path relative to the data directory.
    pub db_path: String,
    pub pages: Vec<(PageId, PageChange)>,
    /// Commit time, microseconds since the Unix epoch.
    pub time_micros: i64,
}

/// Where a batch went in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    pub txn: TxnId,
    /// LSN of the Begin record.
    pub start_lsn: Lsn,
    /// LSN of each page record, in `Batch::pages` order: the page LSN each
    /// page must be sealed with before it is written to its database (I5).
    pub page_lsns: Vec<Lsn>,
    pub commit_lsn: Lsn,
    /// The end of the Commit record: the batch is committed once
    /// `durable_lsn() >= end_lsn` (I2); pass it to `wait_durable`.
    pub end_lsn: Lsn,
}

/// Rejects database paths that are empty, absolute, or leave the data
/// directory; they are joined to it at recovery.
pub(crate) fn check_db_path(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    let plain = p.components().all(|c| matches!(c, Component::Normal(_)));
    if path.is_empty() || !plain {
        return Err(format!(
            "database path {path:?} is not a plain relative path"
        ));
    }
    if path.len() > usize::from(u16::MAX) {
        return Err(format!("database path of {} bytes is too long", path.len()));
    }
    Ok(())
}

impl Batch {
    /// The batch's records (Begin, pages, Commit), checked against
    /// everything recovery relies on.
    pub(crate) fn records(&self, geo: Geometry) -> Result<Vec<Body<'_>>, LogError> {
        check_db_path(&self.db_path).map_err(LogError::Invalid)?;
        let mut out = Vec::with_capacity(self.pages.len() + 2);
        out.push(Body::Begin {
            db_iid: self.db_iid,
            path: &self.db_path,
        });
        for (page, change) in &self.pages {
            out.push(page_record(*page, change)?);
        }
        out.push(Body::Commit {
            time_micros: self.time_micros,
        });
        for body in &out {
            check_fits_extent(body, geo)?;
        }
        Ok(out)
    }
}

fn page_record(page: PageId, change: &PageChange) -> Result<Body<'_>, LogError> {
    Ok(match change {
        // I46: an image is written sparse when that is shorter.
        PageChange::Image(buf) => {
            crate::record::sparse_image(page, buf.bytes()).unwrap_or(Body::PageImage {
                page,
                image: buf.bytes(),
            })
        }
        PageChange::Delta(ranges) => {
            check_delta(page, ranges)?;
            Body::PageDelta {
                page,
                ranges: Cow::Borrowed(ranges),
            }
        }
    })
}

/// A delta must encode (counts and lengths fit u16) and apply to a page
/// (storage's own rule, tried on a scratch page).
fn check_delta(page: PageId, ranges: &[DeltaRange]) -> Result<(), LogError> {
    let too_many = ranges.len() > usize::from(u16::MAX);
    let too_long = ranges.iter().any(|r| r.bytes.len() > usize::from(u16::MAX));
    if too_many || too_long {
        return Err(LogError::Invalid(format!(
            "delta for {page} has too many or too long ranges"
        )));
    }
    apply_delta(&mut PageBuf::zeroed(), ranges)
        .map_err(|e| LogError::Invalid(format!("delta for {page}: {e}")))
}

fn check_fits_extent(body: &Body<'_>, geo: Geometry) -> Result<(), LogError> {
    let size = body.encoded_len();
    if size > geo.payload() {
        return Err(LogError::TooLarge {
            what: "record",
            size,
            limit: geo.payload(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::PageKind;

    fn batch(path: &str, pages: Vec<(PageId, PageChange)>) -> Batch {
        Batch {
            db_iid: 1,
            db_path: path.into(),
            pages,
            time_micros: 0,
        }
    }

    /// A page with no zero byte at all, header included.
    fn filled(fill: u8) -> PageBuf {
        let mut p = PageBuf::zeroed();
        p.bytes_mut().fill(fill);
        p
    }

    /// I46: a full page goes as a PageImage, a mostly empty one as the
    /// shorter PageSparse.
    #[test]
    fn records_are_begin_pages_commit() {
        let b = batch(
            "mail/a.fdb",
            vec![
                (PageId(1), PageChange::Image(filled(0x5a))),
                (
                    PageId(2),
                    PageChange::Image(PageBuf::new(PageKind::BTreeLeaf)),
                ),
            ],
        );
        let records = b.records(Geometry::new(65536)).unwrap();
        let kinds: Vec<_> = records.iter().map(|r| r.kind()).collect();
        use crate::record::Kind::*;
        assert_eq!(kinds, vec![Begin, PageImage, PageSparse, Commit]);
        assert!(records[2].encoded_len() < 100);
    }

    #[test]
    fn unsafe_paths_are_refused() {
        for p in ["", "/etc/passwd", "../x.fdb", "a/../../x", "./a.fdb"] {
            let e = batch(p, vec![]).records(Geometry::new(65536)).unwrap_err();
            assert!(matches!(e, LogError::Invalid(_)), "{p}: {e}");
        }
    }

    #[test]
    fn deltas_that_do_not_fit_a_page_are_refused() {
        let header = vec![DeltaRange {
            offset: 0,
            bytes: vec![1],
        }];
        let past_end = vec![DeltaRange {
            offset: 8190,
            bytes: vec![1; 4],
        }];
        for ranges in [header, past_end] {
            let b = batch("a.fdb", vec![(PageId(1), PageChange::Delta(ranges))]);
            assert!(matches!(
                b.records(Geometry::new(65536)),
                Err(LogError::Invalid(_))
            ));
        }
    }

    #[test]
    fn records_larger_than_an_extent_are_too_large() {
        let ranges = (0..100)
            .map(|i| DeltaRange {
                offset: 100 + i * 10,
                bytes: vec![0; 700],
            })
            .collect();
        let b = batch("a.fdb", vec![(PageId(1), PageChange::Delta(ranges))]);
        assert!(matches!(
            b.records(Geometry::new(65536)),
            Err(LogError::TooLarge { .. })
        ));
    }
}
