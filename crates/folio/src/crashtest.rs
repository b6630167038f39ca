//! The crash-test workload, its model of acknowledged state, and the
//! verifier that holds a recovered data directory to that model.
//!
//! The same code runs in two harnesses:
//! - *kill -9*: a child `folio debug crash-workload` runs several writer
//!   threads over several databases, printing a `B` line before each
//!   operation and an `A` line once it returned (was durable). The parent
//!   kills it at a random moment, reads every line that made it into the
//!   pipe, recovers the directory and verifies.
//! - *simulated power cut*: the workload runs in-process on the
//!   crash-simulating backend, which freezes at a chosen sync point and
//!   hands back what the disk would hold, torn writes included.
//!
//! Every document's content is a pure function of its key and version, so
//! the verifier can tell a whole version from a damaged one without having
//! kept a copy. The rule checked: every acknowledged operation is present;
//! an operation that had begun but was not acknowledged is either wholly
//! present or wholly absent; nothing else exists.

use nsf::{Engine, Item, ItemUpdate, ItemValue, Note, NsfError, NsfResult, Unid};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::Arc;

/// Arguments of the child process.
#[derive(clap::Args, Debug, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    pub seed: u64,
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    #[arg(long, default_value_t = 3)]
    pub dbs: usize,
    /// Operations per thread (the parent normally kills the child first).
    #[arg(long, default_value_t = u64::MAX)]
    pub ops: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Create,
    Update,
    Delete,
    Attach,
}

impl OpKind {
    fn as_str(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Update => "update",
            OpKind::Delete => "delete",
            OpKind::Attach => "attach",
        }
    }
    fn parse(s: &str) -> Option<OpKind> {
        Some(match s {
            "create" => OpKind::Create,
            "update" => OpKind::Update,
            "delete" => OpKind::Delete,
            "attach" => OpKind::Attach,
            _ => return None,
        })
    }
}

/// One operation: on document `key` in database `db`, producing `version`
/// (the document version, or for attachments the attachment version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub thread: usize,
    pub kind: OpKind,
    pub key: u64,
    pub db: usize,
    pub version: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Begin(Op),
    Ack(Op, Unid),
}

impl Event {
    pub fn to_line(&self) -> String {
        let (tag, op, unid) = match self {
            Event::Begin(op) => ("B", op, "-".to_string()),
            Event::Ack(op, u) => ("A", op, u.to_string()),
        };
        format!(
            "{tag} {} {} {:x} {} {} {unid}",
            op.thread,
            op.kind.as_str(),
            op.key,
            op.db,
            op.version
        )
    }

    pub fn from_line(line: &str) -> Option<Event> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 7 {
            return None;
        }
        let op = Op {
            thread: f[1].parse().ok()?,
            kind: OpKind::parse(f[2])?,
            key: u64::from_str_radix(f[3], 16).ok()?,
            db: f[4].parse().ok()?,
            version: f[5].parse().ok()?,
        };
        match f[0] {
            "B" => Some(Event::Begin(op)),
            "A" => Some(Event::Ack(op, f[6].parse().ok()?)),
            _ => None,
        }
    }
}

pub fn db_path(i: usize) -> String {
    format!("crash/db{i}.fdb")
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The body text of version `version` of document `key`. Mostly small;
/// one in eight is large enough to need an overflow chain.
pub fn body(key: u64, version: u32) -> String {
    let h = mix(key ^ (u64::from(version) << 48));
    let len = if h.is_multiple_of(8) {
        4_000 + (h >> 8) % 30_000
    } else {
        (h >> 8) % 1_500
    } as usize;
    let mut rng = StdRng::seed_from_u64(h);
    (0..len)
        .map(|_| rng.gen_range(b'a'..=b'z') as char)
        .collect()
}

/// Attachment content for attachment version `aver` of document `key`:
/// 12 bytes naming key and version, then pseudo-random bytes.
pub fn attachment(key: u64, aver: u32) -> Vec<u8> {
    let h = mix(key.rotate_left(17) ^ u64::from(aver));
    let len = 12 + (h % 300_000) as usize;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&aver.to_le_bytes());
    let mut rng = StdRng::seed_from_u64(h);
    out.resize_with(len, || rng.gen());
    out
}

