//! Opening a data directory from the command line: exclusive lock, settings,
//! engine (which runs restart recovery).
//!
//! Two processes writing one data directory would each believe they own
//! the log; the lock file makes the second one fail with a clear message
//! instead.

use crate::config;
use nsf::{Engine, EngineConfig};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use storage::backend::FsBackend;
use translog::RecoveryReport;

/// An engine plus the lock that makes it the only one on its directory.
pub struct OpenDataDir {
    pub engine: Engine,
    pub views: views::Views,
    pub recovery: Option<RecoveryReport>,
    _lock: File,
}

impl OpenDataDir {
    /// The engine, the views and the directory lock, for a caller that
    /// hands the engine to the server and closes it afterwards (the lock
    /// must outlive the engine).
    pub fn into_parts(self) -> (Engine, views::Views, File) {
        (self.engine, self.views, self._lock)
    }
}

/// Reads the settings for `data_dir` (from `config_path` or
/// `<data>/folio.toml`).
pub fn settings(
    data_dir: &Path,
    config_path: Option<&Path>,
) -> Result<(EngineConfig, views::ViewConfig), String> {
    let file = config::load(data_dir, config_path)?;
    Ok((file.engine_config(data_dir)?, file.view_config()?))
}

/// Locks and opens `data_dir`, creating it if needed.
pub fn open(
    data_dir: &Path,
    (cfg, view_cfg): (EngineConfig, views::ViewConfig),
) -> Result<OpenDataDir, String> {
    std::fs::create_dir_all(data_dir)
        .map_err(|e| format!("cannot create data directory {}: {e}", data_dir.display()))?;
    let lock_path = data_dir.join("folio.lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    lock.try_lock().map_err(|_| {
        format!(
            "data directory {} is in use by another Folio process",
            data_dir.display()
        )
    })?;
    let (engine, recovery) = Engine::open(Arc::new(FsBackend), cfg).map_err(|e| e.to_string())?;
    let views = views::Views::new(engine.backend(), view_cfg);
    Ok(OpenDataDir {
        engine,
        views,
        recovery,
        _lock: lock,
    })
}
