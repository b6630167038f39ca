//! A backend that makes chosen operations fail, for the fault tests.
//!
//! The engine promises that an I/O error never corrupts what is already
//! durable and that a failed write or fsync poisons the database until
//! reopen. To test that promise we need errors at exact, repeatable
//! points: "EIO on the 3rd write to the log", "ENOSPC from the 10th write
//! on", "the first fsync of the control file fails". [`FaultBackend`] wraps
//! any other backend and consults a list of [`FaultRule`]s before each
//! mutating operation.
//!
//! ```text
//!   engine ──▶ FaultBackend ──(rules say no)──▶ Err(EIO / ENOSPC)
//!                   │        ──(short write)──▶ inner.write_at(first half)
//!                   └──────────(pass)─────────▶ inner backend
//! ```
//!
//! Why it is built this way:
//! - Rules count *matching* operations themselves, from the moment they are
//!   added, so a harness can run a workload once, read [`FaultBackend::count`]
//!   and then replay it with a fault at every position `1..=count`.
//! - Handles returned by `open` are wrapped and share the rule state with
//!   the backend, so a rule added while files are open still reaches them:
//!   the engine keeps its files open for its whole life.
//! - Mutating operations can fail (writes, `set_len`, syncs, opens,
//!   renames, removals), and so can reads: with EIO, or by handing back
//!   bytes with one bit flipped (bit rot, a misdirected read) while the
//!   file itself stays intact, so checksums can be shown to catch it.
//! - A failed write never reaches the inner backend, so it changes nothing;
//!   a short write passes exactly the prefix it reports. A *torn* write is
//!   the one exception, on purpose: it stores a prefix and then fails, the
//!   state a crash in the middle of a write leaves for the next reader.
//! - Any operation can be slowed down (`Delay`), then carried out, so
//!   group commit and timeouts can be tested against a slow disk.

use super::{Backend, FileHandle, OpenMode};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The operation a rule targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultOp {
    /// `FileHandle::read_at`.
    Read,
    /// `FileHandle::write_at`.
    Write,
    /// `FileHandle::set_len`.
    SetLen,
    /// `FileHandle::sync_data`.
    Sync,
    /// `Backend::sync_dir`.
    SyncDir,
    /// `Backend::open`, in any mode.
    Open,
    /// `Backend::rename`; a path filter matches either name.
    Rename,
    /// `Backend::remove_file`.
    Remove,
}

/// What happens when a rule fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The operation fails with `EIO` and changes nothing.
    Eio,
    /// The operation fails with `ENOSPC` and changes nothing.
    Enospc,
    /// `write_at` writes only the first half of the buffer (at least one
    /// byte) and returns that length. An operation that cannot be partial
    /// fails with `EIO` instead.
    ShortWrite,
    /// `write_at` stores the first N bytes of the buffer (at most all but
    /// its last byte) and then fails with `EIO`: the file holds a torn
    /// prefix of a write the caller was told failed, as a crash inside a
    /// write leaves it (pick N at a sector boundary, or mid-field). Other
    /// operations fail with `EIO`.
    TornWrite(usize),
    /// `read_at` returns the file's bytes with one bit flipped in the
    /// middle of what it read; the file is unchanged. Other operations
    /// fail with `EIO`.
    Corrupt,
    /// The operation waits this long, then is carried out normally.
    Delay(std::time::Duration),
    /// The operation waits until [`FaultBackend::release_holds`] is
    /// called, then is carried out normally: a disk stalled for as long
    /// as a test needs, with no timing in the test.
    Hold,
}

impl FaultKind {
    fn error(self) -> io::Error {
        match self {
            FaultKind::Enospc => io::Error::from_raw_os_error(libc::ENOSPC),
            _ => io::Error::from_raw_os_error(libc::EIO),
        }
    }
}

/// When to inject a fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    pub op: FaultOp,
    pub kind: FaultKind,
    /// Only operations whose path contains this string match (for a
    /// rename, either path); `None` matches every path.
    pub path_contains: Option<String>,
    /// 1-based: the `nth` matching operation since the rule was added
    /// fails (0 is treated as 1).
    pub nth: u64,
    /// If set, every matching operation from the `nth` on fails.
    pub sticky: bool,
}

