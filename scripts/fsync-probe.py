#!/usr/bin/env python3
"""Usage: scripts/fsync-probe.py DIR [SECONDS]

What one fdatasync costs on the data directory's disk: N threads, each
overwriting an 8 KiB page of its own file and syncing it, for SECONDS.
Prints syncs/s and latency percentiles per thread count."""
import os, sys, threading, time, statistics, json
d = sys.argv[1]; seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5
out = []
for threads in (1, 2, 4, 8, 16, 32):
    lat = [[] for _ in range(threads)]
    stop = time.monotonic() + seconds
    def work(i):
        path = os.path.join(d, f"probe-{i}.dat")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.pwrite(fd, b"\0" * (1 << 20), 0); os.fsync(fd)
        page = os.urandom(8192); k = 0
        while time.monotonic() < stop:
            t = time.perf_counter()
            os.pwrite(fd, page, (k % 128) * 8192); os.fdatasync(fd)
            lat[i].append(time.perf_counter() - t); k += 1
        os.close(fd); os.unlink(path)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    [t.start() for t in ts]; [t.join() for t in ts]
    all_ = sorted(x for l in lat for x in l)
    q = lambda p: all_[min(len(all_) - 1, int(p * len(all_)))] * 1000
    r = {"threads": threads, "syncs_per_s": round(len(all_) / seconds),
         "p50_ms": round(q(0.5), 3), "p99_ms": round(q(0.99), 3)}
    out.append(r); print(json.dumps(r), flush=True)
