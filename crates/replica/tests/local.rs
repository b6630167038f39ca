//! The local driver (`replica::local`) between two real nsf databases:
//! a new replica filled by a pull, edits on both sides replicated both
//! ways, conflict documents, deletions, a rerun that sends nothing, a
//! selection formula, and a pull cut by an I/O error that resumes without
//! sending again what was written (I26, I27, I30).

use nsf::{Database, Engine, EngineConfig, Item, ItemUpdate, ItemValue, Unid};
use replica::local::{pull, ActingFor, LocalOptions, LocalReport};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};
use storage::Backend;
use translog::LogConfig;

fn config() -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 8 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 16 << 20;
    cfg.log = Some(lc);
    cfg
}

fn open(backend: Arc<dyn Backend>) -> Engine {
    Engine::open(backend, config()).unwrap().0
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

fn set(db: &Database, unid: Unid, name: &str, v: &str) {
    db.update(unid, vec![ItemUpdate::Set(text(name, v))], None, false)
        .unwrap();
}

/// A source with `n` documents, and an empty replica of it.
fn pair(engine: &Engine, n: usize) -> (Arc<Database>, Arc<Database>, Vec<Unid>) {
    let a = engine.create_database("src.fdb", "Source").unwrap();
    let unids = (0..n)
        .map(|i| {
            let kind = if i % 2 == 0 { "even" } else { "odd" };
            let meta = a
                .create(vec![
                    text("Subject", &format!("doc {i}")),
                    text("Kind", kind),
                ])
                .unwrap();
            if i % 3 == 0 {
                let bytes = vec![i as u8; 3_000 + i * 10];
                a.put_attachment(meta.unid, "f.bin", "application/x", &mut &bytes[..])
                    .unwrap();
            }
            meta.unid
        })
        .collect();
    let replica = a.info().unwrap().replica_id;
    let b = engine
        .create_replica("dst.fdb", replica, "Replica")
        .unwrap();
    (a, b, unids)
}

/// Everything replicas must agree on, by UNID: version, stub, revisions,
/// items and attachment content.
type Snapshot = BTreeMap<Unid, (nsf::Version, bool, Vec<nsf::Version>, String)>;

fn snapshot(db: &Database) -> Snapshot {
    let mut out = BTreeMap::new();
    db.for_each_note(|note| {
        let unid = note.oid.unid;
        let mut items: Vec<String> = note.items.iter().map(|i| format!("{i:?}")).collect();
        for a in note.attachments() {
            let mut bytes = Vec::new();
            db.open_attachment(unid, &a.name)?
                .read_to_end(&mut bytes)
                .unwrap();
            items.push(format!("{}={:?}", a.name, crc32(&bytes)));
        }
        items.retain(|i| !i.contains("blob_id"));
        items.sort();
        let revisions = db.revisions(unid)?;
        out.insert(
            unid,
            (note.version(), note.deleted, revisions, items.join("|")),
        );
        Ok(())
    })
    .unwrap();
    out
}

fn crc32(b: &[u8]) -> u64 {
    b.iter()
        .fold(0u64, |h, &x| h.wrapping_mul(31).wrapping_add(u64::from(x)))
}

fn both_ways(a: &Database, b: &Database) -> (LocalReport, LocalReport) {
    let opts = LocalOptions::default();
    let ab = pull(a, b, &opts).unwrap();
    let ba = pull(b, a, &opts).unwrap();
    (ab, ba)
}

fn conflicts(db: &Database) -> Vec<(Unid, String)> {
    let mut out = Vec::new();
    db.for_each_note(|n| {
        if n.item("$Conflict").is_some() {
            let of = match n.item("$Ref").map(|i| &i.value) {
                Some(ItemValue::Text(t)) => t.clone(),
                other => panic!("a conflict document without $Ref: {other:?}"),
            };
            out.push((n.oid.unid, of));
        }
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn a_new_replica_fills_and_edits_on_both_sides_converge() {
    let engine = open(Arc::new(MemBackend::new()));
    let (a, b, unids) = pair(&engine, 40);
    let first = pull(&a, &b, &LocalOptions::default()).unwrap();
    assert_eq!(first.documents(), 40);
    assert_eq!(first.pull.stored, 40);
    assert!(first.bytes() > 14 * 3_000, "attachments travelled");
    assert_eq!(snapshot(&a), snapshot(&b));

    set(&a, unids[1], "Subject", "edited on a");
    set(&b, unids[2], "Subject", "edited on b");
    let new_on_b = b.create(vec![text("Subject", "new on b")]).unwrap();
    let (ab, ba) = both_ways(&a, &b);
    assert_eq!(ab.documents(), 1, "only the edit on a travels to b");
    assert_eq!(ba.documents(), 2, "the edit and the new document on b");
    assert_eq!(ab.conflicts() + ba.conflicts(), 0, "no concurrent edits");
    assert_eq!(snapshot(&a), snapshot(&b));
    assert_eq!(
        a.get(new_on_b.unid).unwrap().item("Subject"),
        Some(&text("Subject", "new on b"))
    );
    a.check().unwrap();
    b.check().unwrap();
    drop((a, b));
    engine.close().unwrap();
}

#[test]
fn concurrent_edits_make_the_same_conflict_document_on_both_sides() {
    let engine = open(Arc::new(MemBackend::new()));
    let (a, b, unids) = pair(&engine, 6);
    pull(&a, &b, &LocalOptions::default()).unwrap();
    let x = unids[3]; // has an attachment
    set(&a, x, "Subject", "a's edit");
    set(&b, x, "Subject", "b's edit");
    let (ab, ba) = both_ways(&a, &b);
    // Each side meets the pair and makes the very same document (its
    // UNID and version depend on the pair alone).
    assert_eq!((ab.conflicts(), ba.conflicts()), (1, 1));
    let (again_ab, again_ba) = both_ways(&a, &b);
    assert_eq!(again_ab.conflicts() + again_ba.conflicts(), 0);
    assert_eq!(snapshot(&a), snapshot(&b));
    let on_a = conflicts(&a);
    assert_eq!(on_a.len(), 1);
    assert_eq!(on_a, conflicts(&b));
    assert_eq!(on_a[0].1, x.to_string(), "a response to the document");
    let winner = a.get(x).unwrap();
    let kept = a.get(on_a[0].0).unwrap();
    let subjects = [winner.item("Subject"), kept.item("Subject")];
    assert!(subjects.contains(&Some(&text("Subject", "a's edit"))));
    assert!(subjects.contains(&Some(&text("Subject", "b's edit"))));
    assert!(
        kept.attachments().any(|f| f.name == "f.bin"),
        "the loser keeps its attachment"
    );
    drop((a, b));
    engine.close().unwrap();
}

#[test]
fn deletions_travel_as_stubs_and_a_rerun_sends_nothing() {
    let engine = open(Arc::new(MemBackend::new()));
    let (a, b, unids) = pair(&engine, 10);
    pull(&a, &b, &LocalOptions::default()).unwrap();
    a.delete(unids[0], None, false).unwrap();
    b.delete(unids[5], None, false).unwrap();
    let (ab, ba) = both_ways(&a, &b);
    assert_eq!((ab.documents(), ba.documents()), (1, 1));
    for db in [&a, &b] {
        assert!(db.get_any(unids[0]).unwrap().deleted);
        assert!(db.get_any(unids[5]).unwrap().deleted);
    }
    assert_eq!(snapshot(&a), snapshot(&b));

    // The pull b → a wrote b's deletion into a: a change there, which the
    // next pull a → b offers, and b, holding it, does not want.
    let (ab, ba) = both_ways(&a, &b);
    assert_eq!((ab.documents(), ba.documents()), (0, 0));
    assert_eq!((ab.pull.offered, ba.pull.offered), (1, 0));
    let seqs = (a.last_seq(), b.last_seq());
    for _ in 0..2 {
        let (ab, ba) = both_ways(&a, &b);
        assert_eq!((ab.documents(), ba.documents()), (0, 0));
        assert_eq!(
            (ab.pull.offered, ba.pull.offered),
            (0, 0),
            "not even summaries"
        );
        assert!(ab.messages <= 6, "{} messages", ab.messages);
    }
    assert_eq!(
        (a.last_seq(), b.last_seq()),
        seqs,
        "histories are not changes"
    );
    drop((a, b));
    engine.close().unwrap();
}

#[test]
fn a_selection_formula_picks_what_travels() {
    let engine = open(Arc::new(MemBackend::new()));
    let (a, b, unids) = pair(&engine, 12);
    let opts = LocalOptions {
        selection: Some("SELECT Kind = \"even\"".into()),
        ..LocalOptions::default()
    };
    let report = pull(&a, &b, &opts).unwrap();
    assert_eq!(report.documents(), 6);
    for (i, unid) in unids.iter().enumerate() {
        assert_eq!(b.get(*unid).is_ok(), i % 2 == 0, "document {i}");
    }
    let bad = LocalOptions {
        selection: Some("SELECT (".into()),
        ..LocalOptions::default()
    };
    let e = pull(&a, &b, &bad).unwrap_err();
    assert!(e.error.to_string().contains("selection formula"), "{e}");
    assert_eq!(e.report.documents(), 0);
    drop((a, b));
    engine.close().unwrap();
}

/// The ACL's own rule (the classic one): the ACL a source sends is
/// written on the target only when the pull acts for a Manager of the
/// target's ACL as it stands (a new replica takes the first one); a
/// refused ACL is counted, the documents beside it are written.
#[test]
fn the_acl_travels_only_by_a_managers_change() {
    let engine = open(Arc::new(MemBackend::new()));
    let (a, b, unids) = pair(&engine, 4);
    let acl = |default: &str| {
        nsf::Acl::parse_json(&format!(
            r#"{{"default":"{default}","entries":[
                {{"name":"ann","level":"manager"}},
                {{"name":"bob","level":"editor"}}]}}"#
        ))
        .unwrap()
    };
    let acting = |who: ActingFor| LocalOptions {
        acting_for: who,
        ..LocalOptions::default()
    };
    let bob = || ActingFor::User("bob".into());
    let json = |db: &Database| db.acl().unwrap().map(|a| a.to_json());

    a.set_acl(&acl("reader")).unwrap();
    let first = pull(&a, &b, &acting(bob())).unwrap();
    assert_eq!(first.pull.refused, 0, "a new replica takes the first ACL");
    assert_eq!(json(&b), json(&a));

    // bob is an Editor of b: a's next ACL change does not travel for
    // him, the document edited beside it does.
    a.set_acl(&acl("noaccess")).unwrap();
    set(&a, unids[0], "Subject", "edited");
    let refused = pull(&a, &b, &acting(bob())).unwrap();
    assert_eq!(refused.pull.refused, 1, "{refused:?}");
    assert_eq!(
        b.acl().unwrap().unwrap().access(Some("zed")).level(),
        nsf::AccessLevel::Reader,
        "b's ACL is as it was"
    );
    let doc = b.get(unids[0]).unwrap();
    assert_eq!(
        doc.item("Subject").map(|i| &i.value),
        Some(&ItemValue::Text("edited".into()))
    );
    let anonymous = pull(&a, &b, &acting(ActingFor::Anonymous)).unwrap();
    assert_eq!(
        anonymous.documents(),
        0,
        "the refused change is not retried"
    );

    // ann is a Manager there: the next change travels for her, and
    // for the administrator (the embedded commands).
    a.set_acl(&acl("author")).unwrap();
    let managed = pull(&a, &b, &acting(ActingFor::User("ann".into()))).unwrap();
    assert_eq!(managed.pull.refused, 0);
    assert_eq!(json(&b), json(&a));
    a.set_acl(&acl("depositor")).unwrap();
    pull(&a, &b, &LocalOptions::default()).unwrap();
    assert_eq!(json(&b), json(&a));
    drop((a, b));
    engine.close().unwrap();
}

/// A pull cut by a failed write on the target: the target is reopened,
/// and the next pull sends only what the first did not durably write.
#[test]
fn an_interrupted_pull_resumes_without_sending_again() {
    let disk = Arc::new(FaultBackend::new(Arc::new(MemBackend::new())));
    let engine = open(disk.clone());
    let (a, b, _) = pair(&engine, 60);
    let opts = LocalOptions {
        page_size: 10,
        window: 1,
        batch_notes: 5,
        ..LocalOptions::default()
    };
    // Small attachment content is written to the target as it is staged
    // (and logged with its commit, I52): the 12th write to the target
    // fails, in the middle of the pull.
    disk.add_rule(FaultRule {
        path_contains: Some("dst.fdb".into()),
        nth: 12,
        sticky: true,
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    let cut = pull(&a, &b, &opts).unwrap_err();
    let written = cut.report.pull.stored;
    assert!(
        written > 0 && written < 60,
        "cut mid-way: {written} written"
    );
    assert!(cut.report.pull.checkpoint.0 > 0, "a checkpoint was saved");
    drop((a, b));
    drop(engine);
    disk.clear_rules();

    let engine = open(disk.clone());
    let a = engine.open_database("src.fdb").unwrap();
    let b = engine.open_database("dst.fdb").unwrap();
    let held = snapshot(&b).len() as u64;
    assert!(held >= written, "what was acknowledged is durable");
    let resumed = pull(&a, &b, &opts).unwrap();
    assert_eq!(
        resumed.documents(),
        60 - held,
        "only what the first pull did not write travels"
    );
    assert_eq!(resumed.pull.already, 0, "nothing was sent twice");
    assert_eq!(snapshot(&a), snapshot(&b));
    b.check().unwrap();
    drop((a, b));
    engine.close().unwrap();
}