impl FaultRule {
    /// A one-shot rule firing on the first matching operation on any path;
    /// adjust the other fields with struct update syntax.
    pub fn new(op: FaultOp, kind: FaultKind) -> Self {
        FaultRule {
            op,
            kind,
            path_contains: None,
            nth: 1,
            sticky: false,
        }
    }

    fn matches(&self, op: FaultOp, paths: &[&Path]) -> bool {
        self.op == op
            && self
                .path_contains
                .as_deref()
                .is_none_or(|needle| paths.iter().any(|p| p.to_string_lossy().contains(needle)))
    }

    fn fires_at(&self, seen: u64) -> bool {
        let nth = self.nth.max(1);
        seen == nth || (self.sticky && seen > nth)
    }
}

/// A rule and how many matching operations it has seen.
struct ActiveRule {
    rule: FaultRule,
    seen: u64,
}

/// Shared by the backend and every handle it opened.
#[derive(Default)]
struct FaultState {
    rules: Vec<ActiveRule>,
    counts: BTreeMap<FaultOp, u64>,
    injected: u64,
    /// Files written since their last sync: what a `sync_fs` makes durable,
    /// so a `Sync` rule naming one of them reaches the file-system sync
    /// that stands in for its own.
    unsynced: BTreeSet<PathBuf>,
}

impl FaultState {
    /// Records one `op` on `paths` and returns the fault to inject, if any.
    /// Every matching rule counts the operation; the first one (in the
    /// order added) that fires decides the kind.
    fn check(&mut self, op: FaultOp, paths: &[&Path]) -> Option<FaultKind> {
        *self.counts.entry(op).or_default() += 1;
        let mut fault = None;
        for active in self.rules.iter_mut().filter(|a| a.rule.matches(op, paths)) {
            active.seen += 1;
            if fault.is_none() && active.rule.fires_at(active.seen) {
                fault = Some(active.rule.kind);
            }
        }
        if fault.is_some() {
            self.injected += 1;
        }
        fault
    }
}

/// The rules and counters, and the gate of `Hold` rules.
#[derive(Default)]
struct Shared {
    state: Mutex<FaultState>,
    holds: Mutex<Holds>,
    holds_cv: parking_lot::Condvar,
}

/// Operations held by `Hold` rules: how many wait now, and how many
/// times the gate opened (a held operation goes on once it changes).
#[derive(Default)]
struct Holds {
    waiting: u64,
    released: u64,
}

type SharedState = Arc<Shared>;

impl Shared {
    fn lock(&self) -> parking_lot::MutexGuard<'_, FaultState> {
        self.state.lock()
    }
}

/// Fails an operation outright if a rule says so (or delays or holds it).
fn guard(state: &SharedState, op: FaultOp, paths: &[&Path]) -> io::Result<()> {
    let fault = state.lock().check(op, paths);
    match fault {
        None => Ok(()),
        Some(FaultKind::Delay(d)) => {
            std::thread::sleep(d);
            Ok(())
        }
        Some(FaultKind::Hold) => {
            let mut holds = state.holds.lock();
            let generation = holds.released;
            holds.waiting += 1;
            state.holds_cv.notify_all();
            while holds.released == generation {
                state.holds_cv.wait(&mut holds);
            }
            holds.waiting -= 1;
            Ok(())
        }
        Some(kind) => Err(kind.error()),
    }
}

/// Wraps a backend and injects errors according to [`FaultRule`]s.
pub struct FaultBackend {
    inner: Arc<dyn Backend>,
    state: SharedState,
}

impl FaultBackend {
    pub fn new(inner: Arc<dyn Backend>) -> Self {
        FaultBackend {
            inner,
            state: SharedState::default(),
        }
    }

    /// Adds a rule; it also applies to handles opened before.
    pub fn add_rule(&self, rule: FaultRule) {
        self.state.lock().rules.push(ActiveRule { rule, seen: 0 });
    }

