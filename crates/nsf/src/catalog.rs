//! The catalog: every database's path, title and audience, so that
//! listing databases never opens one.
//!
//! A server with 20,000 databases keeps at most `max_open_databases` of
//! them open (I19). Listing them must not open the rest: each open costs a
//! descriptor, a header read and an ACL lookup, and opening every database
//! to list them is what ran a server out of descriptors. The catalog holds,
//! per database, what a listing shows and what decides who may see it:
//! the path, the title, the instance id and the [`Audience`], a summary of
//! the access-control list saying who has any access at all.
//!
//! It lives in memory, backed by one file, `<data>/catalog`: checksummed
//! records appended as things change, rewritten whole (I9) at every start
//! and when it has grown to several times its live size (design.md §9).
//! The catalog is derived data, the database files are the truth, so it
//! is never waited for, except for the one change a walk of the data
//! directory cannot see: an ACL change (I20).
//!
//! ```text
//!   create  file renamed into place, then opened: the open records it
//!   ACL     "changing" record, synced ─► ACL commit ─► new audience recorded
//!   open    a cache miss compares title, instance id and audience; corrects
//!   start   load (stop at the first bad record: a torn tail)
//!           ├─ walk the data directory for database files
//!           ├─ forget entries whose file is gone; rewrite the file
//!           └─ open every file the catalog does not know, and every one
//!              whose last record is an unfinished ACL change
//! ```
//!
//! Records other than "changing" are written without a sync: a crash may
//! lose them, and the walk (a database created but not recorded) or the
//! unfinished intent (an ACL change whose outcome was not recorded) brings
//! them back at the next start. A record past a bad one is never trusted;
//! a bad record that is not the file's torn end (something other than
//! zeros follows it) means the file was damaged, and every database is
//! read again.

use crate::acl::Acl;
use crate::dbpath::DbPath;
use crate::note::folded;
use crate::{AccessLevel, DbInstanceId, NsfError, NsfResult};
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{read_file, write_all_at, write_file_atomic, OpenMode};
use storage::{Backend, FileHandle};

/// The catalog's file name in the data directory.
pub(crate) const CATALOG_FILE: &str = "catalog";
const MAGIC: &[u8; 8] = b"FOLIOCAT";
const VERSION: u32 = 1;
/// Magic, version, 4 reserved bytes.
const FILE_HEADER: usize = 16;
/// Longest record body accepted (an audience of 10,000 long names fits).
const MAX_RECORD: usize = 8 << 20;
const KIND_KNOWN: u8 = 1;
const KIND_ACL_CHANGING: u8 = 2;
/// A rewrite when the file reaches this many times its size after the
/// last one (plus a floor), so appends stay amortised O(1).
const GROWTH: u64 = 4;
const REWRITE_FLOOR: u64 = 256 << 10;

/// Who may learn that a database exists: a summary of its access-control
/// list that a listing applies without opening the database. It names
/// only the entries whose answer differs from the default's, so it is
/// never larger than the list itself (typically a few names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Audience {
    /// The database has no list; what that grants is the caller's policy.
    NoList,
    /// The list could not be read or does not parse: nobody's access is
    /// known, so a listing that follows the list shows the database to
    /// nobody it would have to check.
    Unreadable,
    /// Whether each kind of caller has any access (above NoAccess).
    List {
        /// A signed-in user without an entry.
        default: bool,
        /// A caller who did not sign in.
        anonymous: bool,
        /// Names (folded as ACL names are matched) whose entry answers
        /// the opposite of `default`; sorted.
        except: Box<[String]>,
    },
}

