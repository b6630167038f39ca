//! One pass of the router over every mail box.
//!
//! ```text
//!   take ≤ PER_PASS deposits, shared fairly among the boxes, interleaved
//!   for each due recipient: resolve through (Names)
//!      person ─▶ job for their mail file        unknown/ambiguous ─▶ to fail
//!   + the sender's copy as a job for the sender's mail file
//!   per mail file, up to router.workers files at once (workers.rs), for
//!   at most deliver_for (files not reached stay due for the next pass):
//!      batch.rs files the jobs (one transaction) ─▶ filed / wait
//!   expired waits ─▶ to fail;  waited past delay_notice ─▶ delay notice
//!   to fail ─▶ NDR filed in the sender's mail file ─▶ marked failed
//!   each changed deposit ─▶ one update of its box document, the
//!     updates of one box queued together and run as one transaction
//! ```
//!
//! The order is I33's: a copy, an NDR or a notice is durable (and a
//! copy in the Inbox) before the box document records it — the boxes
//! are written only after every worker is done — so a crash
//! between any two writes leaves the recipient pending, and the next pass
//! finds the copy by its UNID and writes nothing twice.

use super::batch::{Copy, Filed, Job};
use super::notices::{delay_items, delay_unid, foreign, ndr_items, ndr_unid};
use super::pending;
use super::schedule::RouterConfig;
use super::state::Routing;
use super::stats::{Phase, RouterStats};
use super::workers::{self, FileJobs, Shared};
use crate::directory::{Directory, Person, Resolved};
use crate::mailfile::open_mail_file;
use crate::message::Address;
use crate::outbound::{enqueue, open_queue, NewEntry, OutboundConfig, QueuedMessage};
use crate::template::INBOX;
use crate::{MailError, MailResult};
use nsf::{Clock, Database, DbPath, Engine, NsfError, Timestamp, Unid};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use views::Views;

/// Most deposits one pass takes, from all the boxes together (a pass
/// that leaves more says so, and its driver runs another at once). Its
/// deliveries are recorded when it ends, so a pass is kept short; with
/// the workers busy on a few hundred mail files each pass, a smaller one
/// would not deliver more per second.
const PER_PASS: usize = 500;

/// The deposits a pass took, each with its box.
type Work = Vec<(Arc<Database>, Routing)>;

/// What one pass did and what it left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Copies filed and recorded (recipients delivered).
    pub delivered: usize,
    /// Recipients given up (each in an NDR).
    pub failed: usize,
    /// Recipients that wait for a later attempt.
    pub retrying: usize,
    /// The earliest time a waiting recipient is due again.
    pub next_due: Option<Timestamp>,
    /// Work was left for another pass (a box had more than a pass takes,
    /// or recording failed): run again now.
    pub more: bool,
    /// Documents the pending views list that are not deposits.
    pub damaged: usize,
}

/// The router (see the module docs of `router`).
pub struct Router {
    config: RouterConfig,
    outbound: OutboundConfig,
    clock: Arc<dyn Clock>,
    stats: Arc<RouterStats>,
}

/// Why a remote recipient was not queued.
enum NotQueued {
    /// For good (no route, no sender address): the recipient fails.
    Final(String),
    /// For now (the queue cannot be written): it waits.
    Wait(String),
}

impl Router {
    /// A router with `config`, reading the time from `clock` (the
    /// engine's in production, a `ManualClock` in tests).
    pub fn new(config: RouterConfig, clock: Arc<dyn Clock>) -> Router {
        Router {
            config,
            outbound: OutboundConfig::default(),
            clock,
            stats: Arc::default(),
        }
    }

    /// This router queueing mail for domains `outbound` does not name as
    /// local to the outbound queue (`outbound/`), instead of looking the
    /// recipients up in the directory.
    pub fn with_outbound(self, outbound: OutboundConfig) -> Router {
        Router { outbound, ..self }
    }

    /// The statistics this router keeps.
    pub fn stats(&self) -> &Arc<RouterStats> {
        &self.stats
    }

