//! `folio db copy SRC DST --replica` and `folio replicate SRC DST`:
//! replication between two databases of the data directory, through the
//! replication layer's local driver (`replica::local`).
//!
//! Both run embedded only: the driver needs the two databases in this
//! process, and the network drivers are not written yet, so with
//! `--server` they are refused (`cli.rs`). Every pull writes through the
//! log in batches and returns once its writes and history are durable
//! (I2, I26, I27): the summary printed is of durable work. A pull cut
//! short prints nothing but the error, and a rerun resumes from the
//! history it saved.

use crate::error::{FolioError, FolioResult};
use crate::local::LocalStore;
use crate::output;
use clap::ValueEnum;
use nsf::Database;
use replica::local::{pull, LocalOptions, LocalReport};
use serde_json::{json, Value as Json};
use std::io::Write;

/// Which way documents flow between SRC and DST.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Direction {
    /// From SRC into DST.
    Pull,
    /// From DST into SRC.
    Push,
    /// Both: SRC into DST, then DST into SRC.
    Both,
}

/// Creates DST as a new replica of SRC (same replica id) and fills it
/// with a full pull; prints DST's description and the pull's summary.
pub fn copy_replica(
    store: &LocalStore,
    src: &str,
    dst: &str,
    out: &mut dyn Write,
) -> FolioResult<()> {
    let source = store.database(src)?;
    let info = source.info()?;
    let target = store
        .engine()
        .create_replica(dst, info.replica_id, &info.title)?;
    let report = run_pull(&source, &target, &LocalOptions::default())?;
    let copied = target.info()?;
    output::pretty(
        out,
        &json!({
            "database": output::serialized(&copied)?,
            "pull": summary(src, dst, &report),
        }),
    )
}

/// Replicates SRC and DST (two replicas) in `direction`, only documents
/// `selection` picks (stubs always); prints one summary per pull.
pub fn replicate(
    store: &LocalStore,
    (src, dst): (&str, &str),
    direction: Direction,
    selection: Option<&str>,
    out: &mut dyn Write,
) -> FolioResult<()> {
    if src == dst {
        return Err(FolioError::Usage(format!(
            "{src} cannot replicate with itself"
        )));
    }
    if let Some(f) = selection {
        formula::Formula::parse(f)
            .map_err(|e| FolioError::BadInput(format!("selection formula {f:?}: {e}")))?;
    }
    let (a, b) = (store.database(src)?, store.database(dst)?);
    let (ra, rb) = (a.info()?.replica_id, b.info()?.replica_id);
    if ra != rb {
        return Err(FolioError::BadInput(format!(
            "{dst} (replica id {rb}) is not a replica of {src} (replica id {ra})"
        )));
    }
    let options = LocalOptions {
        selection: selection.map(str::to_owned),
        ..LocalOptions::default()
    };
    let mut pulls = Vec::new();
    if direction != Direction::Push {
        pulls.push(summary(src, dst, &run_pull(&a, &b, &options)?));
    }
    if direction != Direction::Pull {
        pulls.push(summary(dst, src, &run_pull(&b, &a, &options)?));
    }
    output::pretty(out, &json!({ "pulls": pulls }))
}

fn run_pull(
    source: &Database,
    target: &Database,
    options: &LocalOptions,
) -> FolioResult<LocalReport> {
    pull(source, target, options).map_err(|f| {
        FolioError::Internal(format!(
            "replicating {} into {}: {} (after {} documents written; a rerun resumes)",
            source.path(),
            target.path(),
            f.error,
            f.report.pull.stored + f.report.pull.replaced
        ))
    })
}

fn summary(from: &str, to: &str, r: &LocalReport) -> Json {
    json!({
        "from": from,
        "to": to,
        "documents": r.documents(),
        "bytes": r.bytes(),
        "stored": r.pull.stored,
        "replaced": r.pull.replaced,
        "already_held": r.pull.already,
        "lost": r.pull.lost,
        "conflicts": r.conflicts(),
        "offered": r.pull.offered,
        "messages": r.messages,
        "checkpoint": r.pull.checkpoint.0,
        "millis": r.elapsed.as_millis() as u64,
    })
}
