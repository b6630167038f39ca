//! `folio dump page|db|log`: looking inside database and log files.
//!
//! A dump only reads. It opens no data directory (no lock, no engine, no
//! recovery), goes through the storage backend like everything else, and
//! leaves every decision about the bytes to the crate that owns the
//! format: `nsf::describe_db` / `describe_db_page` (header, trees, notes,
//! blob pages, on top of `storage::describe`) and `translog::describe_log`
//! (control file, extents, records). This module only turns what they
//! return into JSON, so a format and its dump can never disagree. Damaged
//! input is their typed error, printed as one line like every failure.

use crate::error::{FolioError, FolioResult};
use crate::output;
use clap::Subcommand;
use nsf::{DbHeader, DbPageDump};
use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::{Path, PathBuf};
use storage::backend::FsBackend;
use storage::btree::NodeSummary;
use storage::describe::PageContent;
use storage::{Lsn, PageId};
use translog::{LogDump, RecordDetail, StopReason};

/// How many records `dump log` shows unless told.
pub const DEFAULT_LIMIT: usize = 1_000;

#[derive(Subcommand, Debug)]
pub enum DumpCmd {
    /// One page of a database file: its header fields, whether it
    /// verifies, and what its body holds.
    Page { file: PathBuf, page: u32 },
    /// A database file: header, pages by kind, trees, free pages, notes.
    Db { file: PathBuf },
    /// A log directory: control file, extents, and records from an LSN.
    Log {
        dir: PathBuf,
        /// First record's LSN (default: the oldest extent's first record).
        #[arg(long)]
        from: Option<u64>,
        /// Records to show at most.
        #[arg(long, default_value_t = DEFAULT_LIMIT)]
        limit: usize,
    },
}

/// Runs a dump command, printing pretty JSON to `out`.
pub fn run(cmd: &DumpCmd, out: &mut dyn Write) -> FolioResult<()> {
    let json = match cmd {
        DumpCmd::Page { file, page } => {
            page_json(&nsf::describe_db_page(&FsBackend, file, PageId(*page))?)
        }
        DumpCmd::Db { file } => db_json(&nsf::describe_db(&FsBackend, file)?),
        DumpCmd::Log { dir, from, limit } => log_json(&dump_log(dir, from.map(Lsn), *limit)?),
    };
    output::pretty(out, &json)
}

fn dump_log(dir: &Path, from: Option<Lsn>, limit: usize) -> FolioResult<LogDump> {
    if limit == 0 {
        return Err(FolioError::Usage("--limit must be at least 1".into()));
    }
    Ok(translog::describe_log(&FsBackend, dir, from, limit)?)
}

fn hex(v: u64) -> String {
    format!("{v:016X}")
}

/// A database header (design.md §2.1).
pub fn header_json(h: &DbHeader) -> Json {
    json!({
        "title": h.title,
        "replica_id": h.replica_id.to_string(),
        "instance_id": h.instance_id.to_string(),
        "created_us": h.created.0,
        "page_count": h.page_count,
        "free_list_head": h.free.head.0,
        "free_count": h.free.count,
        "note_root": h.note_root.0,
        "unid_root": h.unid_root.0,
        "seq_root": h.seq_root.0,
        "design_root": h.design_root.0,
        "next_note_id": h.next_note_id,
        "last_seq": h.last_seq.0,
        "flags": h.flags,
    })
}

/// One page (`dump page`).
pub fn page_json(d: &DbPageDump) -> Json {
    let p = &d.page;
    let content = match &p.content {
        PageContent::Unverified => Json::Null,
        PageContent::Node(NodeSummary::Leaf {
            entries,
            free_bytes,
        }) => json!({"leaf_entries": entries, "free_bytes": free_bytes}),
        PageContent::Node(NodeSummary::Internal {
            children,
            free_bytes,
        }) => json!({
            "children": children.iter().map(|(c, n)| json!({"page": c.0, "entries": n})).collect::<Vec<_>>(),
            "free_bytes": free_bytes,
        }),
        PageContent::Overflow { next, used } => json!({"next": next.0, "used": used}),
        PageContent::FreeTrunk { next, count } => json!({"next": next.0, "count": count}),
        PageContent::Free | PageContent::Owned => json!({}),
    };
    let mut v = json!({
        "page": p.id.0,
        "kind": p.kind.map(|k| format!("{k:?}")),
        "kind_byte": p.kind_byte,
        "flags": p.flags,
        "stored_id": p.stored_id.0,
        "lsn": p.lsn.0,
        "problem": p.problem,
        "content": content,
    });
    if let Some(h) = &d.header {
        v["header"] = header_json(h);
    }
    if let Some((blob, index, used)) = d.blob {
        v["blob"] = json!({"blob_id": hex(blob), "index": index, "used": used});
    }
    v
}

