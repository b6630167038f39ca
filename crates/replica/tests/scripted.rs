//! Scripted replications between model replicas: initial replica,
//! incremental reruns, the cost of a rerun with nothing changed, stubs,
//! the conflict rule (including delete versus edit), selective
//! replication, streaming, push, and refusals.

mod common;

use common::*;
use nsf::{DbInstanceId, ReplicaId, Seq, Unid};
use replica::msg::{ToSource, ToTarget};
use replica::testkit::{Body, Cluster, ModelDb, ModelVersion, Sent, Spec};
use replica::{conflict_unid, ErrorCode, Peer, PullPhase, ReplicaError, SourcePhase};
use std::collections::BTreeMap;

fn conflict_docs(db: &ModelDb) -> BTreeMap<Unid, replica::testkit::Doc> {
    db.docs()
        .into_iter()
        .filter(|(_, d)| d.body.conflict_of.is_some())
        .collect()
}

#[test]
fn an_initial_replica_copies_documents_attachments_and_stubs() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 50);
    c.dbs[0].delete(unid(7));
    let r = c.replicate(0, 1);
    assert!(r.finished(), "{r:?}");
    assert!(r.driver_errors.is_empty());
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
    assert_eq!((r.pull.stored, r.pull.conflicts), (50, 0));
    let stub = c.dbs[1].doc(unid(7)).expect("the stub travelled");
    assert!(stub.deleted && stub.body == Body::default());
    let history = &c.dbs[1].histories()[0];
    assert_eq!(history.peer, c.dbs[0].peer());
    assert_eq!(history.seen_upto, c.dbs[0].last_change());
    assert_eq!(history.selection, None);
    assert!(
        c.dbs[0].histories().is_empty(),
        "a pull records on the target only"
    );
}

#[test]
fn a_rerun_transfers_only_what_changed() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 200);
    assert!(c.replicate(0, 1).finished());
    set_subject(&mut c.dbs[0], 3, "changed");
    set_subject(&mut c.dbs[0], 150, "changed");
    set_subject(&mut c.dbs[0], 3, "changed twice");
    c.dbs[0].delete(unid(99));
    set_subject(&mut c.dbs[0], 500, "new");
    let r = c.replicate(0, 1);
    assert!(r.finished(), "{r:?}");
    assert_eq!(
        r.pull.offered, 4,
        "document 3 changed twice is offered once"
    );
    assert_eq!(r.sent.notes, 4);
    assert_eq!((r.pull.replaced, r.pull.stored), (3, 1));
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
}

/// A two-way rerun with nothing changed, after the two-way runs that make
/// the replicas equal (the second only sees the first's echoes).
fn nothing_changed_rerun(docs: u32) -> (replica::testkit::RunResult, replica::testkit::RunResult) {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], docs);
    fill(&mut c.dbs[1], 3);
    let (a, b) = c.two_way(0, 1);
    assert!(a.finished() && b.finished());
    let (a, b) = c.two_way(0, 1);
    assert!(a.finished() && b.finished());
    assert_eq!(
        a.sent.notes + b.sent.notes,
        0,
        "echoes are offered, never sent"
    );
    let rerun = c.two_way(0, 1);
    assert_converged(&c);
    rerun
}

#[test]
fn a_rerun_with_nothing_changed_costs_the_same_whatever_the_size() {
    let (small_a, small_b) = nothing_changed_rerun(10);
    let (large_a, large_b) = nothing_changed_rerun(3000);
    for r in [&small_a, &small_b, &large_a, &large_b] {
        assert!(r.finished(), "{r:?}");
        assert_eq!((r.pull.offered, r.sent.notes), (0, 0));
        assert_eq!(r.messages, 5, "Hello, Hello, ChangesSince, Summary, Done");
        assert_eq!(r.flights, 4, "two round trips, both directions at once");
    }
    let small = small_a.bytes + small_b.bytes;
    let large = large_a.bytes + large_b.bytes;
    // The target is 2 KiB on the wire; the message bodies take a tenth of
    // that, leaving room for the protocol's frame headers.
    assert!(large <= 200, "{large} bytes of messages");
    // Only the change numbers grow (varints): a byte or two per field.
    assert!(large - small <= 16, "{small} vs {large} bytes");
}

#[test]
fn two_way_replication_merges_independent_edits() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 20);
    for i in 100..110 {
        set_subject(&mut c.dbs[1], i, "from the other side");
    }
    let (a, b) = c.two_way(0, 1);
    assert!(a.finished() && b.finished());
    assert_eq!(a.pull.stored + b.pull.stored, 30);
    assert_converged(&c);
    assert!(conflict_docs(&c.dbs[0]).is_empty());
}