    /// Removes every rule; the counters keep running.
    pub fn clear_rules(&self) {
        self.state.lock().rules.clear();
    }

    /// Waits until at least `n` operations are held by `Hold` rules.
    pub fn wait_held(&self, n: u64) {
        let mut holds = self.state.holds.lock();
        while holds.waiting < n {
            self.state.holds_cv.wait(&mut holds);
        }
    }

    /// How many operations `Hold` rules hold right now.
    pub fn held(&self) -> u64 {
        self.state.holds.lock().waiting
    }

    /// Lets every held operation go on (those held later wait for the
    /// next call).
    pub fn release_holds(&self) {
        self.state.holds.lock().released += 1;
        self.state.holds_cv.notify_all();
    }

    /// How many faults fired so far.
    pub fn injected(&self) -> u64 {
        self.state.lock().injected
    }

    /// How many operations of kind `op` were attempted so far, on any path,
    /// including those that failed by injection.
    pub fn count(&self, op: FaultOp) -> u64 {
        self.state.lock().counts.get(&op).copied().unwrap_or(0)
    }
}

/// A handle of the inner backend, routed through the rules.
struct FaultFile {
    inner: Arc<dyn FileHandle>,
    path: PathBuf,
    state: SharedState,
}

/// The length a short write of `len` bytes writes: half, at least one byte.
fn short_len(len: usize) -> usize {
    (len / 2).max(1).min(len)
}

impl FileHandle for FaultFile {
    fn identity(&self) -> Option<super::FileIdentity> {
        self.inner.identity()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let fault = self.state.lock().check(FaultOp::Read, &[&self.path]);
        match fault {
            None => self.inner.read_at(buf, offset),
            Some(FaultKind::Delay(d)) => {
                std::thread::sleep(d);
                self.inner.read_at(buf, offset)
            }
            Some(FaultKind::Corrupt) => {
                let n = self.inner.read_at(buf, offset)?;
                if n > 0 {
                    buf[n / 2] ^= 0x10;
                }
                Ok(n)
            }
            Some(kind) => Err(kind.error()),
        }
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let fault = {
            let mut state = self.state.lock();
            state.unsynced.insert(self.path.clone());
            state.check(FaultOp::Write, &[&self.path])
        };
        match fault {
            None => self.inner.write_at(buf, offset),
            Some(FaultKind::ShortWrite) => {
                self.inner.write_at(&buf[..short_len(buf.len())], offset)
            }
            Some(kind @ FaultKind::TornWrite(n)) => {
                let n = n.min(buf.len().saturating_sub(1));
                super::write_all_at(self.inner.as_ref(), &buf[..n], offset)?;
                Err(kind.error())
            }
            Some(FaultKind::Delay(d)) => {
                std::thread::sleep(d);
                self.inner.write_at(buf, offset)
            }
            Some(kind) => Err(kind.error()),
        }
    }
    fn sync_data(&self) -> io::Result<()> {
        guard(&self.state, FaultOp::Sync, &[&self.path])?;
        self.inner.sync_data()?;
        self.state.lock().unsynced.remove(&self.path);
        Ok(())
    }
    /// One `Sync` operation on every file written since its last sync (on
    /// this handle's own path when there is none): a rule on any of them
    /// fails, delays or holds the whole file system's sync, as a bad
    /// sector of one file fails a real `syncfs`.
    fn sync_fs(&self) -> io::Result<()> {
        let written: Vec<PathBuf> = self.state.lock().unsynced.iter().cloned().collect();
        let mut paths: Vec<&Path> = written.iter().map(PathBuf::as_path).collect();
        if paths.is_empty() {
            paths.push(&self.path);
        }
        guard(&self.state, FaultOp::Sync, &paths)?;
        self.inner.sync_fs()?;
        let mut state = self.state.lock();
        for p in &written {
            state.unsynced.remove(p);
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        guard(&self.state, FaultOp::SetLen, &[&self.path])?;
        self.state.lock().unsynced.insert(self.path.clone());
        self.inner.set_len(len)
    }
}

impl Backend for FaultBackend {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn FileHandle>> {
        guard(&self.state, FaultOp::Open, &[path])?;
        let inner = self.inner.open(path, mode)?;
        Ok(Arc::new(FaultFile {
            inner,
            path: path.to_path_buf(),
            state: self.state.clone(),
        }))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        guard(&self.state, FaultOp::Remove, &[path])?;
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        guard(&self.state, FaultOp::Rename, &[from, to])?;
        self.inner.rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.read_dir(dir)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        guard(&self.state, FaultOp::SyncDir, &[dir])?;
        self.inner.sync_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{read_file, write_all_at, MemBackend};

