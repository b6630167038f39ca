//! Attachments the target already holds do not travel again: a Want
//! offers the content of the versions it would replace (`have`), the
//! source sends such content as a reference, and the target's store
//! gains a reference instead of a copy. A document edited without
//! touching its attachments costs its items on the wire, not its files.
//! A reference the target never offered is refused, and nothing is
//! written for it.

use nsf::{Database, Engine, EngineConfig, Item, ItemUpdate, ItemValue, Unid};
use replica::local::{net, pull, Content, LocalOptions, SourceSide, TargetSide};
use replica::msg::ToTarget;
use replica::{Opening, ReplicaError, SessionId};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;

fn open() -> Engine {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 8 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 32 << 20;
    cfg.log = Some(lc);
    Engine::open(Arc::new(MemBackend::new()), cfg).unwrap().0
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

/// Text-like (the store keeps it compressed) and random (kept as is).
fn contents() -> (Vec<u8>, Vec<u8>) {
    let text = b"a line of a report that repeats with small changes 0123\n".repeat(2_000);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let random = (0..60_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    (text, random)
}

fn read(db: &Database, unid: Unid, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    db.open_attachment(unid, name)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// A source holding one document with two attachments, and a replica of
/// it that received them.
fn replicated(engine: &Engine) -> (Arc<Database>, Arc<Database>, Unid) {
    let a = engine.create_database("a.fdb", "A").unwrap();
    let unid = a.create(vec![text("Subject", "quarterly")]).unwrap().unid;
    let (t, r) = contents();
    a.put_attachment(unid, "report.txt", "text/plain", &mut &t[..])
        .unwrap();
    a.put_attachment(unid, "data.bin", "application/octet-stream", &mut &r[..])
        .unwrap();
    let b = engine
        .create_replica("b.fdb", a.info().unwrap().replica_id, "B")
        .unwrap();
    let first = pull(&a, &b, &LocalOptions::default()).unwrap();
    assert_eq!(first.documents(), 1);
    assert_eq!(first.skipped.attachments, 0, "nothing held yet");
    (a, b, unid)
}

#[test]
fn an_edit_that_keeps_its_attachments_sends_them_as_references() {
    let engine = open();
    let (a, b, unid) = replicated(&engine);
    let (t, r) = contents();
    a.update(
        unid,
        vec![ItemUpdate::Set(text("Subject", "quarterly, revised"))],
        None,
        false,
    )
    .unwrap();

    let second = pull(&a, &b, &LocalOptions::default()).unwrap();
    assert_eq!(second.documents(), 1);
    assert_eq!(second.pull.replaced, 1);
    assert_eq!(second.skipped.attachments, 2);
    assert_eq!(second.skipped.bytes, (t.len() + r.len()) as u64);
    assert_eq!(read(&b, unid, "report.txt"), t);
    assert_eq!(read(&b, unid, "data.bin"), r);
    assert_eq!(
        b.get(unid).unwrap().version(),
        a.get(unid).unwrap().version()
    );
    b.check_store_refs().unwrap();

    // A new attachment travels; the unchanged one still does not.
    let extra = b"another file, new in this version\n".repeat(300);
    a.put_attachment(unid, "notes.txt", "text/plain", &mut &extra[..])
        .unwrap();
    let third = pull(&a, &b, &LocalOptions::default()).unwrap();
    assert_eq!(third.skipped.attachments, 2);
    assert_eq!(read(&b, unid, "notes.txt"), extra);
    assert_eq!(read(&b, unid, "report.txt"), t);
}

#[test]
fn a_reference_the_target_never_offered_is_refused_and_nothing_is_written() {
    let engine = open();
    let a = engine.create_database("a.fdb", "A").unwrap();
    let unid = a.create(vec![text("Subject", "secret")]).unwrap().unid;
    let (t, _) = contents();
    a.put_attachment(unid, "report.txt", "text/plain", &mut &t[..])
        .unwrap();
    let b = engine
        .create_replica("b.fdb", a.info().unwrap().replica_id, "B")
        .unwrap();
    // The target holds nothing of the document, so offers nothing; a
    // source that names the (existing, server-wide) object anyway must
    // not get it linked into the target.
    let mut source = SourceSide::new(&a, Opening::Respond, 100).unwrap();
    let mut target = TargetSide::new(
        &b,
        Opening::Initiate(SessionId(7)),
        &LocalOptions::default(),
    )
    .unwrap();
    let hash = nsf::ContentHash(Sha256::digest(&t).into());
    let crc = crc32c::crc32c(&t);
    for _ in 0..20 {
        let mut to_source = Vec::new();
        target.run(&b, &mut |p| to_source.push(p));
        for p in to_source {
            let bytes = net::encode_to_source(&p).unwrap();
            let _ = source.receive(net::decode_to_source(&bytes).unwrap());
        }
        let mut to_target = Vec::new();
        source.run(&a, &mut |p| to_target.push(p));
        for mut p in to_target {
            if let ToTarget::Note(n) = &mut p.body {
                for att in &mut n.body.attachments {
                    att.content = Content::Held {
                        hash,
                        size: t.len() as u64,
                        crc32c: crc,
                    };
                }
            }
            let bytes = net::encode_to_target(&p).unwrap();
            let limits = net::Limits::default();
            let _ = target.receive(net::decode_to_target(&bytes, &limits).unwrap());
        }
        if target.is_over() {
            break;
        }
    }
    assert!(target.is_over());
    assert!(
        matches!(target.error(), Some(ReplicaError::NotHeld { unid: u, .. }) if *u == unid),
        "{:?}",
        target.error()
    );
    assert!(b.get(unid).is_err(), "nothing written");
}
