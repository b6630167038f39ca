//! `folio replicate LOCAL REMOTE --server HOST:PORT`: replication between
//! a database of the data directory and one on a server, over the native
//! protocol's `Replicate` request.
//!
//! This is the network driver: one side of each pull runs here on the
//! local file (`replica::local::{TargetSide, SourceSide}`, the same store
//! work as the local driver), the other on the server, and the packets
//! between them travel in the replica crate's wire form
//! (`replica::local::net`), compressed by the connection. It lives in the
//! binary because it is the one crate that sees both `replica` and
//! `client` (the client library stays free of the replication layer).
//!
//! ```text
//!   local file ── side ──packets──▶ Replicate{packets} ──▶ server side ── server db
//!                   ▲                                          │
//!                   └────── Item(ReplicationPacket)* ◀─────────┘ streamed, then Replicated{over}
//! ```
//!
//! One step sends what the local side has to say and takes the server's
//! packets as they stream in, handing each to the local side at once (so
//! documents are written here while the server is still reading the next
//! ones). Every packet travels as fragments of at most
//! `net::FRAGMENT_BYTES` (`replica::local::net::Fragmenter`), cut from
//! the encoded packet as a step takes them, and a step carries at most
//! [`STEP_BYTES`] of them, so no request outgrows a frame whatever the
//! size of a document; the server's fragments are gathered
//! (`net::Reassembler`, within `LocalOptions::limits`) before decoding. Durability: a pull into the local file returns once
//! every batch and the history are durable here (I2, I26, I27); a push
//! returns once the server acknowledged its last page (`Done`), which its
//! side sends only after its own batches and history are durable. A cut
//! connection or a killed server ends the session with the history at
//! the last checkpoint; a rerun resumes from it.

