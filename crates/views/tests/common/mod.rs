//! What the crash tests of the views layer share: an engine with a small
//! log over a simulated disk, and the views layer beside it.

use nsf::{Engine, EngineConfig};
use std::path::Path;
use std::sync::Arc;
use storage::Backend;
use translog::LogConfig;
use views::{ViewConfig, Views};

/// An engine on `backend` with the log on (small extents) and a 4 MiB
/// pool, its configuration adjusted by `tune`, and a views layer.
pub fn open_logged(
    backend: Arc<dyn Backend>,
    tune: impl FnOnce(&mut EngineConfig),
) -> (Engine, Views) {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 256 << 10;
    lc.max_size = 8 << 20;
    cfg.log = Some(lc);
    tune(&mut cfg);
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