impl Audience {
    /// The audience of a database whose list reads as `acl`.
    pub(crate) fn of(acl: &NsfResult<Option<Acl>>) -> Audience {
        let acl = match acl {
            Ok(Some(acl)) => acl,
            Ok(None) => return Audience::NoList,
            Err(_) => return Audience::Unreadable,
        };
        let default = acl.default > AccessLevel::NoAccess;
        let mut except: Vec<String> = acl
            .entries
            .iter()
            .filter(|e| (e.level > AccessLevel::NoAccess) != default)
            .map(|e| folded(&e.name))
            .collect();
        except.sort();
        except.dedup();
        Audience::List {
            default,
            anonymous: acl.anonymous > AccessLevel::NoAccess,
            except: except.into(),
        }
    }

    /// Whether the list gives `user` (`None`: anonymous) any access, the
    /// same answer as `Acl::access(user).level() > NoAccess`; `None` when
    /// there is no usable list.
    pub fn admits(&self, user: Option<&str>) -> Option<bool> {
        match (self, user) {
            (Audience::NoList | Audience::Unreadable, _) => None,
            (Audience::List { anonymous, .. }, None) => Some(*anonymous),
            (
                Audience::List {
                    default, except, ..
                },
                Some(name),
            ) => {
                let listed = except.binary_search(&folded(name)).is_ok();
                Some(*default != listed)
            }
        }
    }
}

/// One database as a listing shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub path: String,
    pub title: String,
}

/// What the catalog knows of one database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub title: String,
    pub instance: DbInstanceId,
    pub audience: Audience,
}

/// The catalog (see the module docs).
pub(crate) struct Catalog {
    backend: Arc<dyn Backend>,
    file_path: PathBuf,
    state: Mutex<State>,
    sync: Mutex<SyncState>,
    synced: Condvar,
}

struct State {
    entries: BTreeMap<String, Entry>,
    /// Databases with an ACL change under way (or unfinished at a crash).
    pending: BTreeSet<String>,
    file: Arc<dyn FileHandle>,
    /// Where the next record goes.
    end: u64,
    /// Rewrite once `end` passes this.
    rewrite_at: u64,
    /// Records appended so far (the sequence sync waits on).
    appended: u64,
    /// The first write or sync that failed: the catalog refuses ACL
    /// changes from then on (I11, I20) and is repaired at the next start.
    failed: Option<String>,
}

#[derive(Default)]
struct SyncState {
    synced: u64,
    syncing: bool,
}

/// What loading the file found.
pub(crate) struct Loaded {
    pub catalog: Catalog,
    /// Records past a bad one that was not a torn tail: nothing loaded
    /// can be trusted, every database must be read again.
    pub damaged: bool,
}

impl Catalog {
    /// Loads `<data>/catalog` (an absent file is an empty catalog). The
    /// file is not written until [`Catalog::rewrite`].
    pub fn load(backend: Arc<dyn Backend>, data_dir: &Path) -> NsfResult<Loaded> {
        let file_path = data_dir.join(CATALOG_FILE);
        let io = |e| NsfError::Io {
            path: file_path.display().to_string(),
            source: e,
        };
        let bytes = if backend.exists(&file_path) {
            read_file(backend.as_ref(), &file_path).map_err(io)?
        } else {
            Vec::new()
        };
        let (entries, pending, damaged) = replay(&bytes, &file_path);
        let file = backend
            .open(&file_path, OpenMode::CreateOrOpen)
            .map_err(io)?;
        let catalog = Catalog {
            backend,
            file_path,
            state: Mutex::new(State {
                entries,
                pending,
                file,
                end: 0,
                rewrite_at: 0,
                appended: 0,
                failed: None,
            }),
            sync: Mutex::default(),
            synced: Condvar::new(),
        };
        Ok(Loaded { catalog, damaged })
    }