    /// The router's current time.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Delivers what is due in every mail box (see the module docs).
    /// Fails only if the directory cannot be read (it is opened only
    /// when there is work); a box, a mail file or
    /// a deposit that cannot be handled is left for a later pass.
    pub fn pass(&self, engine: &Engine, views: &Views) -> MailResult<Pass> {
        let now = self.clock.now();
        let mut t = Instant::now();
        let mut report = Pass::default();
        let (mut work, pending) = self.take(engine, views, &mut report)?;
        let oldest = work.iter().map(|(_, r)| r.waited(now)).max();
        self.stats.queue(
            pending,
            oldest.map_or(0, |d| d.as_millis() as u64),
            report.more,
        );
        t = self.stats.phase(Phase::Scan, t);
        if work.is_empty() {
            // Nothing to route: the directory is not even opened (a server
            // without mail makes no names.fdb).
            self.stats.pass_done(0, std::iter::empty());
            return Ok(report);
        }
        let directory = Directory::open(engine, views)?;
        let mut people: BTreeMap<DbPath, Person> = BTreeMap::new();
        let mut jobs: BTreeMap<DbPath, Vec<Job>> = BTreeMap::new();
        let mut to_fail: BTreeMap<usize, Vec<(usize, String)>> = BTreeMap::new();
        let mut remote: BTreeMap<(usize, String), Vec<usize>> = BTreeMap::new();
        for (w, (_, r)) in work.iter_mut().enumerate() {
            let due: Vec<usize> = r.due(now).collect();
            for i in due {
                let address = r.deposit.deliveries[i].recipient.clone();
                if let Some(domain) = self.outbound.remote_domain(address.addr()) {
                    remote.entry((w, domain)).or_default().push(i);
                    continue;
                }
                match directory.resolve_address(&address) {
                    Ok(Resolved::Person(p)) => {
                        jobs.entry(p.mail_file.clone()).or_default().push(Job {
                            routing: w,
                            copy: Copy::Recipient(i),
                        });
                        people.insert(p.mail_file.clone(), p);
                    }
                    Ok(Resolved::Unknown) => to_fail
                        .entry(w)
                        .or_default()
                        .push((i, "unknown recipient".into())),
                    Ok(Resolved::Ambiguous(ps)) => {
                        let names: Vec<String> = ps.into_iter().map(|p| p.full_name).collect();
                        to_fail
                            .entry(w)
                            .or_default()
                            .push((i, format!("ambiguous: names {}", names.join(", "))));
                    }
                    Err(e) => r.retry(i, format!("resolving: {e}"), now),
                }
            }
            if r.sender_due(now) {
                match sender(&directory, r) {
                    Some(p) => {
                        jobs.entry(p.mail_file.clone()).or_default().push(Job {
                            routing: w,
                            copy: Copy::Sender,
                        });
                        people.insert(p.mail_file.clone(), p);
                    }
                    None => r.sender_failed(),
                }
            }
        }
        t = self.stats.phase(Phase::Resolve, t);
        // The mail files whose oldest copy is oldest go to the workers
        // first (the work is in deposit order per box, boxes interleaved).
        let mut files: Vec<(&DbPath, &Vec<Job>)> = jobs.iter().collect();
        files.sort_by_key(|(_, group)| group.iter().map(|j| j.routing).min());
        let files: Vec<FileJobs<'_>> = files
            .into_iter()
            .map(|(file, group)| FileJobs {
                person: &people[file],
                jobs: group,
            })
            .collect();
        let shared = Shared {
            engine,
            views,
            work: &work,
            now,
            clock: &*self.clock,
            stats: &self.stats,
        };
        let until = Instant::now() + self.config.deliver_for();
        let done = workers::deliver_all(&shared, &files, self.config.workers(), until);
        let mut outcomes: Vec<(Job, Filed, Timestamp)> = Vec::new();
        for (f, d) in files.iter().zip(done) {
            // A file the workers did not reach in time: its recipients
            // stay pending and due, for the next pass.
            let Some(d) = d else {
                report.more = true;
                continue;
            };
            outcomes.extend(
                f.jobs
                    .iter()
                    .zip(d.filed)
                    .map(|(j, filed)| (*j, filed, d.at)),
            );
        }
        for (job, f, at) in outcomes {
            let r = &mut work[job.routing].1;
            match (job.copy, f) {
                (Copy::Recipient(i), Filed::Done) => {
                    r.delivered(i);
                    report.delivered += 1;
                    self.stats.delivered(at.0 - r.deposited().0, at);
                }
                (Copy::Recipient(i), Filed::Wait(why)) => r.retry(i, why, now),
                (Copy::Sender, Filed::Done) => r.sender_filed(),
                (Copy::Sender, Filed::Wait(_)) => r.sender_retry(now),
            }
        }
        // Remote recipients: one queue entry per message and domain,
        // durable before the box records them (I33, I58).
        for ((w, domain), indexes) in remote {
            let (box_db, r) = &mut work[w];
            match self.queue_remote(engine, views, &directory, box_db, r, &domain, &indexes, now) {
                Ok(()) => {
                    for i in indexes {
                        r.delivered(i);
                        report.delivered += 1;
                    }
                }
                Err(NotQueued::Final(why)) => to_fail
                    .entry(w)
                    .or_default()
                    .extend(indexes.into_iter().map(|i| (i, why.clone()))),
                Err(NotQueued::Wait(why)) => {
                    for i in indexes {
                        r.retry(i, why.clone(), now);
                    }
                }
            }
        }
        t = self.stats.phase(Phase::Deliver, t);
        for (w, (_, r)) in work.iter_mut().enumerate() {
            if r.waited(now) < self.config.expire() {
                continue;
            }
            let hours = self.config.expire().as_secs() / 3600;
            for i in 0..r.deposit.deliveries.len() {
                if let Some(why) = r.waiting_reason(i) {
                    let reason = format!("not delivered in {hours} hours: {why}");
                    to_fail.entry(w).or_default().push((i, reason));
                }
            }
            if r.sender_copy == super::state::SenderCopy::Pending {
                r.sender_failed();
            }
        }
        for (w, failures) in to_fail {
            let r = &mut work[w].1;
            match self.file_ndr(engine, views, &directory, r, &failures, now) {
                Ok(()) => {
                    for (i, reason) in failures {
                        r.failed(i, reason);
                        report.failed += 1;
                    }
                }
                Err(e) => {
                    for (i, _) in failures {
                        r.retry(i, format!("the non-delivery report waits: {e}"), now);
                    }
                }
            }
        }
        for (_, r) in work.iter_mut() {
            self.maybe_delay_notice(engine, views, &directory, r, now);
        }
        t = self.stats.phase(Phase::Notices, t);
        let mut reasons: Vec<String> = Vec::new();
        let mut waiting = 0u64;
        let recorded = record(&work);
        self.stats.phase(Phase::Record, t);
        for ((_, r), recorded) in work.iter().zip(recorded) {
            if !recorded {
                // The copies are filed; a pass after the first backoff
                // finds them and records them (I33).
                let retry = Timestamp(now.0.saturating_add(60_000_000));
                report.next_due = earliest(report.next_due, retry);
                continue;
            }
            let mut waits = false;
            for i in 0..r.deposit.deliveries.len() {
                if let Some(why) = r.waiting_reason(i) {
                    reasons.push(why.to_string());
                    report.retrying += 1;
                }
                if r.deposit.deliveries[i].state == crate::DeliveryState::Pending {
                    waits = true;
                    report.next_due = earliest(report.next_due, r.next[i]);
                }
            }
            if r.sender_copy == super::state::SenderCopy::Pending {
                report.next_due = earliest(report.next_due, r.sender_next);
            }
            waiting += u64::from(waits);
        }
        self.stats
            .pass_done(waiting, reasons.iter().map(String::as_str));
        Ok(report)
    }

