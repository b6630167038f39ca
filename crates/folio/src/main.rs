//! The one Folio binary: server, administration CLI and load tools.

use clap::Parser;

/// The server allocates many small, short-lived buffers (decoded notes,
/// formula values, index keys) across threads; mimalloc handles that
/// pattern markedly faster than the system allocator.
///
/// Built without transparent huge pages (the `no_thp` feature; the
/// `MIMALLOC_ALLOW_THP=1` environment variable turns them back on).
/// With them, the first touch of each 2 MiB region of the allocator's
/// arenas faulted in a whole huge page and the kernel zeroed it on the
/// spot, in whichever thread allocated: a new connection's, an upload's
/// or a request's first small allocation. In the docs workload's first
/// half second (thirty connections and their mail files being set up)
/// that zeroing was 86% of all CPU samples and small operations queued
/// behind it: the network run's create p99 went from 30–47 ms to
/// 11–12 ms and its elapsed time from 6.0–6.3 s to 5.2 s without
/// (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `purge_delay` option: its index in `mi_option_t` (the same
/// in mimalloc 2 and 3) and its defaults there (10 ms in 2, 1 s in 3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
const MI_DEFAULT_PURGE_DELAYS: [std::ffi::c_long; 2] = [10, 1_000];
/// How long freed memory stays with the process before it goes back to
/// the OS (jemalloc's default decay time).
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

extern "C" {
    // Provided by mimalloc itself (the libmimalloc-sys static library).
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Keeps freed memory for ten seconds before returning it to the OS.
///
/// Streaming attachments frees and allocates hundreds of megabytes a
/// second of frame and chunk buffers, across threads. With mimalloc's
/// default delay much of that memory went back to the OS and was faulted
/// in (and zeroed by the kernel) again: in the docs workload a quarter of
/// the network run's system time (docs/benchmarks.md). Ten seconds is
/// jemalloc's default decay and still gives memory back after a burst.
/// The `MIMALLOC_PURGE_DELAY` environment variable, if set, wins.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: plain integer calls into the allocator, made before any
    // other thread exists (mi_option_set is not thread safe). The option
    // is changed only if it holds one of its documented defaults, a check
    // that the index still names it.
    unsafe {
        if MI_DEFAULT_PURGE_DELAYS.contains(&mi_option_get(MI_OPTION_PURGE_DELAY)) {
            mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
}

fn main() {
    tune_allocator();
    let args = folio::cli::Args::parse();
    folio::cli::init_tracing(&args);
    if let Err(e) = folio::cli::run(args) {
        eprintln!("folio: {e}");
        std::process::exit(1);
    }
}
