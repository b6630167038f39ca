//! The engine's wait points (`storage::waits` says why they exist): the
//! open-database cache and the checkpointer. None of them may lie on a
//! read's path for longer than an open by someone else of the same file
//! takes (I54).

use storage::waits::WaitPoint;

/// An open that found its path being opened or closed by another thread
/// and waited for it.
pub static DB_SLOT: WaitPoint = WaitPoint::new("db.slot");
/// An open that closed idle databases itself (the cache at twice its
/// limit): only instances with nothing to write, so no disk I/O (I54).
pub static DB_CLOSE_INLINE: WaitPoint = WaitPoint::new("db.close_inline");
/// An open that found the cache at its ceiling (I19) with too few
/// instances closable without I/O, and closed a batch itself, writes
/// included: the closer had fallen behind (back-pressure).
pub static DB_CLOSE_BACKPRESSURE: WaitPoint = WaitPoint::new("db.close_backpressure");
/// One pass of the background closer (hooks, writes, release).
pub static DB_CLOSE_PASS: WaitPoint = WaitPoint::new("db.close_pass");
/// One checkpoint: its flush pass and the control-file update (the
/// background thread's work, not a request's wait).
pub static CHECKPOINT: WaitPoint = WaitPoint::new("checkpoint");
/// A write's wait for its database's writer lock (the combined-write
/// queue found it held).
pub static DB_WRITER_LOCK: WaitPoint = WaitPoint::new("db.writer_lock");

/// The engine's wait points.
pub fn all() -> [&'static WaitPoint; 6] {
    [
        &DB_SLOT,
        &DB_CLOSE_INLINE,
        &DB_CLOSE_BACKPRESSURE,
        &DB_CLOSE_PASS,
        &CHECKPOINT,
        &DB_WRITER_LOCK,
    ]
}
