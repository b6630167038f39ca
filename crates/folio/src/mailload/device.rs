//! Bytes that reached the disk: the block device holding a run's data
//! directory, and the sectors written to it, from the kernel's own count.
//!
//! The server's write calls (`wchar`) and `/proc/PID/io`'s `write_bytes`
//! are not what the disk receives: rewrites of cached pages are counted
//! each time, and a run whose server claimed 46 GB in 60 s moved about
//! 55 MB/s by `vmstat`. The device's count is what was written, by every
//! writer on that device (the tool's prefill of the next run does not
//! overlap a window, but other processes do), and the report says so.
//!
//! ```text
//!   stat(data dir).st_dev ──▶ MAJ:MIN ──▶ /sys/dev/block/MAJ:MIN/stat
//!        │ no such entry (btrfs, device mapper names, …)       ▲
//!        └──▶ /proc/self/mountinfo: the mount holding the dir, │
//!             its source /dev/X ──▶ stat(/dev/X).st_rdev ──────┘
//! ```
//!
//! A partition has its own `stat` under `/sys/dev/block`, so a data
//! directory on `vda1` counts `vda1`'s writes, not the whole disk's. The
//! seventh field of that file is sectors written, always of 512 bytes
//! (Documentation/admin-guide/iostats.rst). A directory on no block
//! device (tmpfs, overlay without a device source) has no figure.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The unit of the `stat` file's sector counts, whatever the device's.
const SECTOR: u64 = 512;

/// A block device and where the kernel counts its I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Its kernel name (`vda`, `nvme0n1p2`) and number, for the report.
    pub name: String,
    stat: PathBuf,
}

impl Device {
    /// The block device holding `dir`, or `None` when it is on none.
    pub fn holding(dir: &Path) -> Option<Device> {
        let dev = std::fs::metadata(dir).ok()?.dev();
        Device::numbered(dev).or_else(|| {
            let dir = dir.canonicalize().ok()?;
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
            let source = mount_source(&mountinfo, &dir)?;
            let rdev = std::fs::metadata(source).ok()?.rdev();
            Device::numbered(rdev)
        })
    }

    /// The device numbered `dev` if the kernel lists it as a block device.
    fn numbered(dev: u64) -> Option<Device> {
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        let entry = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        let stat = entry.join("stat");
        if !stat.is_file() {
            return None;
        }
        let kernel = entry
            .canonicalize()
            .ok()
            .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "?".into());
        Some(Device {
            name: format!("{kernel} ({major}:{minor})"),
            stat,
        })
    }

    /// Bytes written to the device since it appeared, by every writer.
    pub fn bytes_written(&self) -> Option<u64> {
        let text = std::fs::read_to_string(&self.stat).ok()?;
        sectors_written(&text).map(|s| s * SECTOR)
    }
}

/// The sectors-written field (the seventh) of a block device's `stat`.
fn sectors_written(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(6)?.parse().ok()
}

/// The source device of the mount that holds `dir` (absolute, resolved):
/// the longest mount point that is a prefix of it, if its source is a
/// path under `/dev`. A later line for the same point (mounted over the
/// earlier one) wins.
fn mount_source(mountinfo: &str, dir: &Path) -> Option<PathBuf> {
    let mut best: Option<(usize, &str)> = None;
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(point), Some(source)) = (
            before.split_whitespace().nth(4),
            after.split_whitespace().nth(1),
        ) else {
            continue;
        };
        let point = unescape(point);
        if !dir.starts_with(&point) {
            continue;
        }
        let depth = Path::new(&point).components().count();
        if best.is_none_or(|(d, _)| depth >= d) {
            best = Some((depth, source));
        }
    }
    let source = best?.1;
    source.starts_with("/dev/").then(|| PathBuf::from(source))
}

/// A mountinfo path with its octal escapes (`\040` for a space) decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let code = b.get(i + 1..i + 4).and_then(|d| {
            let d = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(d, 8).ok()
        });
        match (b[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_written_is_the_seventh_field() {
        // A disk's line as the kernel prints it (17 fields since 5.5).
        let disk = "  123059     2873  9876543    51234   884455   990011 77665544  4433221        0   611000  4500000    12000        0  1048576      400   250000     9000\n";
        assert_eq!(sectors_written(disk), Some(77_665_544));
        // An older kernel's 11 fields, and a partition's short form.
        assert_eq!(sectors_written("1 2 3 4 5 6 700 8 9 10 11"), Some(700));
        assert_eq!(sectors_written("1 2 3 4 5 6"), None);
        assert_eq!(sectors_written("1 2 3 4 5 6 x"), None);
    }

    const MOUNTINFO: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
22 27 0:21 / /proc rw,relatime - proc proc rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684096k
60 27 0:41 / /srv/data rw,relatime shared:5 - btrfs /dev/nvme0n1p2 rw,ssd
61 60 0:42 / /srv/data/my\\040runs rw,relatime - xfs /dev/sdb1 rw
";

    #[test]
    fn the_deepest_mount_holding_the_directory_gives_the_source() {
        let src = |d: &str| mount_source(MOUNTINFO, Path::new(d));
        assert_eq!(src("/work/runs"), Some(PathBuf::from("/dev/vda")));
        assert_eq!(
            src("/srv/data/folio"),
            Some(PathBuf::from("/dev/nvme0n1p2")),
            "optional fields before the separator are skipped"
        );
        assert_eq!(
            src("/srv/data/my runs/x"),
            Some(PathBuf::from("/dev/sdb1")),
            "an escaped space in the mount point"
        );
        assert_eq!(src("/dev/shm/x"), None, "tmpfs has no device");
        assert_eq!(
            src("/srv/database"),
            Some(PathBuf::from("/dev/vda")),
            "a prefix of the name is not a parent directory"
        );
    }

    #[test]
    fn escapes_are_decoded_and_a_lone_backslash_kept() {
        assert_eq!(unescape("a\\040b\\011c"), "a b\tc");
        assert_eq!(unescape("a\\b"), "a\\b");
    }

    #[test]
    fn the_temporary_directory_is_on_a_device_or_on_none() {
        // Whatever this machine has, the answer is consistent: a device
        // found reads a count; none found reads nothing.
        let dir = tempfile::tempdir().expect("tempdir");
        if let Some(d) = Device::holding(dir.path()) {
            assert!(d.bytes_written().is_some(), "{d:?}");
            assert!(d.name.contains(':'), "{}", d.name);
        }
    }
}
