//! The engine's doors to online backup and restore (design.md §3.6): what
//! they need of the engine (the log, the open-database cache, the retired
//! list) is gathered here; the work is in `crate::backup`.

use super::backup_history::{BackupRun, RunClock, RunKind};
use super::{close_if_idle, Engine, Lookup};
use crate::backup::{check_until, restore_one, take_backup, RestoreCtx, TakeCtx, MANIFEST_FILE};
use crate::dbpath::DbPath;
use crate::store::STORE_DIR;
use crate::Database;
use crate::{BackupManifest, BackupReport, NsfError, NsfResult, RestoreOptions, RestoreReport};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use translog::{LogStyle, TransLog};

impl Engine {
    /// Online backup (I35) of `dbs` (every database when empty) into
    /// `dest`, a directory that must not already hold a backup. Writers go
    /// on meanwhile: no writer lock is taken. Needs archive style, so the
    /// log range the copies need stays until archived (I31); the completed
    /// extents are archived before it returns. Durable when it returns:
    /// every copy is fdatasynced and `manifest.json`, written last and
    /// atomically (I9) once everything it names is durable (I49),
    /// completes the backup. Bad requests (unlogged,
    /// another style, a bad path, a database that refuses writes) are
    /// errors that write nothing in the data directory.
    /// A run that got past those checks is added to the backup history
    /// (I64), failed or not.
    pub fn backup(&self, dest: &Path, dbs: &[String]) -> NsfResult<BackupReport> {
        self.check_open()?;
        let clock = RunClock::start(self.shared.cfg.clock.now());
        let s = &*self.shared;
        let log = self.archive_style_log("back up")?;
        let paths = if dbs.is_empty() {
            self.list_databases()?
        } else {
            dbs.to_vec()
        };
        let mut keys: Vec<DbPath> = Vec::new();
        for p in &paths {
            let key = DbPath::parse(p)?;
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(NsfError::Invalid("there is no database to back up".into()));
        }
        // Refused before the run starts, so it is not a run of the history.
        if s.backend.exists(&dest.join(MANIFEST_FILE)) {
            return Err(NsfError::Invalid(format!(
                "{} already holds a backup; choose an empty directory",
                dest.display()
            )));
        }
        let opened = keys
            .iter()
            .map(|k| self.open_database(k.as_str()))
            .collect::<NsfResult<Vec<_>>>()?;
        let start = self
            .checkpoint()?
            .ok_or_else(|| NsfError::Invalid("the transaction log is disabled".into()))?;
        let archived = std::cell::Cell::new((0u64, 0u64));
        let archive = || {
            self.archive_unrecorded(None).map(|a| {
                let (extents, bytes) = archived.get();
                archived.set((extents + a.extents_copied, bytes + a.bytes_copied));
            })
        };
        let objects = |root: &Path| -> NsfResult<()> {
            let mut hashes = Vec::new();
            for db in &opened {
                hashes.extend(db.store_references()?.into_iter().map(|(h, _)| h));
            }
            hashes.sort();
            hashes.dedup();
            s.store.copy_objects_to(&hashes, root).map(|_| ())
        };
        let ctx = TakeCtx {
            backend: s.backend.clone(),
            log,
            log_dir: self.log_dir()?,
            archive_dir: self.archive_dir(None)?,
            dbs: opened.clone(),
            start,
            archive: &archive,
            objects: &objects,
        };
        let copied: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let report = take_backup(&ctx, dest);
        // I64: recorded once the manifest is durable (or the run failed).
        let run = clock.finish(
            RunKind::Backup,
            dest.display().to_string(),
            &report,
            |r, run| {
                run.dir = r.dest.display().to_string();
                run.bytes = r.bytes_copied;
                run.start_lsn = Some(r.manifest.start_lsn);
                run.end_lsn = Some(r.manifest.end_lsn);
                run.extents = archived.get().0;
            },
        );
        self.record_run(BackupRun {
            databases: copied.clone(),
            ..run
        });
        let report = report?;
        s.fixup_log.lock().backed_up(&copied);
        Ok(report)
    }

