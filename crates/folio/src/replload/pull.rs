//! One measured replication: a pull from the source, through a link's
//! proxy (or straight to the source), into a target data directory
//! opened in this process, as `folio replicate LOCAL REMOTE --server
//! [--create]` runs it (`replnet.rs`).
//!
//! The clock runs from connecting to the pull's return. Durability: the
//! pull returns once every batch and the history are durable on the
//! target (I2, I26, I27), so the time is to durable documents. The
//! bytes on the wire are what the proxy relayed both ways in that time
//! (handshake and open included); the client's own count of the session
//! and the packets' uncompressed size are kept beside them.
//!
//! The machine may be shared, so beside the wall-clock time the pull
//! records the CPU seconds both processes spent in it (this one: target
//! side, client and proxy; the source server, when the tool started it),
//! from `/proc`: documents per CPU second do not depend on neighbours.

use super::source::Source;
use crate::local::LocalStore;
use crate::mailload::measure::cpu_seconds;
use crate::replnet;
use client::NetCompression;
use replica::local::LocalOptions;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// The local name of the replica on the target.
pub const REPLICA: &str = "replica.fdb";

/// What one pull did.
#[derive(Clone, Debug, Serialize)]
pub struct Pulled {
    /// Connect to durable on the target.
    pub seconds: f64,
    /// Relayed by the proxy, both ways (`None` without a proxy).
    pub wire_bytes: Option<u64>,
    /// Of those, from the source to the target.
    pub wire_bytes_down: Option<u64>,
    /// The client's count for the replication session, both ways.
    pub session_wire_bytes: u64,
    /// The session's packets before compression.
    pub uncompressed_bytes: u64,
    /// Documents that travelled (the ACL note included).
    pub documents: u64,
    /// Their content bytes.
    pub document_bytes: u64,
    /// CPU seconds (user + system) of this process and the source
    /// server during the pull (`None` for a server the tool did not
    /// start).
    pub cpu_seconds: Option<f64>,
    /// `Replicate` requests.
    pub round_trips: u64,
    /// The method the connection settled on.
    pub compression: &'static str,
}

/// Where a pull connects, and what counts its bytes.
pub struct Via<'a> {
    pub addr: &'a str,
    pub proxy: Option<&'a super::link::Proxy>,
}

/// Pulls the source's `remote` into [`REPLICA`] in `target` (made a new
/// replica first with `create`).
pub fn pull(
    source: &Source,
    via: Via<'_>,
    compression: NetCompression,
    target: &Path,
    remote: &str,
    create: bool,
) -> Result<Pulled, String> {
    let store = LocalStore::open(target, None).map_err(|e| e.to_string())?;
    let relayed0 = via.proxy.map(|p| p.bytes());
    let cpu0 = cpu(source);
    let started = Instant::now();
    let client = source.connect(via.addr, compression)?;
    let (db, info) = client
        .open_database(remote)
        .map_err(|e| format!("opening {remote}: {e}"))?;
    let replica = if create {
        store
            .engine()
            .create_replica(REPLICA, nsf::ReplicaId(info.replica_id), &info.title)
            .map_err(|e| e.to_string())?
    } else {
        store.database(REPLICA).map_err(|e| e.to_string())?
    };
    let r = replnet::pull(&client, db, &replica, &LocalOptions::default())
        .map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu0.zip(cpu(source)).map(|(a, b)| b - a);
    let relayed = via.proxy.zip(relayed0).map(|(p, (up0, down0))| {
        let (up, down) = p.bytes();
        (up - up0, down - down0)
    });
    let compression = client.compression().name();
    let _ = client.close_database(db);
    client.close();
    drop(replica);
    store.close().map_err(|e| e.to_string())?;
    Ok(Pulled {
        seconds,
        wire_bytes: relayed.map(|(up, down)| up + down),
        wire_bytes_down: relayed.map(|(_, down)| down),
        session_wire_bytes: r.bytes_on_wire,
        uncompressed_bytes: r.bytes_uncompressed,
        documents: r.documents,
        document_bytes: r.document_bytes,
        round_trips: r.round_trips,
        cpu_seconds,
        compression,
    })
}

/// CPU seconds so far of this process and the source server.
fn cpu(source: &Source) -> Option<f64> {
    let of = |pid: u32| cpu_seconds(pid).map(|(user, system)| user + system);
    Some(of(std::process::id())? + of(source.pid()?)?)
}
