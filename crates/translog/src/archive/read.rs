//! Reading the log back across the archive and the live log: what restore
//! rolls a database forward with.
//!
//! An LSN names its extent arithmetically, and an archived copy's name
//! carries its log id and first LSN, so finding the record at LSN X is a
//! lookup by name: the archived copy of X's extent if there is one, else
//! the live log's extent file. Records are read with the recovery reader's
//! rules (I10), so the stream ends where the valid log ends. A hole — an
//! extent in neither place while a later one exists — is an error naming
//! the extent, never a silent end: rolling forward past it would skip
//! committed transactions.
//!
//! ```text
//!  archive dir:  arc-<id>-<lsn 1>.log  arc-<id>-<lsn 2>.log
//!  log dir:                                  ext-2.log  ext-3.log  ext-4.log
//!  records_from(X): ─────────────────────────────────────────────▶ end of log
//! ```

use crate::control::ControlFile;
use crate::extent::{decode_header, list_extents};
use crate::geometry::{parse_archived_name, Geometry, EXTENT_HEADER};
use crate::reader::{ExtentFiles, LogIdentity, LogReader, Next, StopReason};
use crate::record::Body;
use crate::{LogError, TxnId};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::read_exact_at;
use storage::page::DeltaRange;
use storage::{Backend, Lsn, OpenMode, PageId};

/// One log record, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub lsn: Lsn,
    /// The life of the log that wrote it (I10).
    pub epoch: u32,
    /// The transaction (0 for checkpoints).
    pub txn: TxnId,
    pub body: RecordBody,
}

/// What a record says. Skip records (extent padding) are not returned.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordBody {
    /// A transaction starts on database instance `db_iid` at `db_path`.
    Begin { db_iid: u64, db_path: String },
    /// A whole page: a PageImage record, or a PageSparse one rebuilt into
    /// the page it stands for (I46).
    PageImage { page: PageId, image: Vec<u8> },
    /// Ranges of a page.
    PageDelta {
        page: PageId,
        ranges: Vec<DeltaRange>,
    },
    /// The transaction is committed (once durable).
    Commit { time_micros: i64 },
    Checkpoint {
        redo_lsn: Lsn,
        next_txn: u64,
        time_micros: i64,
    },
}

/// An archive directory, optionally with the live log after it.
pub struct ArchivedLog {
    backend: Arc<dyn Backend>,
    archive_dir: PathBuf,
    log_dir: Option<PathBuf>,
    id: LogIdentity,
    /// Seqs of this log's archived copies.
    archived: BTreeSet<u64>,
}

impl ArchivedLog {
    /// Opens `archive_dir`, and the live log in `log_dir` if given (its
    /// control file names the log; only reading is done, so the log may
    /// be running, though records it appends meanwhile may or may not be
    /// seen). Without `log_dir` the archive must hold one log's extents.
    pub fn open(
        backend: Arc<dyn Backend>,
        archive_dir: &Path,
        log_dir: Option<&Path>,
    ) -> Result<Self, LogError> {
        let entries = backend
            .read_dir(archive_dir)
            .map_err(|e| LogError::io(archive_dir, e))?;
        let copies: Vec<(u64, Lsn, PathBuf)> = entries
            .into_iter()
            .filter_map(|p| parse_archived_name(&p).map(|(id, lsn)| (id, lsn, p)))
            .collect();
        let (log_id, epoch, extent_size) = match log_dir {
            Some(dir) => {
                let control = ControlFile::load(backend.as_ref(), dir)?;
                let d = control.data();
                (d.log_id, d.epoch, d.extent_size)
            }
            None => only_log(backend.as_ref(), archive_dir, &copies)?,
        };
        let geo = Geometry::new(extent_size);
        let archived = copies
            .iter()
            .filter(|(id, lsn, _)| *id == log_id && lsn.0 % geo.payload() == 0)
            .map(|(_, lsn, _)| geo.seq_of(*lsn))
            .collect();
        Ok(ArchivedLog {
            backend,
            archive_dir: archive_dir.to_path_buf(),
            log_dir: log_dir.map(Path::to_path_buf),
            id: LogIdentity { geo, log_id, epoch },
            archived,
        })
    }

    /// The log these extents belong to.
    pub fn log_id(&self) -> u64 {
        self.id.log_id
    }

    /// The first LSN of each archived extent of this log, ascending.
    pub fn archived_extents(&self) -> Vec<Lsn> {
        let geo = self.id.geo;
        self.archived.iter().map(|s| geo.extent_start(*s)).collect()
    }

    /// Records from `from` (a record boundary, such as a checkpoint's redo
    /// LSN or a batch's start) to the end of the valid log, archived
    /// extents first, then the live log's.
    pub fn records_from(&self, from: Lsn) -> Records<'_> {
        let files = ExtentFiles::Archive {
            archive: &self.archive_dir,
            log: self.log_dir.as_deref(),
        };
        Records {
            log: self,
            reader: LogReader::over(self.backend.as_ref(), files, self.id, from),
            from,
            stop: None,
        }
    }

    /// Whether any extent after `seq` exists, archived or live.
    fn later_than(&self, seq: u64) -> Result<bool, LogError> {
        if self.archived.range(seq + 1..).next().is_some() {
            return Ok(true);
        }
        let Some(dir) = &self.log_dir else {
            return Ok(false);
        };
        Ok(list_extents(self.backend.as_ref(), dir)?
            .range(seq + 1..)
            .next()
            .is_some())
    }
}

