//! `folio db copy SRC DST --replica` and `folio replicate SRC DST`:
//! replication between two databases of the data directory, through the
//! replication layer's local driver (`replica::local`).
//!
//! `folio replicate SRC DST --server A --peer B` asks server A to
//! replicate its own SRC with DST on server B (`peerrepl/`), and prints
//! what A answers.
//!
//! `folio replicate LOCAL REMOTE --server HOST:PORT [--create]` runs the
//! network driver instead (`replnet.rs`): LOCAL in the data directory,
//! REMOTE on the server; pull brings REMOTE's changes into LOCAL, push
//! sends LOCAL's to REMOTE, and `--create` first makes LOCAL a new
//! replica of REMOTE. `db copy --replica` stays embedded. Every pull writes through the
//! log in batches and returns once its writes and history are durable
//! (I2, I26, I27): the summary printed is of durable work. A pull cut
//! short prints nothing but the error, and a rerun resumes from the
//! history it saved.

use crate::error::{FolioError, FolioResult};
use crate::local::LocalStore;
use crate::{output, replnet};
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

impl From<&Direction> for protocol::PeerDirection {
    fn from(d: &Direction) -> Self {
        match d {
            Direction::Pull => protocol::PeerDirection::Pull,
            Direction::Push => protocol::PeerDirection::Push,
            Direction::Both => protocol::PeerDirection::Both,
        }
    }
}

/// Where `folio replicate --peer-user` reads the peer's password.
pub const PEER_PASSWORD_ENV: &str = "FOLIO_PEER_PASSWORD";

/// Asks the server `client` is connected to to replicate as `request`
/// says with its peer (`ReplicatePeer`); prints its summaries (one per
/// pull) and warnings once every pull is durable on its target.
pub fn replicate_peer(
    client: &client::blocking::Client,
    request: protocol::PeerReplication,
    out: &mut dyn Write,
) -> FolioResult<()> {
    let answer = client.replicate_peer(request)?;
    output::pretty(
        out,
        &json!({
            "pulls": output::serialized(&answer.pulls)?,
            "warnings": answer.warnings,
        }),
    )
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

/// Replicates `local` (in the data directory) with `remote` on the server
/// `client` is connected to, in `direction` (pull: from the server);
/// with `create`, `local` is first made a new replica of `remote`.
/// Prints one summary per pull.
pub fn replicate_remote(
    store: &LocalStore,
    client: &client::blocking::Client,
    (local, remote): (&str, &str),
    direction: Direction,
    selection: Option<&str>,
    create: bool,
    out: &mut dyn Write,
) -> FolioResult<()> {
    if let Some(f) = selection {
        formula::Formula::parse(f)
            .map_err(|e| FolioError::BadInput(format!("selection formula {f:?}: {e}")))?;
    }
    if selection.is_some() && direction != Direction::Pull {
        return Err(FolioError::Usage(
            "--selection applies only to documents coming from the server (a push to a server carries no formula yet)".into(),
        ));
    }
    if create && direction != Direction::Pull {
        return Err(FolioError::Usage(
            "--create makes a new local replica by a pull: leave --direction at pull".into(),
        ));
    }
    let (db, info) = client.open_database(remote)?;
    let target = if create {
        store
            .engine()
            .create_replica(local, nsf::ReplicaId(info.replica_id), &info.title)?
    } else {
        let target = store.database(local)?;
        let ours = target.info()?.replica_id;
        if ours.0 != info.replica_id {
            return Err(FolioError::BadInput(format!(
                "{local} (replica id {ours}) is not a replica of {remote} on the server (replica id {})",
                nsf::ReplicaId(info.replica_id)
            )));
        }
        target
    };
    let options = LocalOptions {
        selection: selection.map(str::to_owned),
        ..LocalOptions::default()
    };
    let mut pulls = Vec::new();
    if direction != Direction::Push {
        let r = replnet::pull(client, db, &target, &options)?;
        pulls.push(replnet::summary(remote, local, &r));
    }
    if direction != Direction::Pull {
        let r = replnet::push(client, db, &target)?;
        pulls.push(replnet::summary(local, remote, &r));
    }
    let _ = client.close_database(db);
    output::pretty(
        out,
        &json!({ "compression": client.compression().name(), "pulls": pulls }),
    )
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
        "attachments_skipped": r.skipped.attachments,
        "attachment_bytes_skipped": r.skipped.bytes,
        "messages": r.messages,
        "checkpoint": r.pull.checkpoint.0,
        "millis": r.elapsed.as_millis() as u64,
    })
}
