//! The large scenario (issue 14's targets): a database of many 1 KiB
//! documents (100,000 by default), prepared embedded at the source
//! before its server starts, then
//!
//! 1. a new replica made over the LAN (loopback, straight to the server,
//!    compression off as `auto` picks on loopback): documents per second
//!    from connecting to every document durable on the target
//!    (target ≥ 20,000/s);
//! 2. the same replication run again with nothing changed, through an
//!    unlimited proxy that counts the connection's bytes: round trips and
//!    bytes on the wire (targets ≤ 4 and ≤ 2 KiB).

use super::args::ReplArgs;
use super::link::Proxy;
use super::pull::{pull, Via};
use super::source::Source;
use crate::local::LocalStore;
use crate::progress::Progress;
use client::NetCompression;
use nsf::{ForeignNote, Item, ItemValue, OriginatorId, Timestamp, Unid};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// The source database of the large scenario.
const DB: &str = "large.fdb";
/// Documents per transaction while preparing.
const BATCH: usize = 2_000;
/// Bytes of each document's body.
const BODY: usize = 1024;

/// Prepares, replicates, reruns; the figures.
pub fn run(a: &ReplArgs, base: &Path) -> Result<Value, String> {
    let progress = Progress::new("replication (large)", 3);
    let data = base.join("large-source");
    progress.step(&format!("preparing {} documents of 1 KiB", a.large_docs));
    let prepared_s = prepare(&data, a.large_docs)?;
    let src = Source::start(&data, "")?;
    let target = base.join("large-target");
    progress.step("LAN replica creation");
    let direct = Via {
        addr: src.addr(),
        proxy: None,
    };
    let created = pull(&src, direct, NetCompression::Auto, &target, DB, true)?;
    let docs_per_s = created.documents as f64 / created.seconds;
    progress.line(&format!(
        "created a replica of {} documents in {:.2} s: {docs_per_s:.0} documents/s ({:.2} CPU seconds, both sides)",
        created.documents,
        created.seconds,
        created.cpu_seconds.unwrap_or(f64::NAN)
    ));
    progress.step("rerun with nothing changed");
    let upstream = src
        .addr()
        .parse()
        .map_err(|e| format!("{}: {e}", src.addr()))?;
    let proxy = Proxy::start(upstream, "lan".parse()?)?;
    let addr = proxy.addr.to_string();
    let counted = Via {
        addr: &addr,
        proxy: Some(&proxy),
    };
    let rerun = pull(&src, counted, NetCompression::Auto, &target, DB, false)?;
    progress.line(&format!(
        "rerun with nothing changed: {} round trips, {} bytes in the session ({} on the connection)",
        rerun.round_trips,
        rerun.session_wire_bytes,
        rerun.wire_bytes.unwrap_or(0)
    ));
    progress.finish();
    drop(proxy);
    src.stop()?;
    Ok(json!({
        "documents": a.large_docs,
        "document_bytes": BODY,
        "prepared_seconds": prepared_s,
        "create": created,
        "create_documents_per_s": docs_per_s,
        "create_documents_per_cpu_s": created.cpu_seconds.map(|c| created.documents as f64 / c),
        "nothing_changed": rerun,
        "targets": {
            "create_documents_per_s": 20_000,
            "nothing_changed_round_trips": 4,
            "nothing_changed_wire_bytes": 2048,
        },
    }))
}

/// `docs` documents in [`DB`] under `data`, written embedded in
/// batches, each durable when written (I2, I25); the seconds it took.
fn prepare(data: &Path, docs: usize) -> Result<f64, String> {
    let started = Instant::now();
    let store = LocalStore::open(data, None).map_err(|e| e.to_string())?;
    let db = store
        .engine()
        .create_database(DB, "Large")
        .map_err(|e| e.to_string())?;
    let body: String = "lorem ipsum dolor sit amet consectetur "
        .chars()
        .cycle()
        .take(BODY)
        .collect();
    let mut next = 0;
    while next < docs {
        let n = BATCH.min(docs - next);
        let now = Timestamp::now();
        let batch = (next..next + n)
            .map(|i| ForeignNote {
                oid: OriginatorId {
                    unid: Unid::random(),
                    seq_num: 1,
                    seq_time: now,
                },
                created: now,
                modified: now,
                deleted: false,
                items: vec![
                    Item {
                        name: "Subject".into(),
                        value: ItemValue::Text(format!("document {i}")),
                    },
                    Item {
                        name: "Body".into(),
                        value: ItemValue::Text(body.clone()),
                    },
                ],
                attachments: Vec::new(),
                revisions: Vec::new(),
            })
            .collect();
        for r in db.put_foreign_batch(batch) {
            r.map_err(|e| format!("{DB}: {e}"))?;
        }
        next += n;
    }
    drop(db);
    store.close().map_err(|e| e.to_string())?;
    Ok(started.elapsed().as_secs_f64())
}
