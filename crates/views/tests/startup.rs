//! Start-up of the views layer: temporary sort files a crashed rebuild
//! left behind are removed, those of live processes are not.

use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use storage::{Backend, OpenMode};
use views::{ViewConfig, Views};

#[test]
fn sort_files_left_by_a_crashed_process_are_removed_at_start_up() {
    let disk = MemBackend::new();
    let dir = Path::new("/sort");
    disk.create_dir_all(dir).unwrap();
    let dead = format!("folio-sort-{}-3-0.tmp", i32::MAX);
    let live = format!("folio-sort-{}-1-0.tmp", std::process::id());
    for name in [&dead, &live, &"other.tmp".to_string()] {
        disk.open(&dir.join(name), OpenMode::CreateNew).unwrap();
    }
    let config = ViewConfig {
        rebuild_dir: dir.into(),
        rebuild_memory: 1 << 20,
    };
    let _views = Views::new(Arc::new(disk.clone()), config);
    assert!(
        !disk.exists(&dir.join(&dead)),
        "the crashed process's run stays"
    );
    assert!(
        disk.exists(&dir.join(&live)),
        "a live process's run was removed"
    );
    assert!(disk.exists(&dir.join("other.tmp")));
}