    /// The deposits this pass takes: at most [`PER_PASS`], shared fairly
    /// among the boxes (`pending::shares`) and interleaved box by box, so
    /// the oldest of every box come first. Also how many all the boxes
    /// hold. A box that cannot be read is left for a later pass.
    fn take(&self, engine: &Engine, views: &Views, report: &mut Pass) -> MailResult<(Work, u64)> {
        let mut queues = Vec::new();
        for path in pending::boxes(engine)? {
            match pending::queue(engine, views, &path) {
                Ok(q) => queues.push(q),
                Err(_) => report.more = true,
            }
        }
        let counts: Vec<u64> = queues.iter().map(|q| q.pending).collect();
        let total = counts.iter().sum();
        let mut taken: Vec<std::vec::IntoIter<Routing>> = Vec::new();
        let mut dbs = Vec::new();
        for (q, share) in queues.iter().zip(pending::shares(&counts, PER_PASS)) {
            if share == 0 {
                report.more |= q.pending > 0;
                continue;
            }
            match pending::scan(q, share) {
                Ok(s) => {
                    report.damaged += s.damaged;
                    report.more |= s.more;
                    taken.push(s.work.into_iter());
                    dbs.push(q.db.clone());
                }
                Err(_) => report.more = true,
            }
        }
        let mut work = Vec::new();
        loop {
            let before = work.len();
            for (deposits, db) in taken.iter_mut().zip(&dbs) {
                work.extend(deposits.next().map(|r| (db.clone(), r)));
            }
            if work.len() == before {
                return Ok((work, total));
            }
        }
    }

