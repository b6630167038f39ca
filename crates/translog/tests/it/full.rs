//! A full log fails fast with `Full` (never hangs), keeps answering
//! `info`, asks for a checkpoint, and accepts appends again after one.

use crate::common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use translog::{LogConfig, LogError, TransLog};

fn fill(log: &TransLog) -> LogError {
    for i in 0..200u32 {
        match log.append(&batch("f.fdb", vec![(1, img(i as u8))])) {
            Ok(a) => log.wait_durable(a.end_lsn).unwrap(),
            Err(e) => return e,
        }
    }
    panic!("the log never filled up");
}

#[test]
fn a_full_log_fails_fast_and_recovers_after_a_checkpoint() {
    let m = mem();
    Model::default().create_db(&m, "f.fdb", 2);
    let (log, _) = open(&m, cfg(4));
    let e = fill(&log);
    assert!(matches!(e, LogError::Full { .. }), "{e}");
    assert!(e.to_string().contains("full"), "{e}");
    let info = log.info();
    assert_eq!(info.log_full_events, 1);
    assert!(info.checkpoint_wanted);
    assert!(info.bytes_in_use > info.capacity / 2);
    assert!(log.wait_checkpoint_wanted(Duration::from_millis(1)));

    log.checkpoint(log.end_lsn()).unwrap();
    assert!(
        log.info().bytes_in_use < P,
        "only the checkpoint record remains in use"
    );
    let a = log.append(&batch("f.fdb", vec![(1, img(9))])).unwrap();
    log.wait_durable(a.end_lsn).unwrap();
}

#[test]
fn a_checkpointer_thread_keeps_a_busy_log_from_filling() {
    let m = mem();
    Model::default().create_db(&m, "f.fdb", 2);
    // Generous wait: the test must not depend on scheduling.
    let config = LogConfig {
        full_wait: Duration::from_secs(30),
        ..cfg(4)
    };
    let (log, _) = open(&m, config);
    let stop = Arc::new(AtomicBool::new(false));
    let checkpointer = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if log.wait_checkpoint_wanted(Duration::from_millis(20)) {
                    log.checkpoint(log.end_lsn()).unwrap();
                }
            }
        })
    };
    for i in 0..300u32 {
        let a = log
            .append(&batch("f.fdb", vec![(1, img(i as u8))]))
            .unwrap();
        log.wait_durable(a.end_lsn).unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    checkpointer.join().unwrap();
    let info = log.info();
    assert_eq!(info.log_full_events, 0);
    assert!(info.checkpoints >= 5, "{info:?}");
}

#[test]
fn batches_larger_than_half_the_log_are_too_large_at_once() {
    let m = mem();
    let config = LogConfig {
        full_wait: Duration::from_secs(60),
        ..cfg(2)
    };
    let (log, _) = open(&m, config);
    let end = log.end_lsn();
    // Waiting for room for more records than the log could ever hold
    // waits for no more than the largest batch, which an empty log has.
    log.wait_for_room(10_000).unwrap();
    let pages = (0..10).map(|i| (i, img(1))).collect();
    let e = log.append(&batch("f.fdb", pages)).unwrap_err();
    let LogError::TransactionTooLarge {
        size,
        limit,
        capacity,
    } = e
    else {
        panic!("expected TransactionTooLarge, got {e}");
    };
    assert!(size > limit && limit == capacity / 2, "{e}");
    assert_eq!(capacity, log.info().capacity);
    let text = e.to_string();
    assert!(
        text.contains(&format!("transaction of {size} bytes")),
        "{text}"
    );
    assert!(text.contains("raise translog.max_size"), "{text}");
    assert_eq!(log.info().log_full_events, 0);
    assert_eq!(log.end_lsn(), end, "nothing was appended");
    // The log goes on as before.
    let a = log.append(&batch("f.fdb", vec![(1, img(2))])).unwrap();
    log.wait_durable(a.end_lsn).unwrap();
}
