//! Sessions under network faults and crashes, at every message and every
//! local action: whatever happens, nothing is written that should not be,
//! the history never runs ahead of what is durable (I26), and a clean
//! session afterwards converges sending only what is still missing.

mod common;

use common::*;
use replica::testkit::{Cluster, Faults, RunResult, Spec};
use replica::{PullPhase, ReplicaError, SourcePhase};

/// Replica 0 with 120 documents (some deleted), replica 1 holding an
/// older copy of a few of them.
fn base() -> Cluster {
    let mut c = Cluster::new(2);
    fill(&mut c.dbs[0], 20);
    assert!(c.replicate(0, 1).finished());
    fill(&mut c.dbs[0], 120);
    for i in [5, 50, 77] {
        c.dbs[0].delete(unid(i));
    }
    c
}

fn spec() -> Spec {
    Spec::pull(0, 1).page_size(16).window(3).batch_notes(5)
}

/// Runs `faults`, checks what it left, resumes cleanly, checks that.
fn interrupted_then_resumed(faults: Faults) -> RunResult {
    let mut c = base();
    let broken = c.run_one(spec().faults(faults.clone()));
    assert!(
        broken.driver_errors.is_empty(),
        "{faults:?}: {:?}",
        broken.driver_errors
    );
    assert_history_covered(&c.dbs[1], &c.dbs[0]);
    let missing_before = missing(&c.dbs[1], &c.dbs[0]);
    let resumed = c.run_one(spec());
    assert!(resumed.finished(), "{faults:?}: {resumed:?}");
    assert_eq!(
        resumed.sent.notes, missing_before,
        "{faults:?}: the resumed session sends exactly what was not written"
    );
    assert_eq!(c.dbs[1].docs(), c.dbs[0].docs(), "{faults:?}");
    assert_history_covered(&c.dbs[1], &c.dbs[0]);
    broken
}

fn clean_messages() -> u32 {
    let clean = base().run_one(spec());
    assert!(clean.finished());
    clean.messages
}

#[test]
fn a_cut_at_any_message_then_a_resume_converges() {
    let total = clean_messages();
    assert!(total > 100, "{total} messages");
    for k in 0..=total {
        let broken = interrupted_then_resumed(Faults::cut_at(k));
        if k < total {
            assert!(!broken.finished(), "cut at {k}");
            if broken.puller == PullPhase::Failed {
                assert_eq!(broken.puller_error, Some(ReplicaError::Disconnected));
            }
        }
    }
}

#[test]
fn a_target_crash_after_any_local_action_loses_nothing() {
    for n in 0.. {
        let broken = interrupted_then_resumed(Faults {
            crash_target_after: Some(n),
            ..Faults::none()
        });
        if broken.crashed.is_none() {
            assert!(n > 30, "the clean run has {n} local actions");
            break;
        }
    }
}

#[test]
fn a_source_crash_after_any_local_action_loses_nothing() {
    for n in 0.. {
        let broken = interrupted_then_resumed(Faults {
            crash_source_after: Some(n),
            ..Faults::none()
        });
        if broken.crashed.is_none() {
            assert!(n > 10, "the clean run has {n} source reads");
            break;
        }
    }
}

#[test]
fn a_lost_message_ends_the_session_and_a_resume_converges() {
    let total = clean_messages();
    for k in 0..total {
        let broken = interrupted_then_resumed(Faults {
            drop: [k].into(),
            ..Faults::none()
        });
        if broken.puller == PullPhase::Finished {
            // The target's last messages (an Ack, Done) may go missing
            // with the target done; the source then notices the gap or
            // gives up waiting.
            assert!(k + 3 >= total, "drop {k} of {total}");
            assert!(matches!(
                broken.source_error,
                Some(ReplicaError::TimedOut { .. } | ReplicaError::Gap { .. })
            ));
        } else {
            assert!(
                matches!(
                    broken.puller_error,
                    Some(
                        ReplicaError::Gap { .. }
                            | ReplicaError::TimedOut { .. }
                            | ReplicaError::Remote { .. }
                    )
                ),
                "drop {k}: {:?}",
                broken.puller_error
            );
        }
    }
}

#[test]
fn a_duplicated_message_is_ignored() {
    let clean = base().run_one(spec());
    for k in 0..clean.messages {
        let mut c = base();
        let r = c.run_one(spec().faults(Faults {
            duplicate: [k].into(),
            ..Faults::none()
        }));
        assert!(r.finished(), "duplicate {k}: {r:?}");
        assert_eq!(r.pull, clean.pull, "duplicate {k}");
        assert_eq!(c.dbs[1].docs(), c.dbs[0].docs());
    }
}

#[test]
fn a_reordered_message_ends_the_session_cleanly_or_changes_nothing() {
    let total = clean_messages();
    let mut failed = 0;
    for k in 0..total {
        let broken = interrupted_then_resumed(Faults {
            hold: [k].into(),
            ..Faults::none()
        });
        if !broken.finished() {
            failed += 1;
            assert!(
                matches!(
                    broken.puller_error,
                    Some(ReplicaError::Gap { .. } | ReplicaError::Remote { .. })
                ) || matches!(broken.source_error, Some(ReplicaError::Gap { .. })),
                "hold {k}: {broken:?}"
            );
        }
    }
    assert!(failed > 0, "reordering is noticed");
}

#[test]
fn a_silent_peer_times_out_on_both_sides() {
    let mut c = base();
    // Lose everything the source says: the target hears nothing at all.
    let drop = (0..400).collect();
    let r = c.run_one(spec().faults(Faults {
        drop,
        ..Faults::none()
    }));
    assert_eq!(
        (r.puller, r.source),
        (PullPhase::Failed, SourcePhase::Failed)
    );
    assert!(matches!(
        r.puller_error,
        Some(ReplicaError::TimedOut { .. })
    ));
    assert!(
        c.dbs[1].histories().len() == 1,
        "only the earlier, complete session's entry"
    );
}
