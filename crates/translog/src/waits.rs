//! The log's wait points (`storage::waits` says why they exist): a
//! committer waiting for its group's fsync, and an append waiting for the
//! checkpointer to free space. Only the first may lie on a write's path in
//! normal running (I54); the second means checkpoints fell behind.

use storage::waits::WaitPoint;

/// A caller blocked in `wait_durable` until its LSN was durable.
pub static LOG_DURABLE: WaitPoint = WaitPoint::new("log.durable");
/// An append (or `wait_for_room`) that found the log full and waited for
/// a checkpoint to free space, whether it then fitted or failed.
pub static LOG_ROOM: WaitPoint = WaitPoint::new("log.room");

/// The log's wait points.
pub fn all() -> [&'static WaitPoint; 2] {
    [&LOG_DURABLE, &LOG_ROOM]
}
