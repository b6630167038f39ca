//! Shared by the engine's integration tests.

use nsf::EngineConfig;
use std::path::Path;
use translog::LogConfig;

/// An engine on `/data` with a small buffer pool, no background threads
/// and, if `logged`, a small transaction log.
pub fn config(logged: bool) -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    if logged {
        let mut lc = LogConfig::new(Path::new("/data/translog"));
        lc.extent_size = 256 << 10;
        lc.max_size = 4 << 20;
        cfg.log = Some(lc);
    }
    cfg
}
