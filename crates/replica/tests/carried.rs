//! Attachments travel in their stored form (design.md §2.9, §11.7, I47):
//! both sides of a pull over two engines, every packet through the wire
//! form (`replica::local::net`) as a network driver carries it. A
//! compressible attachment crosses as its zstd stream and is stored as
//! is; an incompressible one crosses as it is; a target with
//! `attachment_compression = "off"` stores the original; a truncated or
//! corrupt stream is refused with a typed error and nothing is stored.

use nsf::{
    AttachmentCompression, Database, Engine, EngineConfig, Item, ItemValue, StoredForm, Unid,
};
use replica::local::net::{self, TargetPacket};
use replica::local::{Content, LocalOptions, SourceSide, TargetSide};
use replica::msg::ToTarget;
use replica::{Opening, PullPhase, ReplicaError, SessionId};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;

fn engine(compression: AttachmentCompression) -> Engine {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 8 << 20;
    cfg.background = false;
    cfg.attachment_compression = compression;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 16 << 20;
    cfg.log = Some(lc);
    Engine::open(Arc::new(MemBackend::new()), cfg).unwrap().0
}

fn text_bytes(n: usize) -> Vec<u8> {
    let words = [
        "replica",
        "attachment",
        "stored",
        "form",
        "zstd",
        "wire",
        "folio",
    ];
    let mut out = Vec::with_capacity(n + 16);
    let mut i = 0usize;
    while out.len() < n {
        out.extend_from_slice(words[(i * 7 + i / 3) % words.len()].as_bytes());
        out.push(b' ');
        i += 1;
    }
    out.truncate(n);
    out
}

fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A source database holding one document with `files`.
fn source(engine: &Engine, files: &[(&str, &[u8])]) -> (Arc<Database>, Unid) {
    let db = engine.create_database("src.fdb", "Source").unwrap();
    let meta = db
        .create(vec![Item {
            name: "Subject".into(),
            value: ItemValue::Text("with files".into()),
        }])
        .unwrap();
    for (name, bytes) in files {
        db.put_attachment(meta.unid, name, "application/x", &mut &bytes[..])
            .unwrap();
    }
    (db, meta.unid)
}

fn replica_of(engine: &Engine, src: &Database) -> Arc<Database> {
    let replica = src.info().unwrap().replica_id;
    engine
        .create_replica("dst.fdb", replica, "Replica")
        .unwrap()
}

/// What a pull carried: the bytes of its to-target packets and whether
/// its target finished.
struct Carried {
    wire_bytes: u64,
    finished: bool,
    error: Option<ReplicaError>,
}

/// Runs one pull, every packet through its wire form; `tamper` may
/// change each to-target packet on its way.
fn pull(src: &Database, dst: &Database, tamper: &mut dyn FnMut(&mut TargetPacket)) -> Carried {
    let opening = Opening::Initiate(SessionId(7));
    let mut target = TargetSide::new(dst, opening, &LocalOptions::default()).unwrap();
    let mut source = SourceSide::new(src, Opening::Respond, 500).unwrap();
    let mut wire_bytes = 0u64;
    for _ in 0..1_000 {
        let mut to_source = Vec::new();
        let t = target.run(dst, &mut |p| to_source.push(p));
        for p in to_source {
            let b = net::encode_to_source(&p).unwrap();
            let _ = source.receive(net::decode_to_source(&b).unwrap());
        }
        let mut to_target = Vec::new();
        let s = source.run(src, &mut |p| to_target.push(p));
        for mut p in to_target {
            tamper(&mut p);
            let b = net::encode_to_target(&p).unwrap();
            wire_bytes += b.len() as u64;
            let _ = target.receive(net::decode_to_target(&b, &net::Limits::default()).unwrap());
        }
        if (target.is_over() && source.is_over()) || (!t && !s) {
            break;
        }
    }
    Carried {
        wire_bytes,
        finished: target.phase() == PullPhase::Finished,
        error: target.error().cloned(),
    }
}

