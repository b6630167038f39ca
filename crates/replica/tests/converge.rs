//! The convergence property: three or four replicas take random edits,
//! deletions and attachment changes, and replicate in random pairs and
//! directions (pulls and pushes, some selective) with random faults —
//! cuts, lost, duplicated and reordered messages, crashes of either side.
//! Throughout, no history runs ahead of what its target holds (I26). Once
//! every replica has replicated with every other, they hold identical
//! documents, conflict documents and stubs, and no edit is lost: every
//! version a user made, deletion stubs included, is the final document,
//! one it was made from, or kept in a conflict document (a losing
//! deletion as a conflict stub, design.md I63).

mod common;

use common::*;
use nsf::Unid;
use proptest::prelude::*;
use proptest::test_runner::Config;
use replica::testkit::{Body, Cluster, Faults, ModelVersion, Spec};

/// Documents the operations touch.
const DOCS: u32 = 6;

#[derive(Clone, Debug)]
enum Fault {
    Cut(u32),
    Drop(u32),
    Duplicate(u32),
    Hold(u32),
    CrashTarget(u32),
    CrashSource(u32),
}

#[derive(Clone, Debug)]
enum Op {
    Edit {
        replica: usize,
        doc: u32,
        value: u8,
    },
    Delete {
        replica: usize,
        doc: u32,
    },
    Attach {
        replica: usize,
        doc: u32,
        size: u16,
    },
    Detach {
        replica: usize,
        doc: u32,
    },
    Replicate {
        from: usize,
        to: usize,
        push: bool,
        selective: bool,
        fault: Option<Fault>,
    },
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        (0u32..40).prop_map(Fault::Cut),
        (0u32..40).prop_map(Fault::Drop),
        (0u32..40).prop_map(Fault::Duplicate),
        (0u32..40).prop_map(Fault::Hold),
        (0u32..12).prop_map(Fault::CrashTarget),
        (0u32..6).prop_map(Fault::CrashSource),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let replica = 0usize..4;
    let doc = 0..DOCS;
    prop_oneof![
        4 => (replica.clone(), doc.clone(), any::<u8>())
            .prop_map(|(replica, doc, value)| Op::Edit { replica, doc, value }),
        1 => (replica.clone(), doc.clone()).prop_map(|(replica, doc)| Op::Delete { replica, doc }),
        1 => (replica.clone(), doc.clone(), 0u16..3000)
            .prop_map(|(replica, doc, size)| Op::Attach { replica, doc, size }),
        1 => (replica.clone(), doc).prop_map(|(replica, doc)| Op::Detach { replica, doc }),
        4 => (replica.clone(), replica, any::<bool>(), prop::bool::weighted(0.2),
              prop::option::weighted(0.5, fault()))
            .prop_map(|(from, to, push, selective, fault)| Op::Replicate { from, to, push, selective, fault }),
    ]
}

impl Fault {
    fn faults(&self) -> Faults {
        let mut f = Faults::none();
        match *self {
            Fault::Cut(k) => f.cut_at = Some(k),
            Fault::Drop(k) => {
                f.drop.insert(k);
            }
            Fault::Duplicate(k) => {
                f.duplicate.insert(k);
            }
            Fault::Hold(k) => {
                f.hold.insert(k);
            }
            Fault::CrashTarget(n) => f.crash_target_after = Some(n),
            Fault::CrashSource(n) => f.crash_source_after = Some(n),
        }
        f
    }
}

/// What users did: every version made, live or a deletion stub.
#[derive(Default)]
struct Made {
    versions: Vec<(Unid, ModelVersion)>,
}

