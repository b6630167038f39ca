"""A compact run from the console while the server is killed (SIGKILL)
(run by crates/folio/tests/console_admin.rs, once per delay).

The administrator opens big.fdb, asks for a compact, and once the page
shows that it is compacting (the request is on its way) the server is
killed after DELAY seconds. Compaction in place leaves no file to watch
for, so the test runs with several delays; whichever moment the kill
lands on, the page must say, as text, that the server did not answer or
show the report of a compact that finished first. The Rust test then
restarts the server and checks every document.

usage: console_compact_kill.py URL ADMIN_PASSWORD SCREENSHOT_DIR SERVER_PID DELAY
"""
import os
import signal
import sys
import time

from consolelib import Console

url, password, shots, pid, delay = sys.argv[1:6]
c = Console(url, shots)
try:
    c.sign_in("admin", password)
    c.open("#/db/big.fdb")
    c.find("db-compact").click()
    c.find("compact-go").click()
    # The request is on its way once the page says so (or has already
    # answered, on a fast disk).
    c.wait.until(lambda d: any(w in c.find("compact-result").text
                               for w in ("Compacting", "Pages moved", "Not compacted")))
    time.sleep(float(delay))
    os.kill(int(pid), signal.SIGKILL)
    c.wait.until(lambda d: "Not compacted" in c.find("compact-result").text
                 or "Pages moved" in c.find("compact-result").text)
    said = c.find("compact-result").text
    if "Not compacted" in said:
        assert "did not answer" in said and "unknown" in said, said
        print("killed during compact")
        c.shot("compact-killed.png")
    else:
        print("the compact answered before the kill")
    c.no_alert()
finally:
    c.quit()
print("console compact kill test passed")