    /// Forgets the entries whose file is not in `on_disk` and returns the
    /// databases that must be opened to be (re)recorded: those the catalog
    /// does not know and those with an unfinished ACL change (I20). With
    /// `damaged`, nothing loaded is kept and every database is returned.
    pub fn plan(&self, on_disk: &[DbPath], damaged: bool) -> Vec<DbPath> {
        let mut st = self.state.lock();
        if damaged {
            st.entries.clear();
            st.pending.clear();
        }
        let present: BTreeSet<&str> = on_disk.iter().map(DbPath::as_str).collect();
        st.entries.retain(|p, _| present.contains(p.as_str()));
        st.pending.retain(|p| present.contains(p.as_str()));
        on_disk
            .iter()
            .filter(|p| !st.entries.contains_key(p.as_str()) || st.pending.contains(p.as_str()))
            .cloned()
            .collect()
    }

    /// Records what a database is now, unless the catalog already says so
    /// (and no ACL change of it is unfinished). Not synced (module docs).
    pub fn note(&self, path: &str, entry: Entry) {
        let mut st = self.state.lock();
        if st.entries.get(path) == Some(&entry) && !st.pending.contains(path) {
            return;
        }
        let rec = encode_known(path, &entry);
        st.entries.insert(path.to_string(), entry);
        st.pending.remove(path);
        if let Err(e) = self.append(&mut st, &rec) {
            tracing::warn!(db = path, error = %e, "catalog record not written; the next start repairs it");
        }
    }

    /// Durably records that `path`'s ACL is about to change: the ACL
    /// commit may become durable only after this returns (I20).
    pub fn acl_changing(&self, path: &str) -> NsfResult<()> {
        let seq = {
            let mut st = self.state.lock();
            if let Some(reason) = &st.failed {
                return Err(self.failed_error(reason));
            }
            let rec = encode_acl_changing(path);
            st.pending.insert(path.to_string());
            self.append(&mut st, &rec)?;
            st.appended
        };
        self.sync_to(seq)
    }

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> NsfResult<()> {
        let seq = self.state.lock().appended;
        self.sync_to(seq)
    }

    /// Every database by path, with its title, that `admit` lets through,
    /// under `folder` (a path prefix) if given.
    pub fn list(&self, folder: Option<&str>, admit: &dyn Fn(&Audience) -> bool) -> Vec<Listed> {
        let st = self.state.lock();
        let from = folder.map_or(Bound::Unbounded, |f| Bound::Included(f.to_string()));
        st.entries
            .range((from, Bound::Unbounded))
            .take_while(|(p, _)| folder.is_none_or(|f| p.starts_with(f)))
            .filter(|(_, e)| admit(&e.audience))
            .map(|(p, e)| Listed {
                path: p.clone(),
                title: e.title.clone(),
            })
            .collect()
    }

    /// Forgets a database (its file could not be opened at start-up).
    pub fn forget(&self, path: &str) {
        let mut st = self.state.lock();
        st.entries.remove(path);
        st.pending.remove(path);
    }

    /// Writes the whole catalog to a new file that replaces the old one
    /// (I9), so it holds exactly what is in memory, unfinished ACL changes
    /// included.
    pub fn rewrite(&self) -> NsfResult<()> {
        let mut st = self.state.lock();
        self.rewrite_locked(&mut st)
    }

