//! LSN arithmetic: where a log position lives on disk.
//!
//! The log is one byte stream cut into extents. Extent `seq` holds the LSN
//! range `[seq*P, (seq+1)*P)` with `P = extent_size - 4096` (the first 4096
//! bytes of every extent file are its header), so finding a record is
//! arithmetic, never a lookup. The first extent has seq 1, which makes 0 an
//! impossible record LSN ("before any record").
//!
//! ```text
//!  ext-0000000000000001.log            ext-0000000000000002.log
//!  +--------+-----------------------+  +--------+-------------------+
//!  | header | LSN P .. 2P           |  | header | LSN 2P .. 3P      |
//!  +--------+-----------------------+  +--------+-------------------+
//!    4096     records, Skip, padding
//! ```
//! Records never span extents: a record that does not fit in the rest of
//! an extent is preceded by a Skip record (or by nothing, if fewer than a
//! record header's bytes remain) and starts at the next extent's first LSN.

use crate::record::RECORD_HEADER;
use std::path::{Path, PathBuf};
use storage::Lsn;

/// Bytes at the start of each extent file taken by its header.
pub(crate) const EXTENT_HEADER: u64 = 4096;

/// The extent size and what follows from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    extent_size: u64,
    payload: u64,
}

/// Where a record of a given length goes when the log ends at some LSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// A Skip record is written here first (the record did not fit).
    pub(crate) skip_at: Option<Lsn>,
    /// The record's LSN.
    pub(crate) start: Lsn,
}

impl Geometry {
    /// `extent_size` must already be validated (>= 64 KiB).
    pub(crate) fn new(extent_size: u64) -> Self {
        Geometry {
            extent_size,
            payload: extent_size - EXTENT_HEADER,
        }
    }

    pub(crate) fn extent_size(self) -> u64 {
        self.extent_size
    }

    /// Bytes of log stream per extent (`P`).
    pub(crate) fn payload(self) -> u64 {
        self.payload
    }

    pub(crate) fn seq_of(self, lsn: Lsn) -> u64 {
        lsn.0 / self.payload
    }

    pub(crate) fn extent_start(self, seq: u64) -> Lsn {
        Lsn(seq.saturating_mul(self.payload))
    }

    /// The LSN of the first record of the whole log (extent 1).
    pub(crate) fn first_lsn(self) -> Lsn {
        self.extent_start(1)
    }

    pub(crate) fn next_extent_start(self, lsn: Lsn) -> Lsn {
        self.extent_start(self.seq_of(lsn).saturating_add(1))
    }

    /// Bytes from `lsn` to the end of its extent.
    pub(crate) fn room_left(self, lsn: Lsn) -> u64 {
        self.payload - lsn.0 % self.payload
    }

    /// Byte offset of `lsn` within its extent file.
    pub(crate) fn file_offset(self, lsn: Lsn) -> u64 {
        EXTENT_HEADER + lsn.0 % self.payload
    }

    /// Where a record of `len` bytes (at most `payload()`) goes if the log
    /// currently ends at `end`.
    pub(crate) fn place(self, end: Lsn, len: u64) -> Placement {
        let room = self.room_left(end);
        if room >= len {
            return Placement {
                skip_at: None,
                start: end,
            };
        }
        Placement {
            skip_at: (room >= RECORD_HEADER as u64).then_some(end),
            start: self.next_extent_start(end),
        }
    }

    /// Placements of consecutive records starting at `end`; returns their
    /// start LSNs and the end of the last one.
    pub(crate) fn layout(self, end: Lsn, lens: &[u64]) -> (Vec<Placement>, Lsn) {
        let mut pos = end;
        let places = lens
            .iter()
            .map(|&len| {
                let p = self.place(pos, len);
                pos = Lsn(p.start.0 + len);
                p
            })
            .collect();
        (places, pos)
    }
}

/// The file holding extent `seq`: `ext-<seq as 16 hex digits>.log`.
pub(crate) fn extent_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("ext-{seq:016x}.log"))
}

