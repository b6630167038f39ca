//! A power cut while attachments are stored after an online backup
//! (design.md §3.6, I52, I53): after restart recovery, a restore of the
//! backup to the latest commit, rolled forward with the archive and the
//! live log, holds every acknowledged attachment byte for byte — small
//! ones (under 4 KiB, in the database's own blob pages, brought back by
//! their logged page images) and large ones (in the attachment store,
//! brought back by their references and the store's objects) alike.

mod common;

use nsf::{
    Database, Engine, EngineConfig, ForeignAttachment, ForeignContent, ForeignNote, Item,
    ItemValue, OriginatorId, RestoreOptions, Timestamp, Unid,
};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode};
use storage::Backend;
use translog::LogStyle;

const BACKUP: &str = "/backup";
/// Documents written after the backup, each with a small attachment and
/// every third with a large one too.
const WRITES: u64 = 12;

fn cfg() -> EngineConfig {
    let mut cfg = common::config(true);
    let lc = cfg.log.as_mut().unwrap();
    lc.style = LogStyle::Archive;
    lc.max_size = 64 << 20;
    lc.archive_dir = Some("/data/archive".into());
    cfg
}

fn open(disk: Arc<dyn Backend>) -> Engine {
    Engine::open(disk, cfg()).unwrap().0
}

/// Content of `len` bytes, distinct per `seed`.
fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// An acknowledged attachment: where, and the SHA-256 of its content.
#[derive(Clone, Debug)]
struct Acked {
    unid: Unid,
    name: String,
    sha: [u8; 32],
}

fn sha(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Writes document `i` with a small attachment (1 to 4095 bytes) and,
/// every third, a large one (64 KiB, in the attachment store); pushes
/// each attachment acknowledged, and returns false at the first failure
/// (the disk died).
fn write_one(db: &Database, i: u64, acked: &mut Vec<Acked>) -> bool {
    let Ok(meta) = db.create(vec![Item {
        name: "N".into(),
        value: ItemValue::Number(i as f64),
    }]) else {
        return false;
    };
    let small = content(i, 1 + (i as usize * 397) % 4095);
    let mut files = vec![("small.bin", small)];
    if i.is_multiple_of(3) {
        files.push(("large.bin", content(i + 1000, 64 << 10)));
    }
    for (name, f) in files {
        let stored = db.put_attachment(meta.unid, name, "application/octet-stream", &mut &f[..]);
        if stored.is_err() {
            return false;
        }
        acked.push(Acked {
            unid: meta.unid,
            name: name.into(),
            sha: sha(&f),
        });
    }
    true
}

/// Every acknowledged attachment reads back from `path` with its SHA-256.
fn assert_all_there(engine: &Engine, path: &str, acked: &[Acked], at: u64) {
    let db = engine.open_database(path).unwrap();
    for a in acked {
        let mut got = Vec::new();
        db.open_attachment(a.unid, &a.name)
            .and_then(|mut r| r.read_to_end(&mut got).map_err(nsf::NsfError::Content))
            .unwrap_or_else(|e| panic!("sync point {at}: {path}: {} of {}: {e}", a.name, a.unid));
        assert_eq!(
            sha(&got),
            a.sha,
            "sync point {at}: {path}: {} of {}",
            a.name,
            a.unid
        );
    }
}

#[test]
fn a_power_cut_after_a_backup_restores_every_acknowledged_attachment() {
    let mut cut_in_writes = 0;
    for k in 1.. {
        let disk = Arc::new(CrashBackend::new());
        let engine = open(disk.clone());
        let db = engine.create_database("a.fdb", "").unwrap();
        let mut acked = Vec::new();
        for i in 0..3 {
            assert!(write_one(&db, i, &mut acked));
        }
        engine.backup(Path::new(BACKUP), &[]).unwrap();
        let mode = CrashMode::Torn { seed: k };
        disk.arm_crash(disk.sync_count() + k, mode);
        for i in 3..3 + WRITES {
            if !write_one(&db, i, &mut acked) {
                break;
            }
        }
        let finished = !disk.has_crashed();
        let image = disk.crashed_image().unwrap_or_else(|| disk.crash_now(mode));
        drop(db);
        drop(engine);

        // Restart recovery, then the backup rolled forward to the latest
        // commit beside the recovered database.
        let engine = open(Arc::new(image));
        assert_all_there(&engine, "a.fdb", &acked, k);
        let opts = RestoreOptions {
            db: Some("a.fdb".into()),
            to: Some("r.fdb".into()),
            ..RestoreOptions::default()
        };
        let reports = engine.restore(Path::new(BACKUP), &opts).unwrap();
        assert!(reports[0].objects_missing.is_empty(), "sync point {k}");
        assert_all_there(&engine, "r.fdb", &acked, k);
        if finished {
            break;
        }
        cut_in_writes += 1;
    }
    assert!(
        cut_in_writes > WRITES,
        "only {cut_in_writes} sync points in the writes"
    );
}

/// Replicated versions (the foreign write path, one batch each) carry
/// small content too: a restore to the latest brings it back.
#[test]
fn replicated_small_attachments_are_restored_to_the_latest() {
    let engine = open(Arc::new(storage::backend::MemBackend::new()));
    let db = engine.create_database("a.fdb", "").unwrap();
    engine.backup(Path::new(BACKUP), &[]).unwrap();
    let mut acked = Vec::new();
    for i in 0..4u8 {
        let unid = Unid([i + 1; 16]);
        let f = content(u64::from(i) + 50, 100 + 900 * usize::from(i));
        let note = ForeignNote {
            oid: OriginatorId {
                unid,
                seq_num: 1,
                seq_time: Timestamp(1_000),
            },
            created: Timestamp(1_000),
            modified: Timestamp(1_000),
            deleted: false,
            items: Vec::new(),
            attachments: vec![ForeignAttachment {
                name: "r.bin".into(),
                mime: "application/octet-stream".into(),
                content: ForeignContent::Bytes(f.clone()),
            }],
            revisions: Vec::new(),
        };
        db.put_foreign(note).unwrap();
        acked.push(Acked {
            unid,
            name: "r.bin".into(),
            sha: sha(&f),
        });
    }
    drop(db);
    let opts = RestoreOptions {
        db: Some("a.fdb".into()),
        to: Some("r.fdb".into()),
        ..RestoreOptions::default()
    };
    engine.restore(Path::new(BACKUP), &opts).unwrap();
    assert_all_there(&engine, "r.fdb", &acked, 0);
}
