//! Log configuration: what an administrator sets, checked before anything
//! touches the disk.
//!
//! Two settings decide everything about space: `extent_size` (the unit of
//! allocation and recycling) and `max_size` (how many extents may be in use
//! at once). `tuning` decides how much log may lie between checkpoints,
//! which trades runtime speed (fewer flushes) against restart time (more
//! log to replay). The numbers are fixed here and documented on [`Tuning`]
//! so that restart time is predictable from the configuration alone.

use crate::LogError;
use std::path::PathBuf;
use std::time::Duration;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// Smallest extent allowed (tests use it; production uses the default).
pub const MIN_EXTENT_SIZE: u64 = 64 * KIB;
/// Largest extent allowed: keeps recovery's read windows and a single
/// extent's preparation cost bounded.
pub const MAX_EXTENT_SIZE: u64 = GIB;
/// Default extent size.
pub const DEFAULT_EXTENT_SIZE: u64 = 64 * MIB;
/// Default `max_size`.
pub const DEFAULT_MAX_SIZE: u64 = 192 * MIB;
/// Largest `max_size` for [`LogStyle::Circular`].
pub const CIRCULAR_MAX_SIZE: u64 = 4 * GIB;
/// Largest `max_size` for [`LogStyle::Linear`].
pub const LINEAR_MAX_SIZE: u64 = 1024 * GIB;
/// Longest `full_wait` accepted: a full log must fail fast, never hang.
pub const MAX_FULL_WAIT: Duration = Duration::from_secs(600);
/// Extent sizes are multiples of this (the extent header's size).
const EXTENT_ALIGN: u64 = 4096;

/// How extents are reused. Every style recycles only extents lying wholly
/// below the redo LSN of the last checkpoint, so the log never holds more
/// than `max_size`; circular and linear differ in how large `max_size` may
/// be, and archive also keeps every extent until it is archived (I31).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogStyle {
    /// `max_size` up to [`CIRCULAR_MAX_SIZE`] (4 GiB).
    #[default]
    Circular,
    /// `max_size` up to [`LINEAR_MAX_SIZE`] (1 TiB), for logs that must
    /// hold more than 4 GiB between checkpoints.
    Linear,
    /// As linear, and an extent is reused only once [`crate::TransLog::archive`]
    /// has copied and verified it (I31). Without archiving the log fills,
    /// and appends fail at once with [`LogError::ArchiveNeeded`].
    Archive,
}

impl LogStyle {
    /// The setting's spelling: `circular`, `linear`, `archive`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogStyle::Circular => "circular",
            LogStyle::Linear => "linear",
            LogStyle::Archive => "archive",
        }
    }
}

/// How much log may accumulate since the last checkpoint's redo LSN before
/// [`crate::TransLog::checkpoint_wanted`] asks for a checkpoint. Capacity
/// is `max_size / extent_size` extents of `extent_size - 4096` bytes each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tuning {
    /// 50% of capacity: fewest flushes, longest restart.
    Runtime,
    /// 25% of capacity.
    #[default]
    Standard,
    /// The smaller of 5% of capacity and 32 MiB: restart replays at most
    /// that much log.
    Restart,
}

impl Tuning {
    /// Bytes of log since the redo LSN that trigger a checkpoint request.
    pub(crate) fn checkpoint_threshold(self, capacity: u64) -> u64 {
        match self {
            Tuning::Runtime => capacity / 2,
            Tuning::Standard => capacity / 4,
            Tuning::Restart => (capacity / 20).min(32 * MIB),
        }
    }
}

/// Configuration of the server-wide transaction log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// Directory holding `control` and the extent files.
    pub dir: PathBuf,
    /// Size of every extent file in bytes (default 64 MiB).
    pub extent_size: u64,
    /// Upper bound on the extents in use, in bytes (default 192 MiB).
    pub max_size: u64,
    pub style: LogStyle,
    pub tuning: Tuning,
    /// How long `append` waits for a checkpoint to free space before it
    /// fails with [`LogError::Full`] (default 2 s).
    pub full_wait: Duration,
    /// Where [`crate::TransLog::archive`] copies extents when not given a
    /// directory (archive style; `None`: it must be given one).
    pub archive_dir: Option<PathBuf>,
}