/// The seq of an extent file name, or `None` for any other file.
pub(crate) fn parse_extent_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_prefix("ext-")?.strip_suffix(".log")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The archived copy of the extent starting at `first_lsn` of log
/// `log_id`: `arc-<log_id as 16 hex digits>-<first_lsn as 16 hex>.log`,
/// so one archive directory can hold several logs and a restore finds an
/// LSN range by name (I31).
pub(crate) fn archived_path(dir: &Path, log_id: u64, first_lsn: Lsn) -> PathBuf {
    dir.join(format!("arc-{log_id:016x}-{:016x}.log", first_lsn.0))
}

/// The log id and first LSN of an archived copy's name, or `None` for any
/// other file (a `.partial` copy included).
pub(crate) fn parse_archived_name(path: &Path) -> Option<(u64, Lsn)> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("arc-")?.strip_suffix(".log")?;
    let (id, lsn) = rest.split_once('-')?;
    if id.len() != 16 || lsn.len() != 16 {
        return None;
    }
    let id = u64::from_str_radix(id, 16).ok()?;
    Some((id, Lsn(u64::from_str_radix(lsn, 16).ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Geometry = Geometry {
        extent_size: 65536,
        payload: 65536 - 4096,
    };

    #[test]
    fn lsn_maps_to_extent_and_offset() {
        let p = G.payload();
        assert_eq!(G.first_lsn(), Lsn(p));
        assert_eq!(G.seq_of(Lsn(p)), 1);
        assert_eq!(G.file_offset(Lsn(p)), 4096);
        assert_eq!(G.seq_of(Lsn(2 * p - 1)), 1);
        assert_eq!(G.file_offset(Lsn(2 * p - 1)), 65535);
        assert_eq!(G.next_extent_start(Lsn(p + 5)), Lsn(2 * p));
    }

    #[test]
    fn records_that_do_not_fit_move_to_the_next_extent() {
        let p = G.payload();
        let end = Lsn(2 * p - 100);
        assert_eq!(
            G.place(end, 100),
            Placement {
                skip_at: None,
                start: end
            }
        );
        assert_eq!(
            G.place(end, 101),
            Placement {
                skip_at: Some(end),
                start: Lsn(2 * p)
            }
        );
        let tail = Lsn(2 * p - 31);
        assert_eq!(
            G.place(tail, 40),
            Placement {
                skip_at: None,
                start: Lsn(2 * p)
            }
        );
    }

    #[test]
    fn layout_chains_placements() {
        let p = G.payload();
        let (places, end) = G.layout(Lsn(2 * p - 50), &[40, 40]);
        assert_eq!(places[0].start, Lsn(2 * p - 50));
        assert_eq!(places[1].start, Lsn(2 * p));
        assert_eq!(
            places[1].skip_at, None,
            "10 bytes left: no room for a Skip header"
        );
        assert_eq!(end, Lsn(2 * p + 40));
    }

    #[test]
    fn extent_names_round_trip_and_reject_others() {
        let path = extent_path(Path::new("/log"), 0x2a);
        assert_eq!(path, Path::new("/log/ext-000000000000002a.log"));
        assert_eq!(parse_extent_name(&path), Some(42));
        for bad in [
            "control",
            "ext-2a.log",
            "ext-zzzzzzzzzzzzzzzz.log",
            "ext-000000000000002a.tmp",
        ] {
            assert_eq!(parse_extent_name(Path::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn archived_names_carry_log_and_position() {
        let path = archived_path(Path::new("/arc"), 0xab, Lsn(0x1f000));
        assert_eq!(
            path,
            Path::new("/arc/arc-00000000000000ab-000000000001f000.log")
        );
        assert_eq!(parse_archived_name(&path), Some((0xab, Lsn(0x1f000))));
        for bad in [
            "arc-00000000000000ab-000000000001f000.log.partial",
            "arc-ab-1f000.log",
            "ext-000000000000002a.log",
        ] {
            assert_eq!(parse_archived_name(Path::new(bad)), None, "{bad}");
        }
    }
}