    /// Queues `indexes` of `r`, all in `domain`, for outbound delivery.
    /// The envelope sender is the one the message came with (submission),
    /// else the sender's first alias that is an address; the bytes are
    /// the message as it came, else rendered from its items with that
    /// address in `From:`.
    #[allow(clippy::too_many_arguments)]
    fn queue_remote(
        &self,
        engine: &Engine,
        views: &Views,
        directory: &Directory<'_>,
        box_db: &Database,
        r: &Routing,
        domain: &str,
        indexes: &[usize],
        now: Timestamp,
    ) -> Result<(), NotQueued> {
        if self.outbound.route(domain).is_none() {
            return Err(NotQueued::Final(format!("no route to {domain}")));
        }
        let person = sender(directory, r);
        let envelope_sender = match (&r.inbound_from, &person) {
            (Some(from), _) => from.clone(),
            (None, Some(p)) => p
                .aliases
                .iter()
                .find(|a| crate::smtp::Mailbox::parse(a).is_ok())
                .cloned()
                .ok_or_else(|| {
                    NotQueued::Final(format!(
                        "{} has no address to send from (an alias such as name@domain)",
                        p.full_name
                    ))
                })?,
            (None, None) => return Err(NotQueued::Final("the sender is unknown".into())),
        };
        let header = r.deposit.message.header();
        let message = match &header.original_mime {
            Some(name) => QueuedMessage::Attachment { db: box_db, name },
            // Rendered from the items, whose From is a name: the
            // envelope sender's address joins it.
            None => QueuedMessage::Bytes(crate::mime::with_sender_address(
                rendered(box_db, r).map_err(|e| NotQueued::Wait(format!("reading: {e}")))?,
                &envelope_sender,
            )),
        };
        let recipients = indexes
            .iter()
            .map(|&i| r.deposit.deliveries[i].recipient.addr().to_string())
            .collect();
        let entry = NewEntry {
            deposit: r.deposit.unid,
            domain,
            sender: &envelope_sender,
            recipients,
            return_to: person.as_ref().map_or("", |p| p.full_name.as_str()),
            message_id: header.message_id.as_str(),
            message,
        };
        open_queue(engine, views)
            .and_then(|q| enqueue(&q, entry, now))
            .map_err(|e| NotQueued::Wait(format!("outbound queue: {e}")))
    }

    /// Files one NDR for `failures` of `r` in the sender's mail file, or
    /// none if the sender is no longer in the directory.
    fn file_ndr(
        &self,
        engine: &Engine,
        views: &Views,
        directory: &Directory<'_>,
        r: &Routing,
        failures: &[(usize, String)],
        now: Timestamp,
    ) -> MailResult<()> {
        let Some(person) = sender(directory, r) else {
            return Ok(());
        };
        let indexes: Vec<usize> = failures.iter().map(|(i, _)| *i).collect();
        let listed: Vec<(String, String)> = failures
            .iter()
            .map(|(i, why)| (r.deposit.deliveries[*i].recipient.to_string(), why.clone()))
            .collect();
        let from = r.deposit.message.header().from.clone();
        let Some(from) = from else { return Ok(()) };
        let items = ndr_items(&r.deposit.message, &from, &listed, now);
        if file_notice(
            engine,
            views,
            &person,
            ndr_unid(r.deposit.unid, &indexes),
            items,
            now,
        )? {
            self.stats.ndr();
        }
        Ok(())
    }