impl LogConfig {
    /// The defaults, with the log in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LogConfig {
            dir: dir.into(),
            extent_size: DEFAULT_EXTENT_SIZE,
            max_size: DEFAULT_MAX_SIZE,
            style: LogStyle::default(),
            tuning: Tuning::default(),
            full_wait: Duration::from_secs(2),
            archive_dir: None,
        }
    }

    /// Checks every value; the error names the setting and the limit.
    pub fn validate(&self) -> Result<(), LogError> {
        self.check_extent_size()?;
        self.check_max_size()?;
        if self.full_wait > MAX_FULL_WAIT {
            return Err(config(format!(
                "full_wait {:?} exceeds {MAX_FULL_WAIT:?}; a full log must fail fast",
                self.full_wait
            )));
        }
        Ok(())
    }

    /// Most extents that may be in use at once.
    pub(crate) fn max_extents(&self) -> u64 {
        self.max_size / self.extent_size
    }

    fn check_extent_size(&self) -> Result<(), LogError> {
        let e = self.extent_size;
        if !(MIN_EXTENT_SIZE..=MAX_EXTENT_SIZE).contains(&e) {
            return Err(config(format!(
                "extent_size {e} is outside {MIN_EXTENT_SIZE}..={MAX_EXTENT_SIZE}"
            )));
        }
        if !e.is_multiple_of(EXTENT_ALIGN) {
            return Err(config(format!(
                "extent_size {e} is not a multiple of {EXTENT_ALIGN}"
            )));
        }
        Ok(())
    }

    fn check_max_size(&self) -> Result<(), LogError> {
        let limit = match self.style {
            LogStyle::Circular => CIRCULAR_MAX_SIZE,
            LogStyle::Linear | LogStyle::Archive => LINEAR_MAX_SIZE,
        };
        if self.max_size > limit {
            return Err(config(format!(
                "max_size {} exceeds {limit} for the {:?} style",
                self.max_size, self.style
            )));
        }
        if self.max_extents() < 2 {
            return Err(config(format!(
                "max_size {} holds fewer than 2 extents of {} bytes",
                self.max_size, self.extent_size
            )));
        }
        Ok(())
    }
}

fn config(msg: String) -> LogError {
    LogError::Config(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LogConfig {
        LogConfig::new("/log")
    }

    #[test]
    fn defaults_are_valid() {
        cfg().validate().unwrap();
        assert_eq!(cfg().max_extents(), 3);
    }

    #[test]
    fn bad_extent_sizes_are_named() {
        for (size, needle) in [
            (4096, "outside"),
            (64 * KIB + 512, "multiple"),
            (2 * GIB, "outside"),
        ] {
            let c = LogConfig {
                extent_size: size,
                max_size: 8 * GIB,
                style: LogStyle::Linear,
                ..cfg()
            };
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("extent_size") && e.contains(needle), "{e}");
        }
    }

    #[test]
    fn max_size_needs_two_extents_and_respects_style() {
        let c = LogConfig {
            extent_size: 64 * KIB,
            max_size: 100 * KIB,
            ..cfg()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("fewer than 2 extents"));
        let c = LogConfig {
            max_size: 8 * GIB,
            ..cfg()
        };
        assert!(c.validate().unwrap_err().to_string().contains("Circular"));
        for style in [LogStyle::Linear, LogStyle::Archive] {
            LogConfig {
                max_size: 8 * GIB,
                style,
                ..cfg()
            }
            .validate()
            .unwrap();
        }
    }

    #[test]
    fn full_wait_is_bounded() {
        let c = LogConfig {
            full_wait: Duration::from_secs(3600),
            ..cfg()
        };
        assert!(c.validate().unwrap_err().to_string().contains("full_wait"));
    }

    #[test]
    fn tuning_thresholds_follow_the_documented_numbers() {
        let cap = 192 * MIB;
        assert_eq!(Tuning::Runtime.checkpoint_threshold(cap), 96 * MIB);
        assert_eq!(Tuning::Standard.checkpoint_threshold(cap), 48 * MIB);
        assert_eq!(Tuning::Restart.checkpoint_threshold(cap), cap / 20);
        assert_eq!(Tuning::Restart.checkpoint_threshold(4 * GIB), 32 * MIB);
    }
}