    fn rewrite_locked(&self, st: &mut State) -> NsfResult<()> {
        let mut out = Vec::with_capacity(FILE_HEADER + st.entries.len() * 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for (path, entry) in &st.entries {
            out.extend_from_slice(&encode_known(path, entry));
        }
        for path in &st.pending {
            out.extend_from_slice(&encode_acl_changing(path));
        }
        let io = |e| self.io_error(e);
        let written = write_file_atomic(self.backend.as_ref(), &self.file_path, &out)
            .and_then(|()| self.backend.open(&self.file_path, OpenMode::Existing));
        let file = match written {
            Ok(f) => f,
            Err(e) => {
                st.failed.get_or_insert_with(|| e.to_string());
                return Err(io(e));
            }
        };
        st.file = file;
        st.end = out.len() as u64;
        st.rewrite_at = st.end * GROWTH + REWRITE_FLOOR;
        st.failed = None;
        // Everything appended so far is in the synced new file.
        let mut sync = self.sync.lock();
        sync.synced = sync.synced.max(st.appended);
        self.synced.notify_all();
        Ok(())
    }

    /// Appends one record (no sync); rewrites the file instead when it has
    /// grown past its bound. A failure is sticky.
    fn append(&self, st: &mut State, rec: &[u8]) -> NsfResult<()> {
        if let Some(reason) = &st.failed {
            return Err(self.failed_error(reason));
        }
        st.appended += 1;
        if st.end + rec.len() as u64 > st.rewrite_at {
            return self.rewrite_locked(st);
        }
        match write_all_at(st.file.as_ref(), rec, st.end) {
            Ok(()) => {
                st.end += rec.len() as u64;
                Ok(())
            }
            Err(e) => {
                st.failed = Some(e.to_string());
                Err(self.io_error(e))
            }
        }
    }

    /// Waits until record `seq` is durable; concurrent callers share one
    /// fdatasync.
    fn sync_to(&self, seq: u64) -> NsfResult<()> {
        let mut sync = self.sync.lock();
        loop {
            if sync.synced >= seq {
                return Ok(());
            }
            if !sync.syncing {
                sync.syncing = true;
                drop(sync);
                let (file, upto) = {
                    let st = self.state.lock();
                    if let Some(reason) = &st.failed {
                        let e = self.failed_error(reason);
                        drop(st);
                        let mut sync = self.sync.lock();
                        sync.syncing = false;
                        self.synced.notify_all();
                        return Err(e);
                    }
                    (st.file.clone(), st.appended)
                };
                let r = file.sync_data();
                sync = self.sync.lock();
                sync.syncing = false;
                self.synced.notify_all();
                match r {
                    Ok(()) => sync.synced = sync.synced.max(upto),
                    Err(e) => {
                        drop(sync);
                        // I11: never retried.
                        self.state
                            .lock()
                            .failed
                            .get_or_insert_with(|| e.to_string());
                        return Err(self.io_error(e));
                    }
                }
                continue;
            }
            self.synced.wait(&mut sync);
        }
    }

    fn io_error(&self, e: std::io::Error) -> NsfError {
        NsfError::Io {
            path: self.file_path.display().to_string(),
            source: e,
        }
    }

    fn failed_error(&self, reason: &str) -> NsfError {
        NsfError::Invalid(format!(
            "{}: the database catalog has failed ({reason}); access-control lists cannot change until restart",
            self.file_path.display()
        ))
    }
}

/// Replays the records of a catalog file: entries, unfinished ACL changes,
/// and whether the file was damaged before its end (module docs).
fn replay(bytes: &[u8], path: &Path) -> (BTreeMap<String, Entry>, BTreeSet<String>, bool) {
    let mut entries = BTreeMap::new();
    let mut pending = BTreeSet::new();
    if bytes.is_empty() {
        return (entries, pending, false);
    }
    if bytes.len() < FILE_HEADER || &bytes[..8] != MAGIC || bytes[8..12] != VERSION.to_le_bytes() {
        tracing::warn!(file = %path.display(), "not a catalog of this version; every database is read again");
        return (entries, pending, true);
    }
    let mut at = FILE_HEADER;
    while at < bytes.len() {
        match next_record(&bytes[at..]) {
            Some((Record::Known(p, e), n)) => {
                pending.remove(&p);
                entries.insert(p, e);
                at += n;
            }
            Some((Record::AclChanging(p), n)) => {
                pending.insert(p);
                at += n;
            }
            None => {
                let damaged = !torn_tail(&bytes[at..]);
                if damaged {
                    tracing::warn!(file = %path.display(), offset = at, "catalog damaged; every database is read again");
                }
                return (entries, pending, damaged);
            }
        }
    }
    (entries, pending, false)
}

/// Whether a bad record is the torn end of the file: the last thing in
/// it (its length reaches the end, or there is not even a length), or
/// followed by nothing but zeros. Anything else is damage.
fn torn_tail(rest: &[u8]) -> bool {
    let reaches_end = match rest.get(0..4) {
        Some(len) => 8 + u32::from_le_bytes(len.try_into().unwrap()) as usize >= rest.len(),
        None => true,
    };
    reaches_end || rest.iter().all(|b| *b == 0)
}

enum Record {
    Known(String, Entry),
    AclChanging(String),
}

/// Decodes the record at the start of `b` and its length; `None` for a
/// torn, zeroed or corrupt one.
fn next_record(b: &[u8]) -> Option<(Record, usize)> {
    let len = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?);
    if len == 0 || len > MAX_RECORD {
        return None;
    }
    let body = b.get(8..8 + len)?;
    if crc32c::crc32c(body) != crc {
        return None;
    }
    let mut r = Reader(body);
    let kind = r.u8()?;
    let path = r.string()?;
    DbPath::parse(&path).ok()?;
    let rec = match kind {
        KIND_KNOWN => {
            let instance = DbInstanceId(r.u64()?);
            let title = r.string()?;
            let audience = match r.u8()? {
                0 => Audience::NoList,
                1 => Audience::Unreadable,
                2 => {
                    let flags = r.u8()?;
                    let n = r.u32()? as usize;
                    let mut except = Vec::with_capacity(n.min(1024));
                    for _ in 0..n {
                        except.push(r.string()?);
                    }
                    Audience::List {
                        default: flags & 1 != 0,
                        anonymous: flags & 2 != 0,
                        except: except.into(),
                    }
                }
                _ => return None,
            };
            Record::Known(
                path,
                Entry {
                    title,
                    instance,
                    audience,
                },
            )
        }
        KIND_ACL_CHANGING => Record::AclChanging(path),
        _ => return None,
    };
    r.0.is_empty().then_some((rec, 8 + len))
}

