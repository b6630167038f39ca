//! `folio backup` and `folio restore` (design.md §3.6): argument checks
//! and the JSON they print. Backup runs over any store (embedded, or the
//! server's own engine with --server); restore only over a data
//! directory, with the server stopped.

use crate::error::{FolioError, FolioResult};
use crate::output;
use crate::store::Store;
use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `folio backup DEST [--db PATH…]`.
pub fn backup(
    store: &dyn Store,
    dest: &Path,
    dbs: &[String],
    out: &mut dyn Write,
) -> FolioResult<()> {
    let s = store.backup(dest, dbs)?;
    output::pretty(
        out,
        &json!({
            "dest": s.dest,
            "databases": s.databases,
            "log_id": s.log_id,
            "start_lsn": s.start_lsn,
            "end_lsn": s.end_lsn,
            "bytes_copied": s.bytes,
            "millis": s.millis,
        }),
    )
}

/// The options of `folio restore`, as given.
pub struct RestoreArgs<'a> {
    pub db: Option<String>,
    pub until: Option<&'a str>,
    pub to: Option<String>,
    pub archive_dir: Option<PathBuf>,
}

/// `folio restore BACKUP [--db PATH] [--until TIME] [--to NEWPATH]`.
pub fn restore(
    store: &dyn Store,
    backup: &Path,
    args: RestoreArgs<'_>,
    out: &mut dyn Write,
) -> FolioResult<()> {
    let until = args
        .until
        .map(|s| {
            nsf::Timestamp::parse_rfc3339(s).ok_or_else(|| {
                FolioError::BadInput(format!("--until {s:?}: expected an RFC 3339 time"))
            })
        })
        .transpose()?;
    let opts = nsf::RestoreOptions {
        db: args.db,
        until,
        to: args.to,
        archive_dir: args.archive_dir,
    };
    let reports = store.restore(backup, &opts)?;
    output::pretty(out, &Json::Array(reports.iter().map(report).collect()))
}

fn report(r: &nsf::RestoreReport) -> Json {
    json!({
        "path": r.path,
        "from_instance": r.from_instance.to_string(),
        "new_instance": r.new_instance.to_string(),
        "start_lsn": r.start_lsn.0,
        "reached_lsn": r.reached_lsn.0,
        "last_commit": r.last_commit.map(|t| t.to_rfc3339()),
        "transactions_applied": r.txns_applied,
        "pages_rolled_forward": r.pages_rolled_forward,
        "stopped": r.stopped,
        "attachment_objects_missing": r.objects_missing,
    })
}
