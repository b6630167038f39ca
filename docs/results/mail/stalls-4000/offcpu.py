# Reads `perf script` of sched:sched_switch events recorded system-wide (-a)
# and attributes off-CPU time to the stack at switch-out, per thread name.
import sys, re, collections
tids = set(int(x) for x in open(sys.argv[2]).read().split()) if len(sys.argv) > 2 else None
cur = None; stacks = collections.Counter(); out = {}
comm_of = {}
hdr = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+(?:\[\d+\]\s+)?([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=(\d+) .*? next_comm=(.*?) next_pid=(\d+)")
ev = None
def flush(ev):
    if not ev: return
    t, ppid, pcomm, npid, frames = ev
    out[ppid] = (t, pcomm, frames)
    if npid in out:
        t0, c, fr = out.pop(npid)
        if tids is not None and npid not in tids: return
        stacks[(c, ';'.join(fr))] += t - t0
for line in sys.stdin:
    m = hdr.match(line)
    if m:
        flush(ev)
        ev = [float(m.group(3)), int(m.group(5)), m.group(4), int(m.group(7)), []]
    elif ev is not None and line.strip():
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            sym = parts[1].split('+')[0]
            if not sym.startswith(('__schedule','schedule','[unknown]')):
                ev[4].append(sym[:80])
flush(ev)
pat = sys.argv[1] if len(sys.argv) > 1 else ''
tot = collections.Counter()
for (c, s), v in stacks.items(): tot[c] += v
print("off-CPU seconds per thread name:")
for c, v in tot.most_common(15): print(f"  {v:8.2f}  {c}")
print()
for (c, s), v in stacks.most_common(60):
    if pat and pat not in c: continue
    fr = s.split(';')
    print(f"{v:8.2f} {c}: " + ' <- '.join(fr[:14]))
