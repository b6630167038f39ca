//! The databases the mail system makes (the directory `names.fdb`, the
//! mail boxes, mail files): made with their design and access-control
//! list, and completed when a crash cut the making short.
//!
//! They are ordinary databases, so they are logged, replicable and
//! readable through views like any other. Making one is three durable
//! steps (the file, its ACL, each view) that a crash can separate, so
//! "made" is not a flag: every first open in a process completes what is
//! missing (an ACL if the file has none, a view the design has and the
//! file lacks), and only then is the database handed out. The ACL comes
//! first, so a file cut short is never open to more callers than the
//! finished one. A view or ACL a Manager changed since is left as it is.
//!
//! ```text
//!   open_or_create: open ──NoSuchDatabase──▶ create ──DatabaseExists (a racing create)──▶ open
//!   create_new:     create (a file already there is an error)
//!   open_existing:  open (a missing file is an error)
//!        └── then, on first use in this instance (per-instance lock): set the ACL
//!            if there is none, create missing views; later uses skip this
//! ```

use crate::MailResult;
use nsf::{Acl, Database, Engine, NsfError};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use views::{ViewDef, Views};

/// What a database the mail system makes is made of.
pub(crate) struct SystemDb {
    pub path: String,
    pub title: String,
    pub design: fn() -> Vec<ViewDef>,
    pub acl: Acl,
}

/// Whether this instance of the database was completed (kept with the
/// instance, so a database the cache closed is checked again).
#[derive(Default)]
struct Completed {
    lock: Mutex<()>,
    done: AtomicBool,
}

/// Opens the database, making it first if there is none.
pub(crate) fn open_or_create(
    engine: &Engine,
    views: &Views,
    spec: &SystemDb,
) -> MailResult<Arc<Database>> {
    let db = match engine.open_database(&spec.path) {
        Ok(db) => db,
        Err(NsfError::NoSuchDatabase(_)) => match engine.create_database(&spec.path, &spec.title) {
            Ok(db) => db,
            Err(NsfError::DatabaseExists(_)) => engine.open_database(&spec.path)?,
            Err(e) => return Err(e.into()),
        },
        Err(e) => return Err(e.into()),
    };
    completed(views, db, spec)
}

/// Makes the database; one already at its path is `DatabaseExists`.
pub(crate) fn create_new(
    engine: &Engine,
    views: &Views,
    spec: &SystemDb,
) -> MailResult<Arc<Database>> {
    let db = engine.create_database(&spec.path, &spec.title)?;
    completed(views, db, spec)
}

/// Opens the database; a missing one is `NoSuchDatabase`.
pub(crate) fn open_existing(
    engine: &Engine,
    views: &Views,
    spec: &SystemDb,
) -> MailResult<Arc<Database>> {
    completed(views, engine.open_database(&spec.path)?, spec)
}

/// `db`, once what a crash may have left out of it is there.
fn completed(views: &Views, db: Arc<Database>, spec: &SystemDb) -> MailResult<Arc<Database>> {
    let completed = db.extension(Completed::default);
    if !completed.done.load(Ordering::Acquire) {
        let _one_at_a_time = completed.lock.lock();
        if !completed.done.load(Ordering::Acquire) {
            complete(views, &db, spec)?;
            completed.done.store(true, Ordering::Release);
        }
    }
    Ok(db)
}

/// Sets the ACL if there is none and creates the views the file lacks.
fn complete(views: &Views, db: &Arc<Database>, spec: &SystemDb) -> MailResult<()> {
    if db.acl()?.is_none() {
        db.set_acl(&spec.acl)?;
    }
    let have = views.names(db)?;
    for def in (spec.design)() {
        if !have.contains(&def.name.to_lowercase()) {
            views.create(db, def)?;
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing {
    //! An engine on memory for the crate's tests.
    use nsf::{Engine, EngineConfig};
    use std::sync::Arc;
    use storage::backend::MemBackend;
    use views::{ViewConfig, Views};

    pub fn engine() -> (Engine, Views) {
        let mut cfg = EngineConfig::new("/data");
        cfg.buffer_pool_size = 4 << 20;
        cfg.background = false;
        let backend = Arc::new(MemBackend::new());
        let (engine, _) = Engine::open(backend.clone(), cfg).unwrap();
        let views = Views::new(
            backend,
            ViewConfig {
                rebuild_dir: "/sort".into(),
                rebuild_memory: 1 << 20,
            },
        );
        (engine, views)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::AccessLevel;
    use views::ColumnDef;

    fn spec() -> SystemDb {
        SystemDb {
            path: "sys.fdb".into(),
            title: "System".into(),
            design: || {
                vec![ViewDef::view(
                    "All",
                    "SELECT @All",
                    vec![ColumnDef::parse("S=Subject").unwrap()],
                )]
            },
            acl: Acl {
                default: AccessLevel::Reader,
                ..Acl::for_creator(None)
            },
        }
    }

    #[test]
    fn a_system_database_is_made_once_and_completed_after_a_partial_make() {
        let (engine, views) = testing::engine();
        let db = open_or_create(&engine, &views, &spec()).unwrap();
        assert_eq!(db.acl().unwrap().unwrap().default, AccessLevel::Reader);
        assert_eq!(views.list(&db).unwrap().len(), 1);
        // Opening again changes nothing.
        let seq = db.last_seq();
        drop(db);
        let db = open_or_create(&engine, &views, &spec()).unwrap();
        assert_eq!(db.last_seq(), seq);
        drop(db);

        // A file a crash left without its design or ACL is completed.
        let partial = SystemDb {
            path: "partial.fdb".into(),
            ..spec()
        };
        drop(
            engine
                .create_database("partial.fdb", "left by a crash")
                .unwrap(),
        );
        let db = open_existing(&engine, &views, &partial).unwrap();
        assert_eq!(views.list(&db).unwrap().len(), 1);
        assert!(db.acl().unwrap().is_some());
        drop(db);
        assert!(matches!(
            create_new(&engine, &views, &partial),
            Err(crate::MailError::Nsf(NsfError::DatabaseExists(_)))
        ));
        assert!(matches!(
            open_existing(
                &engine,
                &views,
                &SystemDb {
                    path: "none.fdb".into(),
                    ..spec()
                }
            ),
            Err(crate::MailError::Nsf(NsfError::NoSuchDatabase(_)))
        ));
    }
}
