//! Pages written without a sync of their own: the ledger that keeps the
//! redo LSN behind them until one sync of their file system covers them.
//!
//! With the log on, a page written to a database file need not be durable
//! at once: the log holds every change since the checkpoint's redo LSN, and
//! redo repairs whatever a crash left of the write, torn or lost (I5, I6).
//! What must never happen is a checkpoint moving its redo LSN past a change
//! that is neither in a dirty frame nor durable in its file (I8). So the
//! closer and the checkpointer write pages and mark them clean (a closing
//! database can leave the pool, I19) after noting here the oldest rec LSN
//! they wrote; the checkpoint then syncs each file system once
//! ([`FileHandle::sync_fs`]) instead of each file, and reads the ledger's
//! minimum into its redo LSN after the dirty frames'.
//!
//! Why it is safe (design.md I8, I19):
//! 1. A pass writes a file's pages, notes their oldest rec LSN here, and
//!    only then marks the frames clean: at every moment each written
//!    change is in a dirty frame, in the ledger, or durable.
//! 2. [`Unsynced::sync`] moves what was noted to `syncing` before its
//!    syncs start and forgets it only when they succeeded; a page noted
//!    meanwhile waits for the next sync.
//! 3. The redo LSN reads the dirty frames first and this ledger second, so
//!    a frame cleaned between the two reads was noted before the second.
//!
//! A failed sync cannot say which write it lost, so it is sticky: what it
//! was to make durable keeps holding the redo LSN (the log keeps those
//! changes for restart recovery) and every later sync reports the failure.
//!
//! Each file system is synced through a long-lived *anchor* handle (the
//! engine gives one in its data directory), so no database's descriptor
//! outlives its close; a file system without an anchor is synced through
//! the handle of a file written on it, kept until that sync.

use crate::{FileHandle, Lsn};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

/// Which file system a handle is on (`None` where the backend cannot
/// tell: all such handles count as one).
type Device = Option<u64>;

fn device_of(handle: &dyn FileHandle) -> Device {
    handle.identity().map(|i| i.0)
}

/// The ledger (module docs).
#[derive(Default)]
pub(super) struct Unsynced {
    state: Mutex<State>,
    /// One sync at a time: a second would find nothing noted and report
    /// success while the first is still running.
    turn: Mutex<()>,
}

#[derive(Default)]
struct State {
    /// Oldest rec LSN written since the last sync began.
    noted: Option<Lsn>,
    /// What the sync now running covers (or a failed one covered).
    syncing: Option<Lsn>,
    /// The handles to sync through, one per file system written since the
    /// last sync began.
    through: HashMap<Device, Arc<dyn FileHandle>>,
    anchors: HashMap<Device, Arc<dyn FileHandle>>,
    failed: Option<String>,
}

impl Unsynced {
    /// Syncs `handle`'s file system through `handle` from now on.
    pub(super) fn anchor(&self, handle: Arc<dyn FileHandle>) {
        let dev = device_of(handle.as_ref());
        self.state.lock().anchors.insert(dev, handle);
    }

    /// Records that pages of `handle`'s file, the oldest changed at
    /// `oldest`, were written and not synced. Called before the frames
    /// are marked clean (module docs, 1).
    pub(super) fn note(&self, handle: &Arc<dyn FileHandle>, oldest: Lsn) {
        let dev = device_of(handle.as_ref());
        let mut st = self.state.lock();
        st.noted = Some(st.noted.map_or(oldest, |n| n.min(oldest)));
        if !st.through.contains_key(&dev) {
            let by = st.anchors.get(&dev).unwrap_or(handle).clone();
            st.through.insert(dev, by);
        }
    }

    /// The oldest change written but not yet durable, if any.
    pub(super) fn oldest(&self) -> Option<Lsn> {
        let st = self.state.lock();
        [st.noted, st.syncing].into_iter().flatten().min()
    }

    /// Makes everything noted so far durable, one sync per file system;
    /// returns how many were synced. Sticky on failure (module docs).
    pub(super) fn sync(&self) -> io::Result<usize> {
        let _turn = self.turn.lock();
        let through = {
            let mut st = self.state.lock();
            if let Some(reason) = &st.failed {
                return Err(io::Error::other(format!(
                    "an earlier sync of the database files failed: {reason}"
                )));
            }
            let Some(noted) = st.noted.take() else {
                return Ok(0);
            };
            st.syncing = Some(noted);
            std::mem::take(&mut st.through)
        };
        for handle in through.values() {
            if let Err(e) = handle.sync_fs() {
                self.state.lock().failed = Some(e.to_string());
                return Err(e);
            }
        }
        self.state.lock().syncing = None;
        Ok(through.len())
    }
}