/// The log id, epoch bound and extent size of an archive holding one log.
fn only_log(
    backend: &dyn Backend,
    dir: &Path,
    copies: &[(u64, Lsn, PathBuf)],
) -> Result<(u64, u32, u64), LogError> {
    let ids: BTreeSet<u64> = copies.iter().map(|(id, _, _)| *id).collect();
    let Some((_, _, path)) = copies.first() else {
        return Err(LogError::Invalid(format!(
            "{} holds no archived log extents",
            dir.display()
        )));
    };
    if ids.len() > 1 {
        return Err(LogError::Invalid(format!(
            "{} holds extents of {} logs; name the live log directory to pick one",
            dir.display(),
            ids.len()
        )));
    }
    let io = |e| LogError::io(path, e);
    let f = backend.open(path, OpenMode::Existing).map_err(io)?;
    let mut head = vec![0u8; EXTENT_HEADER as usize];
    read_exact_at(f.as_ref(), &mut head, 0).map_err(io)?;
    let h = decode_header(&head).ok_or_else(|| LogError::ArchiveMismatch {
        path: path.clone(),
        reason: "its extent header is invalid".into(),
    })?;
    let sane = (crate::MIN_EXTENT_SIZE..=crate::MAX_EXTENT_SIZE).contains(&h.extent_size);
    if !sane {
        return Err(LogError::ArchiveMismatch {
            path: path.clone(),
            reason: format!("implausible extent size {}", h.extent_size),
        });
    }
    Ok((h.log_id, u32::MAX, h.extent_size))
}

/// The records of an [`ArchivedLog`] from an LSN on.
pub struct Records<'a> {
    log: &'a ArchivedLog,
    reader: LogReader<'a>,
    from: Lsn,
    stop: Option<StopReason>,
}

impl Records<'_> {
    /// Why the stream ended, once it has.
    pub fn stop(&self) -> Option<StopReason> {
        self.stop
    }

    /// The LSN after the last record returned.
    pub fn position(&self) -> Lsn {
        self.reader.position()
    }

    fn step(&mut self) -> Result<Option<LogRecord>, LogError> {
        let geo = self.log.id.geo;
        if self.from < geo.first_lsn() {
            return Err(LogError::Invalid(format!(
                "{} lies before the log's first record at {}",
                self.from,
                geo.first_lsn()
            )));
        }
        let stop = loop {
            match self.reader.next()? {
                Next::Record { header, body } => {
                    if let Some(body) = owned(body) {
                        return Ok(Some(LogRecord {
                            lsn: header.lsn,
                            epoch: header.epoch,
                            txn: TxnId(header.txn),
                            body,
                        }));
                    }
                }
                Next::End(stop) => break stop,
            }
        };
        self.end(stop).map(|()| None)
    }

    /// The end of the stream, unless it is a hole (I31).
    fn end(&mut self, stop: StopReason) -> Result<(), LogError> {
        let geo = self.log.id.geo;
        let seq = geo.seq_of(self.reader.position());
        let hole = matches!(stop, StopReason::NoExtent | StopReason::BadExtentHeader)
            && self.log.later_than(seq)?;
        if hole {
            return Err(LogError::MissingExtent {
                seq,
                first_lsn: geo.extent_start(seq),
                archive_dir: self.log.archive_dir.clone(),
            });
        }
        self.stop = Some(stop);
        Ok(())
    }
}

impl Iterator for Records<'_> {
    type Item = Result<LogRecord, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stop.is_some() {
            return None;
        }
        match self.step() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                // One error ends the stream.
                self.stop = Some(StopReason::NoExtent);
                Some(Err(e))
            }
        }
    }
}

fn owned(body: Body<'_>) -> Option<RecordBody> {
    Some(match body {
        Body::Begin { db_iid, path } => RecordBody::Begin {
            db_iid,
            db_path: path.to_string(),
        },
        Body::PageImage { page, image } => RecordBody::PageImage {
            page,
            image: image.to_vec(),
        },
        Body::PageSparse { page, ranges } => RecordBody::PageImage {
            page,
            image: crate::record::sparse_to_image(&ranges).to_vec(),
        },
        Body::PageDelta { page, ranges } => RecordBody::PageDelta {
            page,
            ranges: ranges.into_owned(),
        },
        Body::Commit { time_micros } => RecordBody::Commit { time_micros },
        Body::Checkpoint {
            redo_lsn,
            next_txn,
            time_micros,
        } => RecordBody::Checkpoint {
            redo_lsn,
            next_txn,
            time_micros,
        },
        Body::Skip => return None,
    })
}