    fn setup() -> (MemBackend, FaultBackend) {
        let mem = MemBackend::new();
        mem.create_dir_all(Path::new("d")).unwrap();
        let fault = FaultBackend::new(Arc::new(mem.clone()));
        (mem, fault)
    }

    fn open(b: &dyn Backend, path: &str) -> Arc<dyn FileHandle> {
        b.open(Path::new(path), OpenMode::CreateOrOpen).unwrap()
    }

    fn os_error<T>(r: io::Result<T>) -> i32 {
        r.err().and_then(|e| e.raw_os_error()).expect("an OS error")
    }

    fn rule(op: FaultOp, kind: FaultKind, nth: u64, sticky: bool) -> FaultRule {
        FaultRule {
            nth,
            sticky,
            ..FaultRule::new(op, kind)
        }
    }

    #[test]
    fn one_shot_eio_fails_only_the_nth_write_and_changes_nothing() {
        let (mem, fault) = setup();
        fault.add_rule(rule(FaultOp::Write, FaultKind::Eio, 2, false));
        let f = open(&fault, "d/a");
        assert_eq!(f.write_at(b"aaaa", 0).unwrap(), 4);
        assert_eq!(os_error(f.write_at(b"bbbb", 0)), libc::EIO);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"aaaa");
        assert_eq!(f.write_at(b"cc", 4).unwrap(), 2);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"aaaacc");
        assert_eq!(fault.injected(), 1);
    }

    /// A `Sync` rule on a file reaches the file-system sync that would
    /// make its writes durable, through whichever handle it is asked; a
    /// file synced on its own no longer matches.
    #[test]
    fn a_sync_rule_on_a_written_file_fails_the_file_system_sync() {
        let (_mem, fault) = setup();
        fault.add_rule(FaultRule {
            path_contains: Some("bad".into()),
            sticky: true,
            ..FaultRule::new(FaultOp::Sync, FaultKind::Eio)
        });
        let anchor = open(&fault, "d/anchor");
        let good = open(&fault, "d/good");
        let bad = open(&fault, "d/bad");
        anchor.sync_fs().unwrap();
        good.write_at(b"x", 0).unwrap();
        anchor.sync_fs().unwrap();
        bad.write_at(b"y", 0).unwrap();
        good.write_at(b"z", 0).unwrap();
        assert_eq!(os_error(anchor.sync_fs()), libc::EIO);
        assert_eq!(os_error(good.sync_fs()), libc::EIO, "still unsynced");
        assert_eq!(fault.count(FaultOp::Sync), 4);
    }