fn doc_items(key: u64, version: u32) -> Vec<Item> {
    let b = body(key, version);
    vec![
        Item {
            name: "Key".into(),
            value: ItemValue::Text(format!("{key:x}")),
        },
        Item {
            name: "Version".into(),
            value: ItemValue::Number(f64::from(version)),
        },
        Item {
            name: "BodyCrc".into(),
            value: ItemValue::Number(f64::from(crc32c::crc32c(b.as_bytes()))),
        },
        Item {
            name: "Body".into(),
            value: ItemValue::Text(b),
        },
        Item {
            name: "Tags".into(),
            value: ItemValue::TextList(vec![format!("v{version}"), "crash".into()]),
        },
    ]
}

/// A document a worker owns.
#[derive(Clone, Debug)]
struct Owned {
    key: u64,
    db: usize,
    unid: Unid,
    version: u32,
    aver: u32,
}

/// One writer thread's state: the documents it owns and its random stream.
pub struct Worker {
    thread: usize,
    rng: StdRng,
    run_tag: u64,
    counter: u64,
    dbs: usize,
    docs: Vec<Owned>,
}

impl Worker {
    pub fn new(thread: usize, seed: u64, dbs: usize) -> Worker {
        Worker {
            thread,
            rng: StdRng::seed_from_u64(mix(seed ^ thread as u64)),
            run_tag: seed & 0xff_ffff,
            counter: 0,
            dbs,
            docs: Vec::new(),
        }
    }

    /// Performs one random operation, reporting begin and acknowledgement.
    pub fn step(&mut self, engine: &Engine, emit: &mut dyn FnMut(Event)) -> NsfResult<()> {
        let roll = self.rng.gen_range(0..100);
        if self.docs.is_empty() || roll < 35 {
            return self.create(engine, emit);
        }
        let i = self.rng.gen_range(0..self.docs.len());
        match roll {
            35..=74 => self.update(engine, i, emit),
            75..=84 => self.delete(engine, i, emit),
            _ => self.attach(engine, i, emit),
        }
    }

    fn op(&self, kind: OpKind, key: u64, db: usize, version: u32) -> Op {
        Op {
            thread: self.thread,
            kind,
            key,
            db,
            version,
        }
    }

    fn create(&mut self, engine: &Engine, emit: &mut dyn FnMut(Event)) -> NsfResult<()> {
        self.counter += 1;
        let key = self.run_tag << 40 | (self.thread as u64) << 32 | self.counter;
        let db = self.rng.gen_range(0..self.dbs);
        let op = self.op(OpKind::Create, key, db, 1);
        emit(Event::Begin(op));
        let meta = engine
            .open_database(&db_path(db))?
            .create(doc_items(key, 1))?;
        emit(Event::Ack(op, meta.unid));
        self.docs.push(Owned {
            key,
            db,
            unid: meta.unid,
            version: 1,
            aver: 0,
        });
        Ok(())
    }

    fn update(&mut self, engine: &Engine, i: usize, emit: &mut dyn FnMut(Event)) -> NsfResult<()> {
        let d = self.docs[i].clone();
        let op = self.op(OpKind::Update, d.key, d.db, d.version + 1);
        emit(Event::Begin(op));
        let updates = doc_items(d.key, d.version + 1)
            .into_iter()
            .map(ItemUpdate::Set)
            .collect();
        engine
            .open_database(&db_path(d.db))?
            .update(d.unid, updates, None, false)?;
        emit(Event::Ack(op, d.unid));
        self.docs[i].version += 1;
        Ok(())
    }

    fn delete(&mut self, engine: &Engine, i: usize, emit: &mut dyn FnMut(Event)) -> NsfResult<()> {
        let d = self.docs[i].clone();
        let op = self.op(OpKind::Delete, d.key, d.db, d.version);
        emit(Event::Begin(op));
        engine
            .open_database(&db_path(d.db))?
            .delete(d.unid, None, false)?;
        emit(Event::Ack(op, d.unid));
        self.docs.swap_remove(i);
        Ok(())
    }

