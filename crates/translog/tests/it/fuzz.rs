//! Random damage to the log never panics recovery: it either recovers
//! exactly a committed prefix of the batches, or refuses with a typed
//! corruption error (when the damage hits the checkpoint it must start
//! from).

use crate::common::*;
use proptest::prelude::*;
use std::path::Path;
use storage::backend::MemBackend;
use translog::{LogError, TransLog};

const BATCHES: usize = 12;

/// A log of BATCHES committed batches (none flushed), the model after each
/// prefix of them, and the log bytes' LSN range.
fn build() -> (MemBackend, Vec<Model>, u64, u64) {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "z.fdb", 5);
    let (log, _) = open(&m, cfg(8));
    let start = log.end_lsn().0;
    let mut prefixes = vec![model.clone()];
    for i in 0..BATCHES {
        let b = match i % 3 {
            0 => batch("z.fdb", vec![(1 + i as u32 % 4, img(i as u8))]),
            1 => batch("z.fdb", vec![(2, delta(40 + i as u16, &[i as u8; 30]))]),
            _ => batch(
                "z.fdb",
                vec![(3, delta(7000, b"zz")), (4, img(0x80 | i as u8))],
            ),
        };
        commit(&log, &mut model, b);
        prefixes.push(model.clone());
    }
    let end = log.end_lsn().0;
    drop(log);
    (m, prefixes, start, end)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn damaged_logs_recover_a_committed_prefix_or_fail_typed(
        at in 0.0f64..1.0,
        garbage in proptest::collection::vec(any::<u8>(), 1..300),
        truncate in any::<bool>(),
    ) {
        let (base, prefixes, start, end) = build();
        let m = base.snapshot();
        // Somewhere in the log, including the restart checkpoint before the batches.
        let lsn = storage::Lsn(start - 56 + ((end - start + 56) as f64 * at) as u64);
        let (path, off) = locate(Path::new(LOG), lsn);
        let mut bytes = m.file_bytes(&path).unwrap();
        if truncate {
            bytes.truncate(off);
        } else {
            let n = garbage.len().min(bytes.len() - off);
            bytes[off..off + n].copy_from_slice(&garbage[..n]);
        }
        m.set_file_bytes(&path, bytes);
        match TransLog::open(std::sync::Arc::new(m.clone()), Path::new(DATA), cfg(8)) {
            Ok((_log, report)) => {
                let k = report.committed_txns_redone as usize;
                prop_assert!(k <= BATCHES);
                prop_assert!(report.failed_databases.is_empty());
                prefixes[k].check(&m);
            }
            Err(e) => prop_assert!(matches!(e, LogError::Corrupt { .. }), "{e}"),
        }
    }
}