use crate::error::{FolioError, FolioResult};
use crate::replprogress::ReplProgress;
use client::blocking::Client;
use client::{DbHandle, ReplicaDirection};
use nsf::Database;
use replica::local::net::{self, Fragmenter, Limits, Reassembler};
use replica::local::{LocalOptions, SourceSide, TargetSide};
use replica::{Opening, SessionId};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The most fragment bytes sent in one `Replicate` request (the frame
/// limit is 16 MiB by default; a fragment is at most
/// `net::FRAGMENT_BYTES` plus its header, so a request is at most this).
const STEP_BYTES: usize = 8 << 20;
/// Entries per summary page when this side is the source.
const PAGE_SIZE: u32 = 500;
/// Document bytes a push reads into its outbox before sending them
/// (`SourceSide::pause_after`): what a push holds at once is about this
/// plus the largest document, not a whole page of documents.
const RUN_BYTES: u64 = 16 << 20;

/// What one pull over the network did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetReport {
    /// Documents that travelled.
    pub documents: u64,
    /// Their content bytes.
    pub document_bytes: u64,
    /// Conflict documents made (on this side: pulls only).
    pub conflicts: u64,
    /// Replication packets' bytes both ways, before compression.
    pub bytes_uncompressed: u64,
    /// Bytes the connection moved both ways during the pull (framed and
    /// compressed).
    pub bytes_on_wire: u64,
    /// `Replicate` requests (round trips).
    pub round_trips: u64,
    /// Attachments that did not travel because the receiving side held
    /// them already (sent as references), and their original bytes.
    pub attachments_skipped: u64,
    /// The original bytes of those attachments.
    pub skipped_bytes: u64,
    /// The checkpoint reached (pulls: this side's history).
    pub checkpoint: u64,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// The local side of one session.
enum Local {
    /// Documents flow from the server here, within these limits.
    Target(TargetSide, Limits),
    /// Documents flow from here to the server.
    Source(SourceSide),
}

/// Pulls the server's `remote` (open as `db`) into `local`.
pub fn pull(
    client: &Client,
    db: DbHandle,
    local: &Database,
    options: &LocalOptions,
) -> FolioResult<NetReport> {
    let session = SessionId(rand::random());
    let side = TargetSide::new(local, Opening::Initiate(session), options)?;
    run(
        client,
        db,
        local,
        session,
        Local::Target(side, options.limits),
    )
}

/// Pushes `local` into the server's database open as `db`.
pub fn push(client: &Client, db: DbHandle, local: &Database) -> FolioResult<NetReport> {
    let session = SessionId(rand::random());
    let side =
        SourceSide::new(local, Opening::Initiate(session), PAGE_SIZE)?.pause_after(RUN_BYTES);
    run(client, db, local, session, Local::Source(side))
}

/// Packets waiting to go, each cut into fragments as a step takes them.
type Outbox = VecDeque<Fragmenter>;

fn run(
    client: &Client,
    db: DbHandle,
    local: &Database,
    session: SessionId,
    mut side: Local,
) -> FolioResult<NetReport> {
    let started = Instant::now();
    let (sent0, received0) = client.traffic();
    let direction = match side {
        Local::Target(..) => ReplicaDirection::Pull,
        Local::Source(_) => ReplicaDirection::Push,
    };
    let mut inbound = side.reassembler();
    let mut report = NetReport::default();
    let progress = ReplProgress::new(&format!("{direction:?} {}", local.path()).to_lowercase());
    let mut outbox = Outbox::new();
    let mut malformed: Option<replica::ReplicaError> = None;
    side.run(local, &mut outbox, &mut malformed);
    loop {
        if let Some(e) = malformed.take() {
            return Err(failed(local, &e.to_string()));
        }
        if outbox.is_empty() {
            if side.is_over() {
                break;
            }
            if side.is_reading() {
                // A push paused in a Want: read the next documents.
                side.run(local, &mut outbox, &mut malformed);
                continue;
            }
            return Err(failed(
                local,
                "the session stalled: both sides wait for the other",
            ));
        }
        let packets = take_step(&mut outbox);
        report.bytes_uncompressed += packets.iter().map(|p| p.len() as u64).sum::<u64>();
        report.round_trips += 1;
        let mut received = 0u64;
        let over = client.replicate(db, session.0, direction, packets, |fragment| {
            received += fragment.len() as u64;
            match inbound.push(fragment) {
                Ok(Some(packet)) => {
                    side.receive(&packet, &mut malformed);
                    // Decoded: the document's bytes are held once more,
                    // not twice, while it is written.
                    drop(packet);
                    side.run(local, &mut outbox, &mut malformed);
                }
                Ok(None) => {}
                Err(e) => malformed = malformed.take().or(Some(e)),
            }
            let (done, known) = side.progress();
            let (sent, got) = client.traffic();
            progress.update(done, known, (sent - sent0) + (got - received0));
        })?;
        report.bytes_uncompressed += received;
        if over {
            // The server's side is done and forgotten: nothing more can
            // be sent on this session (a last packet of ours, such as an
            // error answering its error, has nobody to go to).
            break;
        }
    }
    if let Some(e) = malformed.take().or(inbound.finish().err()) {
        return Err(failed(local, &e.to_string()));
    }
    if let Some(e) = side.error() {
        return Err(failed(local, &e.to_string()));
    }
    if !side.is_finished() {
        return Err(failed(local, "the server ended the session early"));
    }
    let (sent1, received1) = client.traffic();
    report.bytes_on_wire = (sent1 - sent0) + (received1 - received0);
    report.elapsed = started.elapsed();
    side.fill(&mut report);
    Ok(report)
}

/// The fragments of the next request: at least one, and no more than
/// [`STEP_BYTES`] of them together.
fn take_step(outbox: &mut Outbox) -> Vec<Vec<u8>> {
    let mut step = Vec::new();
    let mut bytes = 0;
    while let Some(packet) = outbox.front_mut() {
        match packet.next_len() {
            None => {
                outbox.pop_front();
            }
            Some(len) if !step.is_empty() && bytes + len > STEP_BYTES => break,
            Some(len) => {
                bytes += len;
                step.extend(packet.next());
            }
        }
    }
    step
}

impl Local {
    /// Carries out what the local machine asks on `db`, queueing the
    /// packets it sends.
    fn run(
        &mut self,
        db: &Database,
        outbox: &mut Outbox,
        malformed: &mut Option<replica::ReplicaError>,
    ) {
        let mut queue = |bytes: Result<Vec<u8>, replica::ReplicaError>| match bytes {
            Ok(b) => outbox.push_back(Fragmenter::new(b)),
            Err(e) => *malformed = Some(e),
        };
        match self {
            Local::Target(t, _) => {
                t.run(db, &mut |p| queue(net::encode_to_source(&p)));
            }
            Local::Source(s) => {
                s.run(db, &mut |p| queue(net::encode_to_target(&p)));
            }
        }
    }

    /// Hands the local machine one packet from the server.
    fn receive(&mut self, bytes: &[u8], malformed: &mut Option<replica::ReplicaError>) {
        // A packet the machine refuses ends its session, which its state
        // and error then say.
        let r = match self {
            Local::Target(t, limits) => net::decode_to_target(bytes, limits).map(|p| {
                let _ = t.receive(p);
            }),
            Local::Source(s) => net::decode_to_source(bytes).map(|p| {
                let _ = s.receive(p);
            }),
        };
        if let Err(e) = r {
            *malformed = Some(e);
        }
    }

    /// A push's source paused in a Want (`SourceSide::pause_after`).
    fn is_reading(&self) -> bool {
        match self {
            Local::Target(..) => false,
            Local::Source(s) => s.is_reading(),
        }
    }

    /// Documents moved so far, and how many are known to be due.
    fn progress(&self) -> (u64, u64) {
        match self {
            Local::Target(t, _) => (t.report().received, t.report().wanted),
            Local::Source(s) => (s.report().notes, s.report().entries),
        }
    }

    /// Gathers the server's fragments: within the pull's limits, or the
    /// default ones (a push receives only small control packets).
    fn reassembler(&self) -> Reassembler {
        match self {
            Local::Target(_, limits) => limits.reassembler(),
            Local::Source(_) => Limits::default().reassembler(),
        }
    }

    fn is_over(&self) -> bool {
        match self {
            Local::Target(t, _) => t.is_over(),
            Local::Source(s) => s.is_over(),
        }
    }

    fn is_finished(&self) -> bool {
        match self {
            Local::Target(t, _) => t.phase() == replica::PullPhase::Finished,
            Local::Source(s) => s.phase() == replica::SourcePhase::Finished,
        }
    }

    fn error(&self) -> Option<&replica::ReplicaError> {
        match self {
            Local::Target(t, _) => t.error(),
            Local::Source(s) => s.error(),
        }
    }

    fn fill(&self, report: &mut NetReport) {
        match self {
            Local::Target(t, _) => {
                let r = t.report();
                report.documents = r.received;
                report.document_bytes = r.received_bytes;
                report.conflicts = r.conflicts;
                report.checkpoint = r.checkpoint.0;
                report.attachments_skipped = t.skipped().attachments;
                report.skipped_bytes = t.skipped().bytes;
            }
            Local::Source(s) => {
                let r = s.report();
                report.documents = r.notes;
                report.document_bytes = r.note_bytes;
                report.attachments_skipped = s.skipped().attachments;
                report.skipped_bytes = s.skipped().bytes;
            }
        }
    }
}

fn failed(local: &Database, why: &str) -> FolioError {
    FolioError::Internal(format!(
        "replicating {} with the server: {why} (a rerun resumes from the last checkpoint)",
        local.path()
    ))
}

/// The JSON summary of one pull.
pub fn summary(from: &str, to: &str, r: &NetReport) -> Json {
    json!({
        "from": from,
        "to": to,
        "documents": r.documents,
        "bytes": r.document_bytes,
        "conflicts": r.conflicts,
        "bytes_on_wire": r.bytes_on_wire,
        "bytes_uncompressed": r.bytes_uncompressed,
        "round_trips": r.round_trips,
        "attachments_skipped": r.attachments_skipped,
        "attachment_bytes_skipped": r.skipped_bytes,
        "checkpoint": r.checkpoint,
        "millis": r.elapsed.as_millis() as u64,
    })
}