    fn attach(&mut self, engine: &Engine, i: usize, emit: &mut dyn FnMut(Event)) -> NsfResult<()> {
        let d = self.docs[i].clone();
        let op = self.op(OpKind::Attach, d.key, d.db, d.aver + 1);
        emit(Event::Begin(op));
        let content = attachment(d.key, d.aver + 1);
        let db = engine.open_database(&db_path(d.db))?;
        db.put_attachment(
            d.unid,
            "a.bin",
            "application/octet-stream",
            &mut content.as_slice(),
        )?;
        emit(Event::Ack(op, d.unid));
        self.docs[i].aver += 1;
        Ok(())
    }

    /// Takes ownership of documents left by earlier runs (those whose key
    /// maps to this thread), so updates and deletes reach old pages too.
    fn adopt(&mut self, found: &[FoundDoc], threads: usize) {
        for f in found
            .iter()
            .filter(|f| (mix(f.key) % threads as u64) as usize == self.thread)
        {
            self.docs.push(Owned {
                key: f.key,
                db: f.db,
                unid: f.unid,
                version: f.version,
                aver: f.aver,
            });
        }
    }
}

/// A live document as found on disk.
#[derive(Clone, Debug)]
pub struct FoundDoc {
    pub key: u64,
    pub db: usize,
    pub unid: Unid,
    pub version: u32,
    pub aver: u32,
}

fn number(n: &Note, name: &str) -> Option<f64> {
    match n.item(name).map(|i| &i.value) {
        Some(ItemValue::Number(v)) => Some(*v),
        _ => None,
    }
}

fn text<'n>(n: &'n Note, name: &str) -> Option<&'n str> {
    match n.item(name).map(|i| &i.value) {
        Some(ItemValue::Text(v)) => Some(v),
        _ => None,
    }
}

/// Checks one live document's content against the pure functions above;
/// returns what it is, or why it is damaged.
fn inspect(engine: &Engine, db: usize, n: &Note) -> Result<FoundDoc, String> {
    let unid = n.oid.unid;
    let key = text(n, "Key")
        .and_then(|k| u64::from_str_radix(k, 16).ok())
        .ok_or(format!("{unid}: no Key item"))?;
    let version = number(n, "Version").ok_or(format!("{unid}: no Version item"))? as u32;
    let b = text(n, "Body").ok_or(format!("{unid}: no Body"))?;
    if b != body(key, version)
        || number(n, "BodyCrc") != Some(f64::from(crc32c::crc32c(b.as_bytes())))
    {
        return Err(format!(
            "{unid} (key {key:x}): body does not match version {version}"
        ));
    }
    let mut aver = 0;
    if n.attachments().any(|a| a.name == "a.bin") {
        let mut content = Vec::new();
        engine
            .open_database(&db_path(db))
            .and_then(|d| d.open_attachment(unid, "a.bin"))
            .map_err(|e| e.to_string())?
            .read_to_end(&mut content)
            .map_err(|e| format!("{unid}: reading attachment: {e}"))?;
        if content.len() < 12 {
            return Err(format!("{unid}: attachment too short"));
        }
        aver = u32::from_le_bytes(content[8..12].try_into().unwrap());
        if content != attachment(key, aver) {
            return Err(format!(
                "{unid} (key {key:x}): attachment does not match version {aver}"
            ));
        }
    }
    Ok(FoundDoc {
        key,
        db,
        unid,
        version,
        aver,
    })
}