fn encode_known(path: &str, e: &Entry) -> Vec<u8> {
    let mut body = vec![KIND_KNOWN];
    put_str(&mut body, path);
    body.extend_from_slice(&e.instance.0.to_le_bytes());
    put_str(&mut body, &e.title);
    match &e.audience {
        Audience::NoList => body.push(0),
        Audience::Unreadable => body.push(1),
        Audience::List {
            default,
            anonymous,
            except,
        } => {
            body.push(2);
            body.push(u8::from(*default) | u8::from(*anonymous) << 1);
            body.extend_from_slice(&(except.len() as u32).to_le_bytes());
            for name in except.iter() {
                put_str(&mut body, name);
            }
        }
    }
    frame(body)
}

fn encode_acl_changing(path: &str) -> Vec<u8> {
    let mut body = vec![KIND_ACL_CHANGING];
    put_str(&mut body, path);
    frame(body)
}

/// Length, crc32c, body.
fn frame(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A length-prefixed (u16) UTF-8 string. Paths (240 bytes), titles (256)
/// and folded ACL names (at most three bytes per byte of a 255-byte name)
/// all fit.
fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (a, b) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().ok()?) as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

/// Every database file under `root` with a canonical path (I18), except
/// inside the directories of `skip` (the log's and its archive's).
pub(crate) fn walk(be: &dyn Backend, root: &Path, skip: &[PathBuf]) -> NsfResult<Vec<DbPath>> {
    let mut out = Vec::new();
    walk_dir(be, root, root, skip, &mut out)?;
    out.sort();
    Ok(out)
}

