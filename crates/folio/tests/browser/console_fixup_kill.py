"""A fixup run from the console while the server is killed (SIGKILL) in
the middle of it (run by crates/folio/tests/console_admin.rs).

The administrator starts a fixup of big.fdb from its page; as soon as
fixup's new copy of the file (`big.fdb-fixup`) exists, the server is
killed. The page must say that the server did not answer, and say it as
text, not hang. A fixup that ended before the copy was seen is run again
(the database is sound each time), so the kill lands mid-fixup without
any timing in the test.

usage: console_fixup_kill.py URL ADMIN_PASSWORD SCREENSHOT_DIR SERVER_PID FIXUP_TEMP_FILE
"""
import os
import signal
import sys
import time

from consolelib import Console

url, password, shots, pid, temp = sys.argv[1:6]
c = Console(url, shots)


def run_until_seen():
    """Starts a fixup from the page; True once its copy exists (the
    server is then killed), False if it ended first."""
    c.open("#/db/big.fdb")
    c.find("db-fixup").click()
    c.find("fixup-go").click()
    polls = 0
    # A fixup that the server refused, or one that never ends, must fail
    # the test with what the page says, not hold it for ever.
    deadline = time.monotonic() + 120
    while True:
        if os.path.exists(temp):
            os.kill(int(pid), signal.SIGKILL)
            return True
        polls += 1
        if polls % 500 == 0:
            if c.css("#fixup-report"):
                return False
            failed = [e.text for e in c.css("#fixup-result") if "failed" in e.text.lower()]
            if failed:
                # Refused (the database was still in use, say, right after
                # its documents were written): say so and try again.
                print("fixup refused before its copy was seen:", failed[0])
                time.sleep(1)
                return False
            if time.monotonic() > deadline:
                raise AssertionError("fixup neither copied the file nor reported; the page says:\n"
                                     + c.main_text())


try:
    c.sign_in("admin", password)
    for attempt in range(20):
        if run_until_seen():
            print("killed during fixup, attempt", attempt + 1)
            break
        print("fixup ended or was refused before its copy was seen; again")
    else:
        raise AssertionError("fixup never seen in progress")
    said = c.until_text("did not answer", "fixup-result")
    assert "Fixup failed" in said, said
    assert not c.css("#fixup-report"), "a report shows for a fixup that never answered"
    c.shot("fixup-killed.png")
    c.no_alert()
finally:
    c.quit()
print("console fixup kill test passed")
