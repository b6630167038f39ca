"""The console's Mail and Replication-and-backup pages, and the routes
behind them (run by crates/folio/tests/console_admin.rs).

alice sends bob and carol a message whose subject is HTML; carol's mail
file is gone, so the router delivers to bob and retries carol with a
reason. The queue (GET /mail/queue) is for administrators: nobody gets
401, alice 403, strange limits 400. The Mail page shows the message,
carol retrying with the reason, as text. The Replication page shows the
[[replication]] entry "branch", whose peer does not answer, with its
failures and last result; the administrator runs it now (and only an
administrator may) and backs up every database from it.

usage: console_mail.py URL ADMIN_PASSWORD SCREENSHOT_DIR BACKUP_DIR
"""
import sys
import time

import requests

from consolelib import Console

url, password, shots, backups = sys.argv[1:5]
SUBJECT = "<b onmouseover=alert(1)>Quarterly</b>"


def get(path, auth=None):
    return requests.get(url + path, auth=auth, headers={"X-Folio-Console": "1"})


ADMIN = ("admin", password)
ALICE = ("alice", "alice-password")
r = requests.post(url + "/mail/send", auth=ALICE,
                  json={"to": "bob, carol", "subject": SUBJECT, "body": "figures"})
assert r.status_code == 201, r.text

# The queue's route: administrators only; limits checked.
assert get("/mail/queue").status_code == 401
r = get("/mail/queue", ALICE)
assert r.status_code == 403 and "administrator" in r.json()["reason"], r.text
for q in ["?limit=0", "?limit=abc", "?limit=1001", "?limit=-1", "?limit= 5", "?lmit=5",
          "?limit=5&limit=6"]:
    r = get("/mail/queue" + q, ADMIN)
    assert r.status_code == 400, (q, r.status_code, r.text)


def carol_retrying():
    q = get("/mail/queue?limit=10", ADMIN).json()
    for m in q["messages"]:
        for rc in m["recipients"]:
            if rc["address"].startswith("carol") and rc["state"] == "retrying":
                return m, rc
    return None


# The router's first pass runs at once; wait for it (no timing asserted).
deadline = time.time() + 60
while not carol_retrying():
    assert time.time() < deadline, get("/mail/queue", ADMIN).text
    time.sleep(0.2)
message, carol = carol_retrying()
assert message["subject"] == SUBJECT and message["from"].startswith("alice"), message
assert carol["attempts"] >= 1 and "mail/carol.fdb" in carol["reason"], carol
assert carol["next_attempt"], carol
bob = [rc for rc in message["recipients"] if rc["address"].startswith("bob")][0]
assert bob["state"] == "delivered", message

# The replication entry has failed at least once.
deadline = time.time() + 60
while not (get("/stats", ADMIN).json().get("replication.branch.errors") or 0) >= 1:
    assert time.time() < deadline
    time.sleep(0.2)

# "Run now": administrators only, the entry's name in any case, no other.
def run(name, auth=None, headers=None):
    return requests.post(url + "/admin/replication/%s/run" % name, auth=auth,
                         headers=headers or {"X-Folio-Console": "1"})


def runs():
    return get("/stats", ADMIN).json()["replication.branch.runs"]


assert run("branch").status_code == 401
r = run("branch", ALICE)
assert r.status_code == 403 and "administrator" in r.json()["reason"], r.text
for name in ["nope", "%20branch", "branch%20", "..", "branch%2F.."]:
    r = run(name, ADMIN)
    assert r.status_code == 404, (name, r.status_code, r.text)
assert requests.get(url + "/admin/replication/branch/run", auth=ADMIN).status_code == 405
before = runs()
r = run("BRANCH", ADMIN)
assert r.status_code == 202 and r.json()["state"] in ("due", "running"), r.text
deadline = time.time() + 60
while runs() < before + 1:
    assert time.time() < deadline, "Run now ran nothing"
    time.sleep(0.2)

c = Console(url, shots)
try:
    # Nobody: the sign-in page.
    c.open("#/mail")
    c.find("signin")
    # alice: no Mail page offered; typed in, the server's 403.
    c.sign_in("alice", "alice-password")
    assert not c.find("nav-mail").is_displayed()
    c.open("#/mail")
    said = c.until_text("(403)", "queue")
    assert "administrator" in said, said
    c.open("#/replication")
    c.until_text("branch", "replication-table")
    assert not c.css("#backup-form"), "a user is offered backups"
    assert not c.css("#run-branch"), "a user is offered Run now"
    c.find("signout").click()
    c.find("signin")

    c.sign_in("admin", password)
    c.find("nav-mail").click()
    table = c.until_text("retrying", "queue-table")
    assert SUBJECT in table, table  # shown as text, not markup
    assert "mail/carol.fdb" in table and "delivered" in table, table
    c.no_alert()
    c.shot("mail-queue.png")

    c.find("nav-replication").click()
    row = c.until_text("branch", "replication-table")
    line = [l for l in row.splitlines() if l.startswith("branch")][0]
    assert "failed" in line, line
    # Run now from the page: one more run, its failure counted.
    before = runs()
    c.find("run-branch").click()
    c.until_text("runs now", "flash")
    deadline = time.time() + 60
    while runs() < before + 1:
        assert time.time() < deadline, "Run now from the page ran nothing"
        time.sleep(0.2)
    c.open("#/replication")
    c.driver.refresh()
    row = c.until_text("branch", "replication-table")
    line = [l for l in row.splitlines() if l.startswith("branch")][0]
    assert "failed" in line, line
    facts = c.find("backup-facts").text
    assert "archive" in facts, facts
    c.find("backup-dest").send_keys(backups)
    c.find("backup-go").click()
    said = c.until_text("Backed up", "backup-status")
    assert "databases" in said and backups in said, said
    c.shot("replication.png")
    # The same destination again: refused, the reason shown.
    c.find("backup-go").click()
    said = c.until_text("(400)", "backup-status")
    assert "Not backed up" in said, said
    problems = c.console_problems()
    assert not problems, problems
finally:
    c.quit()
print("console mail test passed")
