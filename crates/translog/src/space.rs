//! Space accounting: how much log may be in use, and when to ask for a
//! checkpoint.
//!
//! The log may use at most `max_size / extent_size` extents, counted from
//! the one holding the redo LSN to the one the last record starts in
//! (extents wholly below the redo LSN are free, I8). An append is accepted
//! only if it fits; otherwise it waits (bounded) for a checkpoint and then
//! fails with `Full`, so a full log never hangs the server.
//!
//! A checkpoint needs log space itself, so room is held back for it:
//! a batch must leave room for two Checkpoint records, a checkpoint for one
//! more, and the checkpoint written by restart recovery may use the last.
//! Hence a log filled by batches can always be checkpointed, and a log
//! whose last act before a crash was a checkpoint can always restart.

use crate::config::LogConfig;
use crate::geometry::{Geometry, Placement};
use crate::record::CHECKPOINT_LEN;
use storage::Lsn;

/// Room to leave behind an append, in Checkpoint records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reserve {
    Batch,
    Checkpoint,
    Restart,
}

impl Reserve {
    fn records(self) -> usize {
        match self {
            Reserve::Batch => 2,
            Reserve::Checkpoint => 1,
            Reserve::Restart => 0,
        }
    }
}

/// The space limits of one log.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpacePolicy {
    geo: Geometry,
    max_extents: u64,
    threshold: u64,
}

impl SpacePolicy {
    pub(crate) fn new(geo: Geometry, cfg: &LogConfig) -> Self {
        let max_extents = cfg.max_extents();
        let capacity = max_extents * geo.payload();
        SpacePolicy {
            geo,
            max_extents,
            threshold: cfg.tuning.checkpoint_threshold(capacity),
        }
    }

    pub(crate) fn max_extents(&self) -> u64 {
        self.max_extents
    }

    /// Bytes of log stream the extents may hold.
    pub(crate) fn capacity(&self) -> u64 {
        self.max_extents * self.geo.payload()
    }

    /// The largest batch accepted: half the capacity, so that a batch can
    /// always fit once a checkpoint has freed the log.
    pub(crate) fn batch_limit(&self) -> u64 {
        self.capacity() / 2
    }

    /// Placements for records of `lens` appended at `end`, if they and
    /// the reserve fit. `oldest` is the oldest LSN the log must keep: the
    /// redo LSN, or in archive style the lower of it and the archive mark.
    pub(crate) fn place(
        &self,
        oldest: Lsn,
        end: Lsn,
        lens: &[u64],
        reserve: Reserve,
    ) -> Option<Vec<Placement>> {
        let (places, after) = self.geo.layout(end, lens);
        let (held, _) = self
            .geo
            .layout(after, &vec![CHECKPOINT_LEN; reserve.records()]);
        let last = held.last().or(places.last())?.start;
        (self.extents_in_use(oldest, last) <= self.max_extents).then_some(places)
    }

    /// Extents from the one holding `redo` to the one holding `last`.
    fn extents_in_use(&self, redo: Lsn, last: Lsn) -> u64 {
        (self.geo.seq_of(last).saturating_sub(self.geo.seq_of(redo))) + 1
    }

    /// Whether a checkpoint should be taken: the tuning's threshold is
    /// reached, every allowed extent is in use, or an append is waiting.
    pub(crate) fn checkpoint_wanted(&self, redo: Lsn, end: Lsn, full_waiters: usize) -> bool {
        end.0.saturating_sub(redo.0) >= self.threshold
            || self.extents_in_use(redo, end) >= self.max_extents
            || full_waiters > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Tuning;

    fn policy(extents: u64, tuning: Tuning) -> SpacePolicy {
        let cfg = LogConfig {
            extent_size: 65536,
            max_size: extents * 65536,
            tuning,
            ..LogConfig::new("/l")
        };
        SpacePolicy::new(Geometry::new(65536), &cfg)
    }

    #[test]
    fn appends_must_leave_room_for_checkpoints() {
        let p = policy(2, Tuning::Runtime);
        let g = Geometry::new(65536);
        let redo = g.first_lsn();
        let last_extent_end = Lsn(g.extent_start(3).0 - 200);
        assert!(p
            .place(redo, last_extent_end, &[40], Reserve::Restart)
            .is_some());
        assert!(p
            .place(redo, last_extent_end, &[40], Reserve::Checkpoint)
            .is_some());
        assert!(p
            .place(redo, last_extent_end, &[40], Reserve::Batch)
            .is_some());
        assert!(
            p.place(redo, last_extent_end, &[100], Reserve::Batch)
                .is_none(),
            "two checkpoints no longer fit"
        );
        assert!(p
            .place(redo, last_extent_end, &[100], Reserve::Checkpoint)
            .is_some());
        assert!(p
            .place(g.extent_start(2), last_extent_end, &[100], Reserve::Batch)
            .is_some());
    }

    #[test]
    fn checkpoint_wanted_by_threshold_extents_or_waiters() {
        let p = policy(8, Tuning::Standard);
        let g = Geometry::new(65536);
        let redo = g.first_lsn();
        assert!(!p.checkpoint_wanted(redo, Lsn(redo.0 + 1000), 0));
        assert!(p.checkpoint_wanted(redo, Lsn(redo.0 + 1000), 1));
        assert!(p.checkpoint_wanted(redo, Lsn(redo.0 + p.capacity() / 4), 0));
        let two = policy(2, Tuning::Runtime);
        assert!(two.checkpoint_wanted(redo, g.extent_start(2), 0));
    }
}