fn read(db: &Database, unid: Unid, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    db.open_attachment(unid, name)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn form_of(db: &Database, unid: Unid, name: &str) -> Option<StoredForm> {
    let note = db.get(unid).unwrap();
    let a = note.attachments().find(|a| a.name == name).unwrap();
    a.stored.map(|s| s.form)
}

#[test]
fn a_compressible_attachment_crosses_compressed_and_is_stored_as_it_came() {
    let text = text_bytes(256 << 10);
    let random = noise(64 << 10);
    let src_engine = engine(AttachmentCompression::Auto);
    let (src, unid) = source(&src_engine, &[("a.txt", &text), ("b.bin", &random)]);
    assert_eq!(form_of(&src, unid, "a.txt"), Some(StoredForm::Zstd));
    assert_eq!(form_of(&src, unid, "b.bin"), Some(StoredForm::Raw));
    let stored = src.read_carried(unid, "a.txt").unwrap().unwrap();

    let dst_engine = engine(AttachmentCompression::Auto);
    let dst = replica_of(&dst_engine, &src);
    let run = pull(&src, &dst, &mut |_| {});
    assert!(run.finished, "{:?}", run.error);
    // The text crossed as its stored stream, the noise as it is.
    let originals = (text.len() + random.len()) as u64;
    assert!(run.wire_bytes < originals / 2, "{} bytes", run.wire_bytes);
    assert!(run.wire_bytes > random.len() as u64 + stored.bytes.len() as u64);
    assert_eq!(read(&dst, unid, "a.txt"), text);
    assert_eq!(read(&dst, unid, "b.bin"), random);
    // The very stream the source stores, not a recompression of it.
    assert_eq!(dst.read_carried(unid, "a.txt").unwrap().unwrap(), stored);
    assert_eq!(form_of(&dst, unid, "b.bin"), Some(StoredForm::Raw));
    // Both replicas hold the same version (the digest sees the original).
    assert_eq!(
        dst.get(unid).unwrap().version(),
        src.get(unid).unwrap().version()
    );
}

#[test]
fn a_target_with_compression_off_stores_the_original() {
    let text = text_bytes(128 << 10);
    let src_engine = engine(AttachmentCompression::Auto);
    let (src, unid) = source(&src_engine, &[("a.txt", &text)]);
    let dst_engine = engine(AttachmentCompression::Off);
    let dst = replica_of(&dst_engine, &src);
    let run = pull(&src, &dst, &mut |_| {});
    assert!(run.finished, "{:?}", run.error);
    assert!(run.wire_bytes < text.len() as u64 / 4);
    assert_eq!(form_of(&dst, unid, "a.txt"), Some(StoredForm::Raw));
    assert_eq!(read(&dst, unid, "a.txt"), text);
    assert_eq!(
        dst.get(unid).unwrap().version(),
        src.get(unid).unwrap().version()
    );
}

/// A change made to a stream on its way.
type Cut = dyn Fn(&mut Vec<u8>);

/// Changes the first carried stream of a note packet with `f`.
fn damage(f: impl Fn(&mut Vec<u8>)) -> impl FnMut(&mut TargetPacket) {
    move |p| {
        if let ToTarget::Note(n) = &mut p.body {
            for a in &mut n.body.attachments {
                if let Content::Carried(c) = &mut a.content {
                    f(&mut Arc::make_mut(c).bytes);
                }
            }
        }
    }
}

#[test]
fn a_truncated_or_corrupt_stream_is_refused_and_nothing_is_stored() {
    let text = text_bytes(128 << 10);
    let cuts: [(&str, Box<Cut>); 3] = [
        (
            "truncated",
            Box::new(|b: &mut Vec<u8>| b.truncate(b.len() / 2)),
        ),
        (
            "corrupt",
            Box::new(|b: &mut Vec<u8>| {
                let mid = b.len() / 2;
                b[mid] ^= 0x5a;
            }),
        ),
        (
            "trailing",
            Box::new(|b: &mut Vec<u8>| b.extend_from_slice(&[0; 9])),
        ),
    ];
    for (what, cut) in cuts {
        let src_engine = engine(AttachmentCompression::Auto);
        let (src, unid) = source(&src_engine, &[("a.txt", &text)]);
        let dst_engine = engine(AttachmentCompression::Auto);
        let dst = replica_of(&dst_engine, &src);
        let run = pull(&src, &dst, &mut damage(cut));
        assert!(!run.finished, "{what}: the pull must not finish");
        let error = run.error.expect("the target names its error").to_string();
        assert!(
            error.contains("a.txt") || error.contains("content"),
            "{what}: {error}"
        );
        assert!(dst.get(unid).is_err(), "{what}: nothing stored");
        assert_eq!(
            dst_engine.attachment_store_stats().objects,
            0,
            "{what}: no object published"
        );
        // An untouched pull afterwards completes.
        let again = pull(&src, &dst, &mut |_| {});
        assert!(again.finished, "{what}: {:?}", again.error);
        assert_eq!(read(&dst, unid, "a.txt"), text);
    }
}