fn walk_dir(
    be: &dyn Backend,
    root: &Path,
    dir: &Path,
    skip: &[PathBuf],
    out: &mut Vec<DbPath>,
) -> NsfResult<()> {
    let entries = be.read_dir(dir).map_err(|e| NsfError::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    for p in entries {
        if skip.contains(&p) {
            continue;
        }
        if be.is_dir(&p) {
            walk_dir(be, root, &p, skip, out)?;
        } else if p.extension().is_some_and(|e| e == "fdb") {
            // A file whose name is not a canonical database path (made by
            // hand) cannot be opened, so it is not listed either (I18).
            let rel = p.strip_prefix(root).ok().and_then(|r| r.to_str());
            match rel.map(DbPath::parse) {
                Some(Ok(rel)) => out.push(rel),
                _ => tracing::warn!(file = %p.display(), "not a canonical database path; skipped"),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::AclEntry;
    use proptest::prelude::*;

    fn level(i: u8) -> AccessLevel {
        AccessLevel::ALL[usize::from(i) % AccessLevel::ALL.len()]
    }

    fn entry(title: &str, audience: Audience) -> Entry {
        Entry {
            title: title.into(),
            instance: DbInstanceId(7),
            audience,
        }
    }

    proptest! {
        /// The audience answers exactly what the list grants, for every
        /// caller, named in the list (in any case) or not.
        #[test]
        fn audience_agrees_with_the_list(
            default in any::<u8>(),
            anonymous in any::<u8>(),
            levels in proptest::collection::vec(any::<u8>(), 0..6),
            probe in 0usize..10,
        ) {
            let names = ["alice", "Bob", "ÉMILE", "dave", "eve", "frank"];
            let acl = Acl {
                default: level(default),
                anonymous: level(anonymous),
                roles: Vec::new(),
                entries: levels
                    .iter()
                    .zip(names)
                    .map(|(l, n)| AclEntry::new(n, level(*l)))
                    .collect(),
            };
            let audience = Audience::of(&Ok(Some(acl.clone())));
            let callers = [None, Some("ALICE"), Some("bob"), Some("émile"), Some("Dave"),
                Some("EVE"), Some("frank"), Some("zed"), Some("Émile"), Some("al")];
            let who = callers[probe];
            let granted = acl.access(who).level() > AccessLevel::NoAccess;
            prop_assert_eq!(audience.admits(who), Some(granted));
        }
    }

    #[test]
    fn no_list_and_unreadable_lists_admit_by_policy_only() {
        assert_eq!(Audience::of(&Ok(None)).admits(Some("a")), None);
        let bad = Err(NsfError::Invalid("x".into()));
        assert_eq!(Audience::of(&bad), Audience::Unreadable);
        assert_eq!(Audience::Unreadable.admits(None), None);
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_not_damage() {
        let audience = Audience::of(&Ok(Some(Acl::for_creator(Some("Ann")))));
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&VERSION.to_le_bytes());
        file.extend_from_slice(&[0; 4]);
        file.extend(encode_known("a.fdb", &entry("A", audience.clone())));
        file.extend(encode_acl_changing("a.fdb"));
        file.extend(encode_known("m/b.fdb", &entry("B", Audience::NoList)));
        file.extend(encode_acl_changing("m/c.fdb"));
        let whole = file.len();
        file.extend(encode_known("z.fdb", &entry("Z", Audience::Unreadable)));
        let (entries, pending, damaged) = replay(&file, Path::new("c"));
        assert!(!damaged);
        assert_eq!(entries.len(), 3);
        assert_eq!(entries["a.fdb"], entry("A", audience));
        assert_eq!(
            pending.iter().collect::<Vec<_>>(),
            ["a.fdb", "m/c.fdb"],
            "an intent stays unfinished until a later record of its database"
        );
        for cut in whole + 1..file.len() {
            let (entries, _, damaged) = replay(&file[..cut], Path::new("c"));
            assert!(!damaged && entries.len() == 2, "torn at {cut}");
        }
        let mut zeroed = file.clone();
        zeroed[whole..].fill(0);
        assert!(!replay(&zeroed, Path::new("c")).2, "zeros are a torn tail");
        let mut rotten = file.clone();
        rotten[FILE_HEADER + 12] ^= 1;
        let (entries, _, damaged) = replay(&rotten, Path::new("c"));
        assert!(
            damaged && entries.is_empty(),
            "damage in the middle is seen"
        );
    }
}