/// Runs `ops` on `n` replicas.
fn play(n: usize, ops: &[Op]) -> (Cluster, Made) {
    let mut c = Cluster::new(n);
    let mut made = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        // Coarse clocks: different replicas often edit "at the same time".
        let clock = (step / 3) as i64;
        match *op {
            Op::Edit {
                replica,
                doc,
                value,
            } => {
                let db = &mut c.dbs[replica % n];
                db.set_clock(clock);
                let v = db.edit(unid(doc), |b: &mut Body| {
                    b.items.insert("Value".into(), value.to_string());
                    let form = if value % 2 == 0 { "Memo" } else { "Note" };
                    b.items.insert("Form".into(), form.into());
                });
                made.push((unid(doc), v));
            }
            Op::Delete { replica, doc } => {
                let db = &mut c.dbs[replica % n];
                db.set_clock(clock);
                if let Some(stub) = db.delete(unid(doc)) {
                    made.push((unid(doc), stub));
                }
            }
            Op::Attach { replica, doc, size } => {
                let db = &mut c.dbs[replica % n];
                db.set_clock(clock);
                let v = db.edit(unid(doc), |b: &mut Body| {
                    b.attachments
                        .insert("file.bin".into(), vec![size as u8; usize::from(size)]);
                });
                made.push((unid(doc), v));
            }
            Op::Detach { replica, doc } => {
                let db = &mut c.dbs[replica % n];
                db.set_clock(clock);
                let v = db.edit(unid(doc), |b: &mut Body| b.attachments.clear());
                made.push((unid(doc), v));
            }
            Op::Replicate {
                from,
                to,
                push,
                selective,
                ref fault,
            } => {
                let (from, to) = (from % n, to % n);
                if from == to {
                    continue;
                }
                let mut spec = if push {
                    Spec::push(from, to)
                } else {
                    Spec::pull(from, to)
                };
                spec = spec.page_size(2).window(2).batch_notes(2);
                if selective {
                    spec = spec.selection(r#"SELECT Form = "Memo""#);
                }
                if let Some(fault) = fault {
                    spec = spec.faults(fault.faults());
                }
                let result = c.run_one(spec);
                assert!(
                    result.driver_errors.is_empty(),
                    "{:?}",
                    result.driver_errors
                );
                if fault.is_none() {
                    assert!(result.finished(), "a clean session finishes: {result:?}");
                }
                assert_history_covered(&c.dbs[to], &c.dbs[from]);
            }
        }
    }
    (c, Made { versions: made })
}

/// Every version a user made, a deletion too, is the final document,
/// among the versions a document was made from, or kept in a conflict
/// document (I63; a deletion that lost as a conflict stub, §11.4).
fn assert_no_edit_lost(c: &Cluster, made: &Made) {
    let docs = c.dbs[0].docs();
    for (unid, version) in &made.versions {
        let kept = docs.iter().any(|(u, d)| {
            (u == unid || d.body.conflict_of == Some(*unid))
                && (d.version == *version || d.revisions.contains(version))
        });
        assert!(kept, "version {version:?} of {unid} was lost");
    }
}

proptest! {
    #![proptest_config(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn replicas_converge_whatever_the_order_and_the_faults(
        n in 3usize..=4,
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let (mut c, made) = play(n, &ops);
        let rounds = c.sync_all(8).map_err(|r| TestCaseError::fail(format!("{r:?}")))?;
        prop_assert!(rounds < 8, "quiet within a few rounds, took {}", rounds);
        for i in 1..n {
            prop_assert_eq!(c.dbs[i].docs(), c.dbs[0].docs(), "replica {} differs", i);
        }
        for to in 0..n {
            for from in 0..n {
                if to != from {
                    assert_history_covered(&c.dbs[to], &c.dbs[from]);
                }
            }
        }
        assert_no_edit_lost(&c, &made);
        // And a further round is a handful of messages per pair, nothing sent.
        for from in 0..n {
            for to in 0..n {
                if from != to {
                    let r = c.replicate(from, to);
                    prop_assert!(r.finished());
                    prop_assert_eq!((r.pull.offered, r.messages), (0, 5));
                }
            }
        }
    }
}