    /// Sends the delay notice for `r` once it has waited long enough.
    fn maybe_delay_notice(
        &self,
        engine: &Engine,
        views: &Views,
        directory: &Directory<'_>,
        r: &mut Routing,
        now: Timestamp,
    ) {
        if r.delay_notice.is_some() || r.waited(now) < self.config.delay_notice() {
            return;
        }
        let waiting: Vec<(String, String)> = (0..r.deposit.deliveries.len())
            .filter_map(|i| {
                r.waiting_reason(i).map(|why| {
                    (
                        r.deposit.deliveries[i].recipient.to_string(),
                        why.to_string(),
                    )
                })
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        let (Some(person), Some(from)) = (
            sender(directory, r),
            r.deposit.message.header().from.clone(),
        ) else {
            return;
        };
        let hours = self.config.delay_notice().as_secs() / 3600;
        let items = delay_items(&r.deposit.message, &from, &waiting, hours, now);
        // A notice that cannot be filed now is tried again next pass.
        let unid = delay_unid(r.deposit.unid);
        if let Ok(new) = file_notice(engine, views, &person, unid, items, now) {
            if new {
                self.stats.delay_notice();
            }
            r.delay_notice = Some(now);
            r.changed = true;
        }
    }
}

/// The person who sent `r`: who submitted it, else by its `From` (None:
/// no longer in the directory, or the name is now ambiguous).
fn sender(directory: &Directory<'_>, r: &Routing) -> Option<Person> {
    let submitted = r
        .submitted_by
        .as_deref()
        .and_then(|p| Address::parse(p).ok());
    let from = submitted
        .as_ref()
        .or(r.deposit.message.header().from.as_ref())?;
    match directory.resolve_address(from) {
        Ok(Resolved::Person(p)) => Some(p),
        _ => None,
    }
}

/// Files a notice under `unid` in `person`'s mail file and Inbox, unless
/// it is there already (true if it was filed now).
fn file_notice(
    engine: &Engine,
    views: &Views,
    person: &Person,
    unid: Unid,
    items: Vec<nsf::Item>,
    now: Timestamp,
) -> MailResult<bool> {
    let db = open_mail_file(engine, views, person)?;
    let new = match db.get_any(unid) {
        Ok(n) if n.deleted => return Ok(false),
        Ok(_) => false,
        Err(NsfError::NoSuchDocument { .. }) => {
            db.put_foreign(foreign(unid, items, now))?;
            true
        }
        Err(e) => return Err(MailError::Nsf(e)),
    };
    // I33: in the Inbox before the box records the notice.
    views.folder_add(&db, INBOX, &[unid])?;
    Ok(new)
}

/// Records every changed deposit in its box document, after its copies
/// are durable (I33). The updates are queued first and the boxes' queues
/// run after, so the updates of one box share transactions (nsf combines
/// queued writes, up to 64 in one) instead of one commit and one log
/// fsync each. Returns, per entry of `work`, whether its state is recorded
/// (durable, I2) or had nothing to record.
fn record(work: &[(Arc<Database>, Routing)]) -> Vec<bool> {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut boxes: Vec<&Arc<Database>> = Vec::new();
    let mut queued = 0;
    for (w, (db, r)) in work.iter().enumerate() {
        if !r.changed {
            continue;
        }
        let tx = tx.clone();
        // Whether a run is due is settled by running every box's queue
        // below, so the hint is not needed.
        let _ = db.update_then(r.deposit.unid, r.updates(), (None, true), move |res| {
            let _ = tx.send((w, res.is_ok()));
        });
        queued += 1;
        if !boxes.iter().any(|b| Arc::ptr_eq(b, db)) {
            boxes.push(db);
        }
    }
    drop(tx);
    for db in boxes {
        while db.run_queued() {
            std::thread::yield_now();
        }
    }
    let mut recorded: Vec<bool> = work.iter().map(|(_, r)| !r.changed).collect();
    for (w, ok) in rx.iter().take(queued) {
        recorded[w] = ok;
    }
    recorded
}

/// The MIME of a deposit that did not come as MIME (`mime::render`, as
/// IMAP serves it).
fn rendered(box_db: &Database, r: &Routing) -> MailResult<Vec<u8>> {
    let note = box_db.get(r.deposit.unid)?;
    Ok(crate::mime::render(
        &note,
        &r.deposit.unid.to_string(),
        &mut |name| {
            let mut reader = box_db.open_attachment(r.deposit.unid, name).ok()?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut bytes).ok()?;
            Some(bytes)
        },
    ))
}

fn earliest(a: Option<Timestamp>, b: Timestamp) -> Option<Timestamp> {
    Some(a.map_or(b, |a| a.min(b)))
}
