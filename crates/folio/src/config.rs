//! `folio.toml`: every engine setting, with unknown keys rejected.
//!
//! A misspelt setting that is silently ignored is a durability bug waiting
//! to happen (`translog.enabeld = true`), so parsing is strict: unknown keys
//! and bad values are startup errors naming the key. Sizes are written as
//! integers (bytes) or strings with a unit (`"64MiB"`, `"1GiB"`).

use nsf::EngineConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use translog::{LogConfig, LogStyle, Tuning};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub buffer_pool_size: Option<Size>,
    /// Seconds between background flush/checkpoint passes.
    pub flush_interval_secs: Option<f64>,
    /// Where view rebuilds put temporary sort files (default: the system
    /// temporary directory).
    pub view_rebuild_dir: Option<PathBuf>,
    /// Memory one view rebuild may use for sorting.
    pub view_rebuild_memory: Option<Size>,
    #[serde(default)]
    pub translog: TranslogSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslogSection {
    pub enabled: Option<bool>,
    pub dir: Option<PathBuf>,
    pub style: Option<String>,
    pub tuning: Option<String>,
    pub extent_size: Option<Size>,
    pub max_size: Option<Size>,
    /// Milliseconds a commit waits for space when the log is full before
    /// failing with "log full".
    pub full_wait_ms: Option<u64>,
}

/// A byte size: an integer, or a string such as "512MiB".
#[derive(Debug, Clone, Copy)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Size(n)),
            Raw::S(s) => parse_size(&s).map(Size).map_err(serde::de::Error::custom),
        }
    }
}

/// Parses "123", "64KiB", "64MiB", "1GiB", "10MB", "2GB".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("invalid size {s:?}: expected a number with an optional unit such as 64MiB")
    })?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "invalid size {s:?}: unknown unit {u:?} (use B, KiB, MiB, GiB, KB, MB or GB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("invalid size {s:?}: too large"))
}

fn setting(key: &str, reason: impl Into<String>) -> String {
    format!("invalid setting {key}: {}", reason.into())
}

/// Reads `path` (if given) or `<data>/folio.toml` (if present).
pub fn load(data_dir: &Path, explicit: Option<&Path>) -> Result<FileConfig, String> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = data_dir.join("folio.toml");
            if !p.exists() {
                return Ok(FileConfig::default());
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|e| e.message().to_string())
}

impl FileConfig {
    /// The views layer's settings, validated.
    pub fn view_config(&self) -> Result<views::ViewConfig, String> {
        let mut v = views::ViewConfig::default();
        if let Some(d) = &self.view_rebuild_dir {
            v.rebuild_dir = d.clone();
        }
        if let Some(Size(n)) = self.view_rebuild_memory {
            if n < 1 << 20 {
                return Err(setting("view_rebuild_memory", "must be at least 1MiB"));
            }
            v.rebuild_memory =
                usize::try_from(n).map_err(|_| setting("view_rebuild_memory", "too large"))?;
        }
        Ok(v)
    }

    /// Turns the file into engine settings, validating every value.
    pub fn engine_config(&self, data_dir: &Path) -> Result<EngineConfig, String> {
        let mut cfg = EngineConfig::new(data_dir);
        if let Some(Size(n)) = self.buffer_pool_size {
            if n < 1 << 20 {
                return Err(setting("buffer_pool_size", "must be at least 1MiB"));
            }
            cfg.buffer_pool_size =
                usize::try_from(n).map_err(|_| setting("buffer_pool_size", "too large"))?;
        }
        if let Some(s) = self.flush_interval_secs {
            if !(0.01..=3600.0).contains(&s) {
                return Err(setting(
                    "flush_interval_secs",
                    "must be between 0.01 and 3600",
                ));
            }
            cfg.flush_interval = Duration::from_secs_f64(s);
        }
        cfg.log = self.translog.log_config(data_dir)?;
        Ok(cfg)
    }
}

impl TranslogSection {
    fn log_config(&self, data_dir: &Path) -> Result<Option<LogConfig>, String> {
        if self.enabled == Some(false) {
            return Ok(None);
        }
        let dir = match &self.dir {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => data_dir.join(d),
            None => data_dir.join("translog"),
        };
        let mut lc = LogConfig::new(dir);
        if let Some(s) = &self.style {
            lc.style = match s.as_str() {
                "circular" => LogStyle::Circular,
                "linear" => LogStyle::Linear,
                other => {
                    return Err(setting(
                        "translog.style",
                        format!("{other:?} is not one of circular, linear"),
                    ))
                }
            };
        }
        if let Some(t) = &self.tuning {
            lc.tuning = match t.as_str() {
                "runtime" => Tuning::Runtime,
                "standard" => Tuning::Standard,
                "restart" => Tuning::Restart,
                other => {
                    return Err(setting(
                        "translog.tuning",
                        format!("{other:?} is not one of runtime, standard, restart"),
                    ))
                }
            };
        }
        if let Some(Size(n)) = self.extent_size {
            lc.extent_size = n;
        }
        if let Some(Size(n)) = self.max_size {
            lc.max_size = n;
        }
        if let Some(ms) = self.full_wait_ms {
            lc.full_wait = Duration::from_millis(ms);
        }
        lc.validate()
            .map_err(|e| setting("translog", e.to_string()))?;
        Ok(Some(lc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let e = parse("buffer_pool_sise = 5").unwrap_err();
        assert!(e.contains("buffer_pool_sise"), "{e}");
        let e = parse("[translog]\nenabeld = true").unwrap_err();
        assert!(e.contains("enabeld"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let c = parse("[translog]\nstyle = \"spiral\"").unwrap();
        let e = c.engine_config(Path::new("/d")).unwrap_err();
        assert!(e.contains("translog.style") && e.contains("spiral"), "{e}");
        let e = parse("buffer_pool_size = \"12 parsecs\"").unwrap_err();
        assert!(e.contains("unknown unit"), "{e}");
    }

    #[test]
    fn sizes_and_defaults() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        let c = parse(
            "buffer_pool_size = \"64MiB\"\n[translog]\ntuning = \"restart\"\nmax_size = \"256MiB\"",
        )
        .unwrap();
        let e = c.engine_config(Path::new("/d")).unwrap();
        assert_eq!(e.buffer_pool_size, 64 << 20);
        let lc = e.log.unwrap();
        assert_eq!(lc.max_size, 256 << 20);
        assert_eq!(lc.dir, Path::new("/d/translog"));
        let off = parse("[translog]\nenabled = false")
            .unwrap()
            .engine_config(Path::new("/d"))
            .unwrap();
        assert!(off.log.is_none());
    }

    #[test]
    fn view_settings() {
        let c = parse("view_rebuild_dir = \"/fast\"\nview_rebuild_memory = \"16MiB\"").unwrap();
        let v = c.view_config().unwrap();
        assert_eq!(
            (v.rebuild_dir.as_path(), v.rebuild_memory),
            (Path::new("/fast"), 16 << 20)
        );
        let e = parse("view_rebuild_memory = 1000")
            .unwrap()
            .view_config()
            .unwrap_err();
        assert!(e.contains("view_rebuild_memory"), "{e}");
        assert!(parse("view_rebuild_dri = \"/x\"")
            .unwrap_err()
            .contains("view_rebuild_dri"));
    }
}