    /// Restores databases from the backup in `backup` and rolls them
    /// forward with the archived and live log (I36), to the end of the log
    /// or to the last commit at or before `opts.until`. Each target must
    /// not be open (embedded use, with the server stopped). Durable when
    /// it returns: each restored file is synced, renamed into place and
    /// its directory synced. A restore that cannot reach the requested
    /// point (missing extent, instance mismatch, `until` before the
    /// backup's end) fails with a typed error and leaves the target as it
    /// was (at most a stale `NAME-restore` file beside it).
    pub fn restore(&self, backup: &Path, opts: &RestoreOptions) -> NsfResult<Vec<RestoreReport>> {
        self.check_open()?;
        let s = &*self.shared;
        self.logged_log("restore")?;
        let manifest = BackupManifest::load(s.backend.as_ref(), backup)?;
        let chosen: Vec<_> = match &opts.db {
            Some(db) => {
                let key = DbPath::parse(db)?;
                let found = manifest
                    .databases
                    .iter()
                    .find(|d| d.path == key.as_str())
                    .ok_or_else(|| NsfError::BadBackup {
                        dir: backup.display().to_string(),
                        reason: format!("it holds no copy of {key}"),
                    })?;
                vec![found.clone()]
            }
            None => manifest.databases.clone(),
        };
        if opts.to.is_some() && chosen.len() != 1 {
            return Err(NsfError::Invalid(format!(
                "--to restores one database; this backup holds {}: name one with --db",
                chosen.len()
            )));
        }
        let log_dir = self.log_dir()?;
        let archive_dir = self.archive_dir(opts.archive_dir.as_deref())?;
        let ctx = RestoreCtx {
            backend: &s.backend,
            data_dir: &s.cfg.data_dir,
            log_dir: &log_dir,
            archive_dir: &archive_dir,
            retired: &s.retired,
            backup,
            manifest: &manifest,
            until: opts.until,
        };
        // A time before the backup is refused (for all of its databases
        // alike) before any is touched.
        if let Some(first) = chosen.first() {
            check_until(&ctx, &first.path)?;
        }
        let mut reports = Vec::new();
        for entry in &chosen {
            let target = DbPath::parse(opts.to.as_deref().unwrap_or(&entry.path))?;
            self.outside_log(&target)?;
            if opts.to.is_some() && s.backend.exists(&self.full_path(target.as_str())) {
                return Err(NsfError::DatabaseExists(target.to_string()));
            }
            close_if_idle(s, &target)?;
            let claim = match self.lookup(&target) {
                Lookup::Open(..) => {
                    return Err(NsfError::Invalid(format!(
                        "{target} is open; restore needs the database closed (stop the server and run `folio restore` on its data directory)"
                    )))
                }
                Lookup::Claimed(claim) => claim,
            };
            let report = restore_one(&ctx, entry, target.as_str());
            drop(claim);
            let mut report = report?;
            // I20: opening the restored file records its new identity.
            let db = self.open_database(&report.path)?;
            report.objects_missing = self.restore_objects(&db, backup, &archive_dir)?;
            reports.push(report);
        }
        Ok(reports)
    }

    /// Brings back the attachment store objects a restored database
    /// references and the store lacks, from the backup, else from the
    /// archive (§3.6); returns those found nowhere.
    fn restore_objects(
        &self,
        db: &Database,
        backup: &Path,
        archive_dir: &Path,
    ) -> NsfResult<Vec<String>> {
        let s = &*self.shared;
        let hashes: Vec<_> = db.store_references()?.into_iter().map(|(h, _)| h).collect();
        let roots = [
            backup.join(STORE_DIR),
            s.cfg.data_dir.join(archive_dir).join(STORE_DIR),
        ];
        let missing = s.store.fetch_objects(&hashes, &roots, db.path())?;
        for h in &missing {
            tracing::error!(db = %db.path(), object = %h, "restore: an attachment's content is in neither the store, the backup nor the archive");
        }
        Ok(missing.iter().map(|h| h.to_hex()).collect())
    }

    fn logged_log(&self, what: &str) -> NsfResult<&Arc<TransLog>> {
        self.shared.log.as_ref().ok_or_else(|| {
            NsfError::Invalid(format!(
                "cannot {what}: the transaction log is disabled (translog.enabled = false)"
            ))
        })
    }

    fn archive_style_log(&self, what: &str) -> NsfResult<&TransLog> {
        let log = self.logged_log(what)?;
        if log.info().style != LogStyle::Archive {
            return Err(NsfError::Invalid(format!(
                "cannot {what} online: the log range that makes the copy consistent must be kept \
                 until archived, which needs translog.style = \"archive\""
            )));
        }
        Ok(log)
    }

    fn log_dir(&self) -> NsfResult<PathBuf> {
        let s = &*self.shared;
        let lc = s
            .cfg
            .log
            .as_ref()
            .ok_or_else(|| NsfError::Invalid("the transaction log is disabled".into()))?;
        Ok(s.cfg.data_dir.join(&lc.dir))
    }

    fn archive_dir(&self, given: Option<&Path>) -> NsfResult<PathBuf> {
        let configured = self
            .shared
            .cfg
            .log
            .as_ref()
            .and_then(|l| l.archive_dir.clone());
        given.map(Path::to_path_buf).or(configured).ok_or_else(|| {
            NsfError::Invalid(
                "no archive directory: give one (--archive-dir DIR) or set translog.archive_dir"
                    .into(),
            )
        })
    }
}
