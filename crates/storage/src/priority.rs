//! Background I/O threads run at a lower CPU priority than requests.
//!
//! On a machine with few cores a checkpoint that writes hundreds of
//! megabytes of pages (copying each frame, a `pwrite` per run of pages)
//! competes for the CPU with the threads answering requests; the flush
//! has no deadline of its own (the log holds every change it writes,
//! I1, I8), a request does. So the engine's background threads (the
//! checkpointer, the closer, and the flush threads they start, which
//! inherit it) lower their own scheduling priority: they still get a
//! share of the CPU under load, and all of it when requests leave it idle.

/// How much lower than the process's other threads (a `nice` increment;
/// under Linux's scheduler a thread 5 lower gets about a third of the
/// share of one at the default when both want the CPU).
pub const BACKGROUND_NICE: i32 = 5;

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`]. On Linux
/// the nice value belongs to the thread and the threads it creates
/// inherit it; elsewhere, or if the call is refused, nothing changes (a
/// lower priority is an optimisation, never needed for correctness).
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take no pointers; a failure only
        // leaves the priority as it was.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            let _ = libc::setpriority(libc::PRIO_PROCESS, tid, now + BACKGROUND_NICE);
        }
    }
}
