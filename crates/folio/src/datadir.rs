//! Opening a data directory from the command line: exclusive lock, settings,
//! engine (which runs restart recovery).
//!
//! Two processes writing one data directory would each believe they own
//! the log; the lock file makes the second one fail with a clear message
//! instead.

use crate::config::{self, FileConfig};
use crate::error::{FolioError, FolioResult};
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
) -> FolioResult<(EngineConfig, views::ViewConfig)> {
    let file = config::load(data_dir, config_path).map_err(FolioError::Settings)?;
    settings_of(&file, data_dir)
}

/// The engine's and the views' settings in `file`, validated.
pub fn settings_of(
    file: &FileConfig,
    data_dir: &Path,
) -> FolioResult<(EngineConfig, views::ViewConfig)> {
    let engine = file.engine_config(data_dir).map_err(FolioError::Settings)?;
    let views = file.view_config().map_err(FolioError::Settings)?;
    Ok((engine, views))
}

/// Locks and opens `data_dir`, creating it if needed.
pub fn open(
    data_dir: &Path,
    (cfg, view_cfg): (EngineConfig, views::ViewConfig),
) -> FolioResult<OpenDataDir> {
    std::fs::create_dir_all(data_dir).map_err(|e| {
        FolioError::io(
            format!("cannot create data directory {}", data_dir.display()),
            e,
        )
    })?;
    let lock_path = data_dir.join("folio.lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| FolioError::io(format!("cannot open {}", lock_path.display()), e))?;
    lock.try_lock().map_err(|e| match e {
        std::fs::TryLockError::WouldBlock => FolioError::DataDirectoryInUse(data_dir.to_path_buf()),
        std::fs::TryLockError::Error(e) => {
            FolioError::io(format!("cannot lock {}", lock_path.display()), e)
        }
    })?;
    let (engine, recovery) = Engine::open(Arc::new(FsBackend), cfg)?;
    let views = views::Views::new(engine.backend(), view_cfg);
    Ok(OpenDataDir {
        engine,
        views,
        recovery,
        _lock: lock,
    })
}