    #[test]
    fn reads_fail_or_come_back_corrupted_while_the_file_stays_intact() {
        let (mem, fault) = setup();
        let f = open(&fault, "d/a");
        write_all_at(f.as_ref(), b"abcdefgh", 0).unwrap();
        fault.add_rule(rule(FaultOp::Read, FaultKind::Eio, 1, false));
        fault.add_rule(rule(FaultOp::Read, FaultKind::Corrupt, 2, false));
        let mut buf = [0u8; 8];
        assert_eq!(os_error(f.read_at(&mut buf, 0)), libc::EIO);
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 8);
        assert_eq!(&buf, b"abcdufgh", "one bit flipped mid-read");
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 8);
        assert_eq!(&buf, b"abcdefgh");
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"abcdefgh");
        assert_eq!(fault.count(FaultOp::Read), 3);
    }

    #[test]
    fn a_torn_write_stores_a_prefix_and_reports_failure() {
        let (mem, fault) = setup();
        let f = open(&fault, "d/a");
        write_all_at(f.as_ref(), b"oooooooo", 0).unwrap();
        fault.add_rule(rule(FaultOp::Write, FaultKind::TornWrite(3), 1, false));
        fault.add_rule(rule(FaultOp::Write, FaultKind::TornWrite(100), 2, false));
        assert_eq!(os_error(f.write_at(b"nnnnnnnn", 0)), libc::EIO);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"nnnooooo");
        assert_eq!(os_error(f.write_at(b"tttt", 0)), libc::EIO);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"tttooooo");
    }

    #[test]
    fn a_delay_slows_the_operation_and_then_carries_it_out() {
        let (mem, fault) = setup();
        let f = open(&fault, "d/a");
        let d = std::time::Duration::from_millis(20);
        fault.add_rule(rule(FaultOp::Sync, FaultKind::Delay(d), 1, true));
        fault.add_rule(rule(FaultOp::Write, FaultKind::Delay(d), 1, false));
        let t = std::time::Instant::now();
        write_all_at(f.as_ref(), b"x", 0).unwrap();
        f.sync_data().unwrap();
        f.sync_data().unwrap();
        assert!(t.elapsed() >= d * 3);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"x");
    }

    #[test]
    fn sticky_enospc_fails_every_write_from_the_nth_on() {
        let (mem, fault) = setup();
        fault.add_rule(rule(FaultOp::Write, FaultKind::Enospc, 2, true));
        let f = open(&fault, "d/a");
        f.write_at(b"x", 0).unwrap();
        for i in 1..5 {
            assert_eq!(os_error(f.write_at(b"y", i)), libc::ENOSPC);
        }
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"x");
        assert_eq!(fault.injected(), 4);
    }

    #[test]
    fn short_write_writes_exactly_the_returned_prefix() {
        let (mem, fault) = setup();
        fault.add_rule(rule(FaultOp::Write, FaultKind::ShortWrite, 1, true));
        let f = open(&fault, "d/a");
        assert_eq!(f.write_at(b"0123456789", 0).unwrap(), 5);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"01234");
        assert_eq!(f.write_at(b"z", 5).unwrap(), 1);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"01234z");
    }

    #[test]
    fn write_all_at_completes_after_a_one_shot_short_write() {
        let (mem, fault) = setup();
        fault.add_rule(FaultRule::new(FaultOp::Write, FaultKind::ShortWrite));
        let f = open(&fault, "d/a");
        write_all_at(f.as_ref(), b"abcdefgh", 0).unwrap();
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap(), b"abcdefgh");
        assert_eq!(fault.count(FaultOp::Write), 2);
        assert_eq!(fault.injected(), 1);
    }

    #[test]
    fn path_filter_only_counts_and_fails_matching_files() {
        let (_mem, fault) = setup();
        fault.add_rule(FaultRule {
            path_contains: Some("log".into()),
            ..rule(FaultOp::Write, FaultKind::Eio, 2, false)
        });
        let db = open(&fault, "d/db");
        let log = open(&fault, "d/log1");
        log.write_at(b"1", 0).unwrap();
        db.write_at(b"1", 0).unwrap();
        db.write_at(b"2", 0).unwrap();
        assert_eq!(os_error(log.write_at(b"2", 0)), libc::EIO);
        assert_eq!(fault.count(FaultOp::Write), 4);
        assert_eq!(fault.injected(), 1);
    }

    #[test]
    fn rename_filter_matches_either_path() {
        let (_mem, fault) = setup();
        fault.add_rule(FaultRule {
            path_contains: Some("control".into()),
            ..rule(FaultOp::Rename, FaultKind::Eio, 1, true)
        });
        open(&fault, "d/a.tmp");
        assert_eq!(
            os_error(fault.rename(Path::new("d/a.tmp"), Path::new("d/control"))),
            libc::EIO
        );
        assert!(fault.exists(Path::new("d/a.tmp")));
        fault
            .rename(Path::new("d/a.tmp"), Path::new("d/b"))
            .unwrap();
        assert!(fault.exists(Path::new("d/b")));
    }

    #[test]
    fn each_operation_kind_fails_where_configured() {
        let (mem, fault) = setup();
        let f = open(&fault, "d/a");
        open(&fault, "d/b");
        for op in [
            FaultOp::Sync,
            FaultOp::SetLen,
            FaultOp::SyncDir,
            FaultOp::Open,
            FaultOp::Rename,
            FaultOp::Remove,
        ] {
            fault.add_rule(FaultRule::new(op, FaultKind::Eio));
        }
        assert_eq!(os_error(f.sync_data()), libc::EIO);
        assert_eq!(os_error(f.set_len(10)), libc::EIO);
        assert_eq!(mem.file_bytes(Path::new("d/a")).unwrap().len(), 0);
        assert_eq!(os_error(fault.sync_dir(Path::new("d"))), libc::EIO);
        assert_eq!(
            os_error(fault.open(Path::new("d/c"), OpenMode::CreateNew)),
            libc::EIO
        );
        assert!(!mem.exists(Path::new("d/c")));
        assert_eq!(
            os_error(fault.rename(Path::new("d/a"), Path::new("d/c"))),
            libc::EIO
        );
        assert_eq!(os_error(fault.remove_file(Path::new("d/b"))), libc::EIO);
        assert!(mem.exists(Path::new("d/a")) && mem.exists(Path::new("d/b")));
        assert_eq!(fault.injected(), 6);
        // One-shot: every operation works the second time.
        f.sync_data().unwrap();
        f.set_len(10).unwrap();
        fault.sync_dir(Path::new("d")).unwrap();
        fault.rename(Path::new("d/a"), Path::new("d/c")).unwrap();
        fault.remove_file(Path::new("d/b")).unwrap();
        assert_eq!(read_file(&fault, Path::new("d/c")).unwrap(), vec![0; 10]);
    }

    #[test]
    fn short_write_on_an_operation_that_cannot_be_partial_is_eio() {
        let (_mem, fault) = setup();
        fault.add_rule(FaultRule::new(FaultOp::Sync, FaultKind::ShortWrite));
        let f = open(&fault, "d/a");
        assert_eq!(os_error(f.sync_data()), libc::EIO);
    }

    #[test]
    fn rules_added_later_reach_handles_opened_before() {
        let (_mem, fault) = setup();
        let f = open(&fault, "d/a");
        f.write_at(b"1", 0).unwrap();
        fault.add_rule(FaultRule::new(FaultOp::Write, FaultKind::Eio));
        assert_eq!(os_error(f.write_at(b"2", 0)), libc::EIO);
    }

    #[test]
    fn nth_counts_from_when_the_rule_was_added() {
        let (_mem, fault) = setup();
        let f = open(&fault, "d/a");
        f.write_at(b"1", 0).unwrap();
        f.write_at(b"2", 0).unwrap();
        fault.add_rule(rule(FaultOp::Write, FaultKind::Eio, 2, false));
        f.write_at(b"3", 0).unwrap();
        assert!(f.write_at(b"4", 0).is_err());
        assert_eq!(fault.count(FaultOp::Write), 4);
    }

    #[test]
    fn clear_rules_stops_faults_and_keeps_counters() {
        let (_mem, fault) = setup();
        fault.add_rule(rule(FaultOp::Sync, FaultKind::Eio, 1, true));
        let f = open(&fault, "d/a");
        assert!(f.sync_data().is_err());
        fault.clear_rules();
        f.sync_data().unwrap();
        assert_eq!(fault.count(FaultOp::Sync), 2);
        assert_eq!(fault.count(FaultOp::Open), 1);
        assert_eq!(fault.count(FaultOp::Write), 0);
        assert_eq!(fault.injected(), 1);
    }

    #[test]
    fn nth_zero_behaves_like_one() {
        let (_mem, fault) = setup();
        fault.add_rule(rule(FaultOp::Sync, FaultKind::Eio, 0, false));
        let f = open(&fault, "d/a");
        assert!(f.sync_data().is_err());
        f.sync_data().unwrap();
    }
}