/// A database file (`dump db`).
pub fn db_json(d: &nsf::DbDump) -> Json {
    let n = &d.notes;
    json!({
        "header": header_json(&d.header),
        "pages": {
            "total": d.census.pages,
            "by_kind": d.census.by_kind,
            "unwritten": d.census.unwritten,
            "bad": d.census.bad.iter().map(|(p, why)| json!({"page": p.0, "problem": why})).collect::<Vec<_>>(),
        },
        "trees": d.trees.iter().map(|(name, root, st)| json!({
            "name": name, "root": root.0, "entries": st.entries, "depth": st.depth, "pages": st.pages,
        })).collect::<Vec<_>>(),
        "free_pages": d.free_pages,
        "notes": {
            "documents": n.documents,
            "stubs": n.stubs,
            "design_notes": n.design_notes,
            "attachments": n.attachments,
            "attachment_bytes": n.attachment_bytes,
            "overflow_notes": n.overflow_notes,
        },
    })
}

fn stop_name(s: StopReason) -> &'static str {
    match s {
        StopReason::NoExtent => "no next extent",
        StopReason::BadExtentHeader => "bad extent header",
        StopReason::Zeroed => "never-written bytes",
        StopReason::StaleLsn => "stale record (LSN is not its position)",
        StopReason::OldEpoch => "record of an earlier epoch",
        StopReason::Torn => "torn record",
    }
}

/// A log directory (`dump log`).
pub fn log_json(d: &LogDump) -> Json {
    let c = &d.control;
    let records: Vec<Json> = d
        .records
        .iter()
        .map(|r| {
            let mut v = json!({
                "lsn": r.lsn.0,
                "len": r.len,
                "epoch": r.epoch,
                "txn": r.txn,
                "kind": r.detail.kind_name(),
                "db_instance": r.db_instance.map(hex),
            });
            match &r.detail {
                RecordDetail::Begin { path } => v["path"] = json!(path),
                RecordDetail::PageImage { page } => v["page"] = json!(page.0),
                RecordDetail::PageDelta {
                    page,
                    ranges,
                    bytes,
                }
                | RecordDetail::PageSparse {
                    page,
                    ranges,
                    bytes,
                } => {
                    v["page"] = json!(page.0);
                    v["ranges"] = json!(ranges);
                    v["bytes"] = json!(bytes);
                }
                RecordDetail::Commit { time_micros } => v["time_us"] = json!(time_micros),
                RecordDetail::Checkpoint {
                    redo_lsn,
                    next_txn,
                    time_micros,
                } => {
                    v["redo_lsn"] = json!(redo_lsn.0);
                    v["next_txn"] = json!(next_txn);
                    v["time_us"] = json!(time_micros);
                }
                _ => {}
            }
            v
        })
        .collect();
    json!({
        "control": {
            "generation": c.generation,
            "log_id": hex(c.log_id),
            "epoch": c.epoch,
            "extent_size": c.extent_size,
            "checkpoint_lsn": c.checkpoint_lsn.0,
            "redo_lsn": c.redo_lsn.0,
        },
        "extents": d.extents.iter().map(|e| json!({
            "seq": e.seq, "first_lsn": e.first_lsn.0, "file_len": e.file_len, "problem": e.problem,
        })).collect::<Vec<_>>(),
        "records": records,
        "next": d.next.0,
        "stop": d.stop.map(stop_name),
    })
}