#[test]
fn deletions_travel_as_stubs() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 10);
    assert!(c.replicate(0, 1).finished());
    let stub_version = c.dbs[0].delete(unid(3)).expect("a document to delete");
    let r = c.replicate(0, 1);
    assert!(r.finished());
    assert_eq!(
        (r.pull.offered, r.pull.replaced, r.pull.conflicts),
        (1, 1, 0)
    );
    let stub = c.dbs[1].doc(unid(3)).expect("stub");
    assert!(stub.deleted);
    assert_eq!(stub.version, stub_version);
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
}

/// Replica 0 makes X and both have it; then replica 0 edits it with
/// `a_edits` (clock, subject) and replica 1 with `b_edits`; the pulls run
/// in `order`, then everything syncs.
fn concurrent(
    a_edits: &[(i64, &str)],
    b_edits: &[(i64, &str)],
    order: &[(usize, usize)],
) -> Cluster {
    let mut c = Cluster::new(2);
    set_subject(&mut c.dbs[0], 0, "original");
    assert!(c.replicate(0, 1).finished());
    for (i, edits) in [a_edits, b_edits].into_iter().enumerate() {
        for (clock, subject) in edits {
            c.dbs[i].set_clock(*clock);
            if *subject == "DELETE" {
                c.dbs[i].delete(unid(0));
            } else {
                set_subject(&mut c.dbs[i], 0, subject);
            }
        }
    }
    for &(from, to) in order {
        assert!(c.replicate(from, to).finished());
    }
    c.sync_all(4).expect("clean pulls finish");
    assert_converged(&c);
    c
}

fn version_of(c: &Cluster, db: usize) -> ModelVersion {
    c.dbs[db].doc(unid(0)).expect("X").version
}

#[test]
fn the_higher_sequence_number_wins_and_the_loser_becomes_a_conflict_document() {
    let a = [(10, "a1"), (11, "a2")];
    let b = [(50, "b1")];
    let first = concurrent(&a, &b, &[(0, 1), (1, 0)]);
    let second = concurrent(&a, &b, &[(1, 0), (0, 1)]);
    let third = concurrent(&a, &b, &[]);
    assert_eq!(
        first.dbs[0].docs(),
        second.dbs[0].docs(),
        "the order of replications does not matter"
    );
    assert_eq!(first.dbs[0].docs(), third.dbs[0].docs());
    let x = first.dbs[0].doc(unid(0)).expect("X");
    assert_eq!(
        x.body.items["Subject"], "a2",
        "two edits beat one later edit"
    );
    let conflicts = conflict_docs(&first.dbs[0]);
    assert_eq!(conflicts.len(), 1);
    let (conflict_id, conflict) = conflicts.iter().next().expect("one");
    assert_eq!(conflict.body.items["Subject"], "b1");
    assert_eq!(
        conflict.body.conflict_of,
        Some(unid(0)),
        "a response to the winner"
    );
    assert_eq!(*conflict_id, conflict_unid(unid(0), &conflict.version));
    assert_eq!(conflict.version.seq, 2);
}

#[test]
fn on_equal_sequence_numbers_the_later_time_wins() {
    let c = concurrent(&[(100, "early")], &[(200, "late")], &[(0, 1)]);
    assert_eq!(
        c.dbs[0].doc(unid(0)).expect("X").body.items["Subject"],
        "late"
    );
    let conflicts = conflict_docs(&c.dbs[0]);
    assert_eq!(conflicts.len(), 1);
    assert_eq!(
        conflicts.values().next().expect("one").body.items["Subject"],
        "early"
    );
}

#[test]
fn on_equal_sequence_and_time_the_digest_decides_the_same_everywhere() {
    let one = concurrent(&[(100, "left")], &[(100, "right")], &[(0, 1)]);
    let other = concurrent(&[(100, "left")], &[(100, "right")], &[(1, 0)]);
    assert_eq!(one.dbs[0].docs(), other.dbs[1].docs());
    let winner = version_of(&one, 0);
    let losers: Vec<_> = conflict_docs(&one.dbs[0])
        .values()
        .map(|d| d.version)
        .collect();
    assert_eq!(losers.len(), 1);
    assert_eq!((winner.seq, winner.time), (losers[0].seq, losers[0].time));
    assert!(winner.digest > losers[0].digest);
}

#[test]
fn a_deletion_with_the_higher_version_wins_and_the_concurrent_edit_is_kept() {
    let c = concurrent(&[(10, "a1"), (11, "DELETE")], &[(50, "b1")], &[(1, 0)]);
    let x = c.dbs[0].doc(unid(0)).expect("X");
    assert!(
        x.deleted,
        "the deletion (sequence 3) beats the edit (sequence 2)"
    );
    let conflicts = conflict_docs(&c.dbs[0]);
    assert_eq!(
        conflicts.len(),
        1,
        "only the concurrent edit: a1 is what was deleted"
    );
    assert_eq!(
        conflicts.values().next().expect("one").body.items["Subject"],
        "b1"
    );
}