/// Scans every crash-test database: consistency check plus content check of
/// every live document.
pub fn scan(engine: &Engine, dbs: usize) -> Result<Vec<FoundDoc>, String> {
    let mut out = Vec::new();
    for i in 0..dbs {
        let db = match engine.open_database(&db_path(i)) {
            Ok(db) => db,
            Err(NsfError::NoSuchDatabase(_)) => continue,
            Err(e) => return Err(format!("{}: {e}", db_path(i))),
        };
        db.check()
            .map_err(|e| format!("{}: check failed: {e}", db_path(i)))?;
        let mut notes = Vec::new();
        db.for_each_note(|n| {
            if !views::is_design_note(&n) {
                notes.push(n);
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        for n in notes {
            out.push(inspect(engine, i, &n)?);
        }
    }
    Ok(out)
}

/// Expected state of one document.
#[derive(Clone, Debug)]
struct MDoc {
    db: usize,
    unid: Unid,
    version: u32,
    aver: u32,
    deleted: bool,
}

/// What the verifier knows: acknowledged state plus operations in flight.
#[derive(Default)]
pub struct Model {
    docs: HashMap<u64, MDoc>,
    inflight: HashMap<usize, Op>,
    /// Acknowledged operations on documents the model does not know.
    unknown: Vec<Op>,
    pub acked: u64,
}

/// Outcome of one verification.
#[derive(Debug, Default)]
pub struct Verified {
    pub live_docs: usize,
    pub inflight_applied: usize,
    pub inflight_absent: usize,
}

impl Model {
    pub fn apply(&mut self, ev: &Event) {
        match ev {
            Event::Begin(op) => {
                self.inflight.insert(op.thread, *op);
            }
            Event::Ack(op, unid) => {
                self.inflight.remove(&op.thread);
                self.acked += 1;
                self.commit(op, *unid);
            }
        }
    }

    fn commit(&mut self, op: &Op, unid: Unid) {
        if op.kind == OpKind::Create {
            self.docs.insert(
                op.key,
                MDoc {
                    db: op.db,
                    unid,
                    version: 1,
                    aver: 0,
                    deleted: false,
                },
            );
            return;
        }
        let Some(d) = self.docs.get_mut(&op.key) else {
            self.unknown.push(*op);
            return;
        };
        match op.kind {
            OpKind::Update => d.version = op.version,
            OpKind::Delete => d.deleted = true,
            OpKind::Attach => d.aver = op.version,
            OpKind::Create => {}
        }
    }

    /// Seeds the model from a directory's current (verified) content.
    pub fn adopt(&mut self, found: &[FoundDoc]) {
        for f in found {
            self.docs.insert(
                f.key,
                MDoc {
                    db: f.db,
                    unid: f.unid,
                    version: f.version,
                    aver: f.aver,
                    deleted: false,
                },
            );
        }
    }

    /// Holds the recovered directory to the model; then folds the outcome
    /// of in-flight operations into it so the next trial continues.
    pub fn verify(&mut self, engine: &Engine, dbs: usize) -> Result<Verified, String> {
        if let Some(op) = self.unknown.first() {
            return Err(format!(
                "the workload acknowledged {op:?} on a document the model never saw"
            ));
        }
        let found = scan(engine, dbs)?;
        let mut v = Verified {
            live_docs: found.len(),
            ..Verified::default()
        };
        let inflight: HashMap<u64, Op> = self.inflight.values().map(|op| (op.key, *op)).collect();
        let mut seen = std::collections::HashSet::new();
        for f in &found {
            seen.insert(f.key);
            let pending = inflight.get(&f.key);
            match self.docs.get(&f.key) {
                None => match pending {
                    Some(op) if op.kind == OpKind::Create && f.version == 1 && f.aver == 0 => {
                        v.inflight_applied += 1
                    }
                    _ => {
                        return Err(format!(
                            "document with key {:x} exists but was never acknowledged",
                            f.key
                        ))
                    }
                },
                Some(m) if m.deleted => {
                    return Err(format!("deleted document {:x} is back", f.key))
                }
                Some(m) => check_versions(m, f, pending, &mut v)?,
            }
        }
        for (key, m) in &self.docs {
            if m.deleted || seen.contains(key) {
                continue;
            }
            match inflight.get(key) {
                Some(op) if op.kind == OpKind::Delete => v.inflight_applied += 1,
                _ => {
                    return Err(format!(
                        "acknowledged document {key:x} ({}) is missing",
                        m.unid
                    ))
                }
            }
        }
        self.check_stubs(engine)?;
        v.inflight_absent += inflight
            .values()
            .filter(|op| op.kind == OpKind::Create && !seen.contains(&op.key))
            .count();
        self.docs.retain(|_, m| !m.deleted);
        self.docs.retain(|k, _| seen.contains(k));
        self.adopt(&found);
        self.inflight.clear();
        Ok(v)
    }

    fn check_stubs(&self, engine: &Engine) -> Result<(), String> {
        for (key, m) in self.docs.iter().filter(|(_, m)| m.deleted) {
            let db = engine
                .open_database(&db_path(m.db))
                .map_err(|e| e.to_string())?;
            match db.get_any(m.unid) {
                Ok(n) if n.deleted => {}
                Ok(_) => return Err(format!("deleted document {key:x} is not a stub")),
                Err(e) => return Err(format!("deletion stub of {key:x} missing: {e}")),
            }
        }
        Ok(())
    }

    pub fn live(&self) -> usize {
        self.docs.values().filter(|d| !d.deleted).count()
    }
}

fn check_versions(
    m: &MDoc,
    f: &FoundDoc,
    pending: Option<&Op>,
    v: &mut Verified,
) -> Result<(), String> {
    let ok_version = f.version == m.version
        || matches!(pending, Some(op) if op.kind == OpKind::Update && op.version == f.version);
    let ok_aver = f.aver == m.aver
        || matches!(pending, Some(op) if op.kind == OpKind::Attach && op.version == f.aver);
    if !ok_version {
        return Err(format!(
            "document {:x}: version {} found, {} acknowledged",
            f.key, f.version, m.version
        ));
    }
    if !ok_aver {
        return Err(format!(
            "document {:x}: attachment version {} found, {} acknowledged",
            f.key, f.aver, m.aver
        ));
    }
    if f.version != m.version || f.aver != m.aver {
        v.inflight_applied += 1;
    } else if pending.is_some() {
        v.inflight_absent += 1;
    }
    Ok(())
}

/// Creates the crash-test databases that do not exist yet.
pub fn ensure_dbs(engine: &Engine, dbs: usize) -> NsfResult<()> {
    for i in 0..dbs {
        match engine.open_database(&db_path(i)) {
            Ok(_) => {}
            Err(NsfError::NoSuchDatabase(_)) => {
                engine.create_database(&db_path(i), &format!("crash test {i}"))?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The views every crash-test database carries: one logged, one not.
pub const CRASH_VIEWS: [(&str, bool); 2] = [("Logged", true), ("Unlogged", false)];

/// Creates the crash-test views that do not exist yet.
pub fn ensure_views(views: &views::Views, engine: &Engine, dbs: usize) -> Result<(), String> {
    for i in 0..dbs {
        let db = engine
            .open_database(&db_path(i))
            .map_err(|e| e.to_string())?;
        let have: Vec<String> = views
            .list(&db)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for (name, logged) in CRASH_VIEWS {
            if have.iter().any(|h| h == name) {
                continue;
            }
            let cols = ["Key=Key:asc", "V=Version"]
                .iter()
                .map(|c| views::ColumnDef::parse(c))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            let mut def = views::ViewDef::view(name, "SELECT @All", cols);
            def.logged = logged;
            views.create(&db, def).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Brings every crash-test view up to date, forever (a child thread).
fn update_views_forever(views: &views::Views, engine: &Engine, dbs: usize) -> Result<(), String> {
    loop {
        for i in 0..dbs {
            let db = engine
                .open_database(&db_path(i))
                .map_err(|e| e.to_string())?;
            for (name, _) in CRASH_VIEWS {
                views.update(&db, name).map_err(|e| e.to_string())?;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// What checking the views after a crash found.
#[derive(Clone, Copy, Debug, Default)]
pub struct ViewCheck {
    /// Unlogged indexes rebuilt because the crash left them untrusted.
    pub unlogged_rebuilt: usize,
}

/// After recovery: a logged index is used as it is (never rebuilt once
/// built), every index agrees with the documents, and keys are in order.
pub fn check_views(views: &views::Views, engine: &Engine, dbs: usize) -> Result<ViewCheck, String> {
    let mut out = ViewCheck::default();
    for i in 0..dbs {
        let db = match engine.open_database(&db_path(i)) {
            Ok(db) => db,
            Err(NsfError::NoSuchDatabase(_)) => continue, // cut before it was made
            Err(e) => return Err(format!("{}: {e}", db_path(i))),
        };
        let mut docs = std::collections::HashSet::new();
        db.for_each_note(|n| {
            if !views::is_design_note(&n) {
                docs.insert(n.oid.unid);
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        for (name, logged) in CRASH_VIEWS {
            let coll = match views.open(&db, name) {
                Ok(c) => c,
                Err(views::ViewError::NoSuchView { .. }) => continue, // killed before creating it
                Err(e) => return Err(format!("{}: view {name}: {e}", db_path(i))),
            };
            match (&coll.rebuilt, logged) {
                (Some(why), true) if why != "first use" => {
                    return Err(format!(
                        "{}: logged view was rebuilt after the crash: {why}",
                        db_path(i)
                    ))
                }
                (Some(why), false) if why != "first use" => out.unlogged_rebuilt += 1,
                _ => {}
            }
            let rows = coll
                .read(&views::Start::Position(0), usize::MAX, false, false)
                .map_err(|e| e.to_string())?;
            let mut seen = std::collections::HashSet::new();
            let mut last_key = String::new();
            for r in &rows {
                let views::Row::Entry { unid, columns, .. } = r else {
                    continue;
                };
                let key = match columns.first() {
                    Some(views::Value::Text(l)) => l.first().cloned().unwrap_or_default(),
                    _ => String::new(),
                };
                if key.to_lowercase() < last_key {
                    return Err(format!("{}: view {name} out of order at {key}", db_path(i)));
                }
                last_key = key.to_lowercase();
                seen.insert(*unid);
            }
            if seen != docs || rows.len() != docs.len() {
                return Err(format!(
                    "{}: view {name} has {} entries ({} distinct) for {} documents",
                    db_path(i),
                    rows.len(),
                    seen.len(),
                    docs.len()
                ));
            }
        }
        db.check().map_err(|e| format!("{}: {e}", db_path(i)))?;
    }
    Ok(out)
}

/// Workers for a run, owning the documents already on disk.
pub fn workers(seed: u64, threads: usize, dbs: usize, found: &[FoundDoc]) -> Vec<Worker> {
    (0..threads)
        .map(|t| {
            let mut w = Worker::new(t, seed, dbs);
            w.adopt(found, threads);
            w
        })
        .collect()
}

/// The child process: open the directory (recovering it), then run the
/// workload until killed, one line per event, flushed as it happens.
pub fn run_child(c: &ChildArgs, args: &crate::cli::Args) -> Result<(), String> {
    // The workload runs until killed; if the harness itself dies, take the
    // child with it rather than leave it writing forever.
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag on this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let cfg = crate::datadir::settings(args.data_dir(), args.config.as_deref())?;
    let dd = crate::datadir::open(args.data_dir(), cfg)?;
    let engine = Arc::new(dd.engine);
    let views = Arc::new(dd.views);
    ensure_dbs(&engine, c.dbs).map_err(|e| e.to_string())?;
    ensure_views(&views, &engine, c.dbs)?;
    let found = scan(&engine, c.dbs)?;
    {
        let (engine, views, dbs) = (engine.clone(), views.clone(), c.dbs);
        std::thread::spawn(move || {
            if let Err(e) = update_views_forever(&views, &engine, dbs) {
                eprintln!("view updater: {e}");
            }
        });
    }
    println!("READY {}", found.len());
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let handles: Vec<_> = workers(c.seed, c.threads, c.dbs, &found)
        .into_iter()
        .map(|mut w| {
            let (engine, out, ops) = (engine.clone(), out.clone(), c.ops);
            std::thread::spawn(move || -> Result<(), String> {
                let mut emit = |ev: Event| {
                    let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = writeln!(o, "{}", ev.to_line());
                    let _ = o.flush();
                };
                for _ in 0..ops {
                    w.step(&engine, &mut emit).map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "worker panicked".to_string())??;
    }
    match Arc::try_unwrap(engine) {
        Ok(e) => e.close().map_err(|e| e.to_string()),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_round_trip() {
        let op = Op {
            thread: 3,
            kind: OpKind::Attach,
            key: 0xabc_0000_0001,
            db: 2,
            version: 7,
        };
        for ev in [Event::Begin(op), Event::Ack(op, Unid::random())] {
            assert_eq!(Event::from_line(&ev.to_line()), Some(ev));
        }
        assert_eq!(Event::from_line("B garbage"), None);
    }

    #[test]
    fn content_is_a_pure_function_of_key_and_version() {
        assert_eq!(body(5, 2), body(5, 2));
        assert_ne!(body(5, 2), body(5, 3));
        let a = attachment(9, 4);
        assert_eq!(a, attachment(9, 4));
        assert_eq!(u32::from_le_bytes(a[8..12].try_into().unwrap()), 4);
    }
}
