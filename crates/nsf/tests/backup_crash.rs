//! A power cut at every sync point of an online backup taken while
//! writers commit (design.md §3.6, I35, I49): after restart recovery the
//! live databases hold every acknowledged commit; the interrupted backup
//! either restores completely — attachment store objects included, with
//! the live databases and their store gone — or is refused by restore
//! naming its missing manifest; and a rerun of the backup restores.

mod common;

use nsf::{Database, Engine, EngineConfig, Item, ItemValue, NsfError, RestoreOptions, Unid};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;
use translog::LogStyle;

const DBS: [&str; 2] = ["a.fdb", "sub/b.fdb"];
const BACKUP: &str = "/backup";

/// An archive-style engine on `/data`, no background threads (so the
/// sync points are the workload's and the backup's own).
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

/// Attachment content: ≥ 4 KiB every time, so it goes to the attachment
/// store; `seed` modulo 4 repeats, so some objects are shared between
/// documents and databases (deduplicated).
fn file(seed: u64) -> Vec<u8> {
    let len = 4_096 + (seed % 4) as usize * 3_000;
    let mut x = (seed % 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// One acknowledged document: its body and, if its attachment commit was
/// acknowledged too, the attachment.
#[derive(Clone, Debug)]
struct Doc {
    db: &'static str,
    unid: Unid,
    body: String,
    file: Option<Vec<u8>>,
}

/// Creates document `i` in `db` (with an attachment every 3rd), or stops
/// at the first error (the disk died); returns what was acknowledged.
fn write_one(db: &Database, path: &'static str, i: u64) -> Option<Doc> {
    let body = format!("{path}-{i:05}-").repeat(8);
    let unid = db
        .create(vec![Item {
            name: "Body".into(),
            value: ItemValue::Text(body.clone()),
        }])
        .ok()?
        .unid;
    let mut doc = Doc {
        db: path,
        unid,
        body,
        file: None,
    };
    if i.is_multiple_of(3) {
        let f = file(i);
        if db
            .put_attachment(unid, "f.bin", "application/octet-stream", &mut &f[..])
            .is_ok()
        {
            doc.file = Some(f);
        }
    }
    Some(doc)
}

fn read_back(db: &Database, unid: Unid) -> Vec<u8> {
    let mut out = Vec::new();
    db.open_attachment(unid, "f.bin")
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Every live document of `path`: UNID → (sequence number, items,
/// attachment bytes).
type Contents = BTreeMap<Unid, (u32, Vec<Item>, Option<Vec<u8>>)>;

fn contents(engine: &Engine, path: &str) -> Contents {
    let db = engine.open_database(path).unwrap();
    let mut notes = Vec::new();
    db.for_each_note(|n| {
        if !n.deleted {
            notes.push(n);
        }
        Ok(())
    })
    .unwrap();
    notes
        .into_iter()
        .map(|n| {
            let file = n.attachments().next().map(|_| read_back(&db, n.oid.unid));
            (n.oid.unid, (n.oid.seq_num, n.items, file))
        })
        .collect()
}

/// Every acknowledged document is there, whole.
fn assert_acknowledged(engine: &Engine, docs: &[Doc], at: u64) {
    for path in DBS {
        let live = contents(engine, path);
        for d in docs.iter().filter(|d| d.db == path) {
            let (_, items, file) = live
                .get(&d.unid)
                .unwrap_or_else(|| panic!("sync point {at}: {path} lost {}", d.unid));
            assert!(
                items
                    .iter()
                    .any(|i| i.value == ItemValue::Text(d.body.clone())),
                "sync point {at}: {path} {}",
                d.unid
            );
            if let Some(f) = &d.file {
                assert_eq!(file.as_ref(), Some(f), "sync point {at}: {}", d.unid);
            }
        }
    }
}

/// Restores every database of the backup in `dir` under a new name and
/// compares it with the live one; `Err` is restore's refusal.
fn restore_beside(engine: &Engine, dir: &str, at: u64) -> Result<(), NsfError> {
    for (n, path) in DBS.into_iter().enumerate() {
        let to = format!("{}-{n}.fdb", dir.trim_start_matches('/'));
        let opts = RestoreOptions {
            db: Some(path.into()),
            to: Some(to.clone()),
            ..RestoreOptions::default()
        };
        let reports = engine.restore(Path::new(dir), &opts)?;
        assert!(reports[0].objects_missing.is_empty(), "sync point {at}");
        assert_eq!(
            contents(engine, &to),
            contents(engine, path),
            "sync point {at}: {dir} {path}"
        );
    }
    Ok(())
}

/// The disaster: the databases and every attachment store object are lost;
/// the backup (with the archive and log) brings back exactly `expected`.
fn restore_after_losing_everything(image: MemBackend, expected: &[Contents], at: u64) {
    for path in DBS {
        image.remove_file(&Path::new("/data").join(path)).unwrap();
    }
    let objects = Path::new("/data/attachstore/objects");
    for dir in image.read_dir(objects).unwrap_or_default() {
        for f in image.read_dir(&dir).unwrap() {
            image.remove_file(&f).unwrap();
        }
    }
    let engine = open(Arc::new(image));
    let reports = engine
        .restore(Path::new(BACKUP), &RestoreOptions::default())
        .unwrap();
    assert_eq!(reports.len(), DBS.len());
    for (path, want) in DBS.into_iter().zip(expected) {
        assert_eq!(&contents(&engine, path), want, "sync point {at}: {path}");
    }
}

/// Two databases with documents and stored attachments; returns them.
fn fill(engine: &Engine) -> Vec<Doc> {
    let mut docs = Vec::new();
    for path in DBS {
        let db = engine.create_database(path, "").unwrap();
        for i in 0..24 {
            docs.push(write_one(&db, path, i).unwrap());
        }
    }
    docs
}

/// Runs the backup while one writer for each of the first `writers`
/// databases commits; returns the
/// backup's result, whether it returned before the power cut, and what
/// the writers had acknowledged.
fn backup_under_writes(
    engine: &Arc<Engine>,
    disk: &CrashBackend,
    writers: usize,
) -> (Result<(), NsfError>, bool, Vec<Doc>) {
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = DBS
        .into_iter()
        .take(writers)
        .map(|path| {
            let (engine, acked, stop) = (engine.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let Ok(db) = engine.open_database(path) else {
                    return;
                };
                for i in 100..112 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match write_one(&db, path, i) {
                        Some(d) => acked.lock().unwrap().push(d),
                        None => return,
                    }
                }
            })
        })
        .collect();
    let r = engine.backup(Path::new(BACKUP), &[]).map(|_| ());
    let before_cut = !disk.has_crashed();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    (r, before_cut, acked)
}

/// A crash at every sync point of a backup (and of the writes beside
/// it), under the loss model `mode` gives each; returns how many left a
/// restorable backup and how many a refused one.
fn crash_everywhere(mode: impl Fn(u64) -> CrashMode, writers: usize) -> (u32, u32) {
    let (mut complete, mut refused) = (0, 0);
    for k in 1.. {
        let disk = Arc::new(CrashBackend::new());
        let engine = Arc::new(open(disk.clone()));
        let mut docs = fill(&engine);
        let mode = mode(k);
        disk.arm_crash(disk.sync_count() + k, mode);
        let (r, finished, acked) = backup_under_writes(&engine, &disk, writers);
        docs.extend(acked);
        assert!(r.is_ok() || !finished, "sync point {k}: {r:?}");
        let image = disk.crashed_image().unwrap_or_else(|| disk.crash_now(mode));
        drop(Arc::into_inner(engine));

        // Restart recovery: no acknowledged commit is lost.
        let engine = open(Arc::new(image.snapshot()));
        assert_acknowledged(&engine, &docs, k);
        let live: Vec<Contents> = DBS.iter().map(|p| contents(&engine, p)).collect();
        match restore_beside(&engine, BACKUP, k) {
            Ok(()) => {
                complete += 1;
                restore_after_losing_everything(image.snapshot(), &live, k);
            }
            Err(NsfError::BadBackup { reason, .. }) => {
                refused += 1;
                assert!(!finished, "sync point {k}: a finished backup refused");
                assert!(reason.contains("manifest.json"), "sync point {k}: {reason}");
                // Rerun into the same directory, over the partial copy.
                engine.backup(Path::new(BACKUP), &[]).unwrap();
                restore_beside(&engine, BACKUP, k).unwrap();
            }
            Err(e) => panic!("sync point {k}: restore of an interrupted backup: {e}"),
        }
        // A rerun into a fresh directory restores too.
        engine.backup(Path::new("/backup2"), &[]).unwrap();
        let more = DBS.map(|p| {
            let db = engine.open_database(p).unwrap();
            write_one(&db, p, 900).unwrap()
        });
        assert_acknowledged(&engine, &more, k);
        restore_beside(&engine, "/backup2", k).unwrap();
        if finished {
            break;
        }
    }
    (complete, refused)
}

#[test]
fn a_power_cut_during_an_online_backup_loses_nothing_and_never_restores_less() {
    let (complete, refused) = crash_everywhere(|seed| CrashMode::Torn { seed }, DBS.len());
    assert!(refused > 10, "only {refused} sync points inside the backup");
    assert!(complete >= 1);
}

/// As a `kill -9` leaves it (the page cache survives), under writes.
#[test]
fn a_kill_during_an_online_backup_loses_nothing_and_never_restores_less() {
    let (complete, refused) = crash_everywhere(|_| CrashMode::KeepUnsynced, DBS.len());
    assert!(refused > 10, "only {refused} sync points inside the backup");
    assert!(complete >= 1);
}

/// With no writer beside it the backup's sync points are the same on
/// every run, so its last one (the directory sync after the manifest's
/// rename) is surely hit: a kill there leaves a backup that restores.
#[test]
fn a_kill_after_the_manifest_is_renamed_leaves_a_whole_backup() {
    let (complete, refused) = crash_everywhere(|_| CrashMode::KeepUnsynced, 0);
    assert!(refused > 10, "only {refused} sync points inside the backup");
    assert!(complete >= 2, "the manifest's last sync point restores");
}