#[test]
fn an_edit_with_the_higher_version_wins_over_a_concurrent_deletion() {
    let c = concurrent(&[(10, "DELETE")], &[(50, "b1"), (51, "b2")], &[(0, 1)]);
    let x = c.dbs[0].doc(unid(0)).expect("X");
    assert!(!x.deleted, "the document lives on");
    assert_eq!(x.body.items["Subject"], "b2");
    // The deletion that lost is kept as a conflict document that is a
    // stub (a deleted leaf, I63), the same on both replicas.
    assert_converged(&c);
    let kept = conflict_docs(&c.dbs[0]);
    assert_eq!(kept.len(), 1, "the lost deletion is kept: {kept:?}");
    let stub = kept.values().next().expect("one");
    assert!(stub.deleted, "kept as a stub: {stub:?}");
    assert_eq!(stub.body.conflict_of, Some(unid(0)));
}

#[test]
fn a_deletion_of_the_replicated_edit_is_a_plain_deletion() {
    let mut c = Cluster::new(2);
    set_subject(&mut c.dbs[0], 0, "v1");
    set_subject(&mut c.dbs[0], 0, "v2");
    assert!(c.replicate(0, 1).finished());
    c.dbs[1].delete(unid(0));
    c.sync_all(4).expect("clean pulls finish");
    assert_converged(&c);
    assert!(c.dbs[0].doc(unid(0)).expect("stub").deleted);
    assert!(conflict_docs(&c.dbs[0]).is_empty());
}

#[test]
fn an_update_arriving_supersedes_without_a_conflict() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 5);
    assert!(c.replicate(0, 1).finished());
    for s in ["x", "y", "z"] {
        set_subject(&mut c.dbs[0], 1, s);
    }
    let r = c.replicate(0, 1);
    assert_eq!((r.pull.replaced, r.pull.conflicts), (1, 0));
    // And back: the target holds a version made from the one offered.
    let back = c.replicate(1, 0);
    assert_eq!((back.pull.wanted, back.sent.notes), (0, 0));
    assert!(conflict_docs(&c.dbs[0]).is_empty());
}

#[test]
fn replicas_that_meet_the_same_conflict_make_the_same_conflict_document() {
    let mut c = Cluster::new(3);
    set_subject(&mut c.dbs[0], 0, "original");
    assert!(c.replicate(0, 1).finished());
    c.dbs[0].set_clock(10);
    set_subject(&mut c.dbs[0], 0, "from 0");
    c.dbs[1].set_clock(20);
    set_subject(&mut c.dbs[1], 0, "from 1");
    assert!(
        c.replicate(0, 2).finished(),
        "replica 2 holds the version that will lose"
    );
    let at_0 = c.replicate(1, 0);
    let at_2 = c.replicate(1, 2);
    assert_eq!(
        (at_0.pull.conflicts, at_2.pull.conflicts),
        (1, 1),
        "made twice, independently"
    );
    assert_eq!(conflict_docs(&c.dbs[0]), conflict_docs(&c.dbs[2]));
    let between = c.replicate(0, 2);
    assert!(between.finished());
    assert_eq!(
        between.sent.notes, 0,
        "the copy made elsewhere is already here"
    );
    c.sync_all(4).expect("clean pulls finish");
    assert_converged(&c);
    assert_eq!(conflict_docs(&c.dbs[1]).len(), 1);
}

#[test]
fn selective_replication_sends_only_what_the_formula_selects() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 20);
    c.dbs[0].delete(unid(1));
    let memos = r#"SELECT Form = "Memo""#;
    let r = c.run_one(Spec::pull(0, 1).selection(memos));
    assert!(r.finished(), "{r:?}");
    let held = c.dbs[1].docs();
    assert_eq!(held.len(), 11, "ten memos and the stub of a note");
    assert!(held
        .iter()
        .all(|(u, d)| d.deleted || d.body.items["Form"] == "Memo" || *u == unid(1)));
    assert!(held[&unid(1)].deleted, "stubs always travel");
    assert_eq!(c.dbs[1].histories()[0].selection.as_deref(), Some(memos));
    // Without the formula, the history kept for it does not count.
    let all = c.replicate(0, 1);
    assert_eq!((all.pull.offered, all.pull.wanted), (20, 9));
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
    assert_eq!(c.dbs[1].histories().len(), 2);
}

#[test]
fn a_bad_selection_formula_ends_the_session_and_changes_nothing() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 5);
    let r = c.run_one(Spec::pull(0, 1).selection("SELECT Form = "));
    assert_eq!(
        (r.puller, r.source),
        (PullPhase::Failed, SourcePhase::Failed)
    );
    assert!(matches!(
        r.puller_error,
        Some(ReplicaError::Remote {
            code: ErrorCode::BadSelection,
            ..
        })
    ));
    assert!(c.dbs[1].docs().is_empty());
    assert!(c.dbs[1].histories().is_empty());
}

#[test]
fn documents_stream_smallest_first_in_batches_with_one_want_per_page() {
    let mut c = Cluster::new(2);
    for i in 0..40u32 {
        c.dbs[0].edit(unid(i), |b| {
            b.attachments
                .insert("f".into(), vec![0; ((i * 37) % 101) as usize]);
        });
    }
    let r = c.run_one(Spec::pull(0, 1).page_size(100).batch_notes(8));
    assert!(r.finished());
    let sizes: Vec<u64> = r
        .trace
        .iter()
        .filter_map(|m| match m {
            Sent::ToTarget(ToTarget::Note(n)) => Some(n.size),
            _ => None,
        })
        .collect();
    assert_eq!(sizes.len(), 40);
    assert!(
        sizes.windows(2).all(|w| w[0] <= w[1]),
        "smallest first: {sizes:?}"
    );
    let wants = r
        .trace
        .iter()
        .filter(|m| matches!(m, Sent::ToSource(ToSource::Want(_))))
        .count();
    assert_eq!(wants, 1);
    assert_eq!(r.pull.batches, 5);
    assert_eq!(r.flights, 6, "no round trip per document");
}

#[test]
fn the_source_keeps_at_most_a_window_of_pages_unacknowledged() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 1000);
    let r = c.run_one(Spec::pull(0, 1).page_size(50).window(3));
    assert!(r.finished());
    assert_eq!(r.pull.pages, 20, "the twentieth page is full and last");
    let mut unacked: Vec<Seq> = Vec::new();
    let mut most = 0;
    for m in &r.trace {
        match m {
            Sent::ToTarget(ToTarget::Summary(s)) => {
                unacked.push(s.upto);
                most = most.max(unacked.len());
            }
            Sent::ToSource(ToSource::Ack { upto } | ToSource::Done { upto }) => {
                unacked.retain(|u| u > upto);
            }
            _ => {}
        }
    }
    assert_eq!(most, 3);
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
}

#[test]
fn a_push_is_a_pull_opened_by_the_source() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 30);
    let r = c.run_one(Spec::push(0, 1));
    assert!(r.finished(), "{r:?}");
    assert!(matches!(
        r.trace.first(),
        Some(Sent::ToTarget(ToTarget::Hello(_)))
    ));
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
    assert_eq!(c.dbs[1].histories()[0].seen_upto, c.dbs[0].last_change());
}

#[test]
fn a_copy_of_another_database_is_refused_and_nothing_changes() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 5);
    c.dbs[1] = ModelDb::new(Peer {
        replica: ReplicaId(42),
        instance: DbInstanceId(2),
    });
    let r = c.replicate(0, 1);
    assert!(matches!(
        r.source_error,
        Some(ReplicaError::NotAReplica { .. })
    ));
    assert!(matches!(
        r.puller_error,
        Some(ReplicaError::Remote {
            code: ErrorCode::NotAReplica,
            ..
        })
    ));
    assert!(c.dbs[1].docs().is_empty() && c.dbs[1].histories().is_empty());

    let mut c = Cluster::new(2);
    c.dbs[1] = ModelDb::new(c.dbs[0].peer());
    let r = c.replicate(0, 1);
    assert!(matches!(
        r.source_error,
        Some(ReplicaError::SameInstance(_))
    ));
}

#[test]
fn a_restored_source_is_summarised_again_but_nothing_is_sent_again() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 30);
    assert!(c.replicate(0, 1).finished());
    c.dbs[0] = c.dbs[0].restored_as(DbInstanceId(9));
    let r = c.replicate(0, 1);
    assert!(r.finished());
    assert_eq!((r.pull.offered, r.pull.wanted, r.sent.notes), (30, 0, 0));
    assert_eq!(
        c.dbs[1].histories().len(),
        2,
        "one entry per source instance"
    );
}

#[test]
fn a_history_past_the_sources_end_is_ignored() {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 30);
    assert!(c.replicate(0, 1).finished());
    // The same instance, but a shorter life: its history cannot be ours.
    let peer = c.dbs[0].peer();
    c.dbs[0] = ModelDb::new(peer);
    for i in 100..105 {
        set_subject(&mut c.dbs[0], i, "new life");
    }
    let r = c.replicate(0, 1);
    assert!(r.finished());
    assert_eq!(r.pull.stored, 5);
    assert!(c.dbs[1].doc(unid(104)).is_some());
}
