"""The console's Mail and Replication-and-backup pages, and the routes
behind them (run by crates/folio/tests/console_admin.rs).

alice sends bob and carol a message whose subject is HTML; carol's mail
file is gone, so the router delivers to bob and retries carol with a
reason. The queue (GET /mail/queue) is for administrators: nobody gets
401, alice 403, strange limits 400. The Mail page shows the message,
carol retrying with the reason, as text. The Replication page shows the
[[replication]] entry "branch", whose peer does not answer, with its
failures and last result; the administrator runs it now (and only an
administrator may), backs up every database from it, is refused the
same directory again (not a run), sees a backup that fails on the way
and an archive run added to the backup history (GET /admin/backups,
administrators only).

usage: console_mail.py URL ADMIN_PASSWORD SCREENSHOT_DIR BACKUP_DIR
"""
import datetime
import os
import re
import sys
import time

import requests
from selenium.webdriver.common.by import By

from consolelib import DURATION, Console, moment

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

# The backup history (GET /admin/backups): administrators only; the
# limit checked; read-only.
def history():
    r = get("/admin/backups", ADMIN)
    assert r.status_code == 200, r.text
    h = r.json()
    assert h["capacity"] == 100, h
    return h["runs"]


assert get("/admin/backups").status_code == 401
r = get("/admin/backups", ALICE)
assert r.status_code == 403 and "administrator" in r.json()["reason"], r.text
for q in ["?limit=0", "?limit=abc", "?limit=101", "?limit=-1", "?limit=5&limit=6", "?lmit=5",
          "?limit=" + "9" * 40]:
    r = get("/admin/backups" + q, ADMIN)
    assert r.status_code == 400, (q, r.status_code, r.text)
for method in ["POST", "PUT", "DELETE"]:
    r = requests.request(method, url + "/admin/backups", auth=ADMIN, data="{}",
                         headers={"X-Folio-Console": "1"})
    assert r.status_code == 405, (method, r.status_code, r.text)
assert history() == []
# A backup started by someone who may not: refused, no run recorded.
r = requests.post(url + "/admin/backup", auth=ALICE, json={"dest": backups + "-alice"},
                  headers={"X-Folio-Console": "1"})
assert r.status_code == 403, r.text
assert history() == []

# The administrator's console session (cookie + CSRF token): a backup or
# an archive without the session's CSRF token, or with a wrong one, is
# refused and is no run; strange bodies are refused with a reason.
session = requests.Session()
r = session.post(url + "/_session?cookie=true", json={"user": "admin", "password": password})
assert r.status_code == 200, r.text
csrf = r.json()["csrf"]
for path, body in [("/admin/backup", {"dest": backups + "-csrf"}), ("/admin/archive", None)]:
    for token in [None, "", "x" * 64, csrf.upper() if csrf != csrf.upper() else csrf.lower()]:
        h = {"X-Folio-Console": "1"}
        if token is not None:
            h["X-Folio-CSRF"] = token
        r = session.post(url + path, json=body, headers=h)
        assert r.status_code == 403 and "x-folio-csrf" in r.text.lower(), (path, token, r.text)
h = {"X-Folio-Console": "1", "X-Folio-CSRF": csrf, "Content-Type": "application/json"}
for body in ['', '{}', '[]', '{"dest": ""}', '{"dest": "relative/dir"}', '{"dest": 5}',
             '{"dest": "/tmp/x", "dbs": "team.fdb"}', '{"dest": "/tmp/x", "dbs": [1]}',
             '{"dest": "/tmp/x", "extra": 1}', '{"dest": "/tmp/a", "dest": "/tmp/b"}',
             '{"dest": "/tmp/x", "dbs": ["../names.fdb"]}', '{"dest": "/tmp/x", "dbs": ["nope.fdb"]}',
             '{"dest": "/tmp/' + "x" * 100000 + '"}', '{"dest": "/tmp/' + "x" * 256 + '"}',
             '{"dest": "/tmp/../tmp/x"}', '{"dest": "/tmp/./x"}', '{"dest": "/tmp/x\\u0000"}',
             '{"dest": "/tmp/x"', '\x00']:
    r = session.post(url + "/admin/backup", data=body.encode(), headers=h)
    assert r.status_code in (400, 404, 413), (body[:60], r.status_code, r.text[:200])
    assert r.json()["reason"], r.text
for body in ['[]', '{"to": "relative"}', '{"to": 5}', '{"from": "/tmp"}', '{"to": "/tmp/../x"}',
             '{"to": "/a", "to": "/b"}']:
    r = session.post(url + "/admin/archive", data=body.encode(), headers=h)
    assert r.status_code == 400, (body, r.status_code, r.text)
assert history() == [], history()
assert not os.path.exists(backups + "-csrf")

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
    assert not c.css("#backup-history"), "a user is shown the backup history"
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
    said = c.until_text("No backup or archive has run yet", "backup-history")
    c.find("backup-dest").send_keys(backups)
    c.find("backup-go").click()
    said = c.until_text("Backed up", "flash")
    assert "databases" in said and backups in said, said
    row = c.until_text(backups, "history-table")
    line = [l for l in row.splitlines() if backups in l][0]
    assert "backup" in line and " ok " in line and "team.fdb" in line, line
    assert history()[0]["dir"] == backups and history()[0]["result"] == "ok"
    # The same destination again: refused, the reason shown; a refusal
    # is not a run.
    c.find("backup-dest").send_keys(backups)
    c.find("backup-go").click()
    said = c.until_text("(400)", "backup-status")
    assert "Not backed up" in said and "already holds a backup" in said, said
    assert len(history()) == 1
    # A run that fails on the way (its directory cannot be made): recorded
    # with the reason, shown as failed.
    c.find("backup-dest").clear()
    c.find("backup-dest").send_keys("/dev/null/nightly")
    c.find("backup-go").click()
    deadline = time.time() + 60
    while history()[0]["dir"] != "/dev/null/nightly":
        assert time.time() < deadline, history()
        time.sleep(0.2)
    c.wait.until(lambda d: "already holds" not in d.find_element(By.ID, "backup-status").text
                 and "Not backed up" in d.find_element(By.ID, "backup-status").text)
    failed = history()[0]
    assert failed["dir"] == "/dev/null/nightly" and failed["result"].startswith("failed: "), failed
    c.find("archive-go").click()
    said = c.until_text("Archived", "flash")
    assert "log extents" in said, said
    runs = history()
    assert [r["kind"] for r in runs] == ["archive", "backup", "backup"], runs
    table = c.until_text("archive", "history-table")
    assert "/dev/null/nightly" in table and "failed" in table, table
    assert c.css("#history-table td.state-bad"), "a failed run is not marked"
    # The last archive and the last good backup: a date and its age, not
    # a raw timestamp; durations and sizes in their units; no exponent.
    facts = dict(zip([e.text for e in c.css("#backup-facts dt")],
                     [e.text for e in c.css("#backup-facts dd")]))
    archived, age = moment(facts["Last archive"])
    assert age and (age == "just now" or age.endswith(" ago")), facts
    assert abs((datetime.datetime.now() - archived).total_seconds()) < 3600, facts
    backed_up, age = moment(facts["Last successful backup"])
    assert age and backups in facts["Last successful backup"], facts
    assert backed_up <= archived, facts
    assert re.search(r" in (%s) to " % DURATION, facts["Last successful backup"]), facts
    for row in c.css("#history-table tr.history-row"):
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        moment(cells[0])
        assert re.fullmatch(DURATION, cells[-1]), cells
    c.no_exponents()
    c.shot("replication.png", height=1100)
    # The one 500 expected: the backup into /dev/null/nightly, shown.
    problems = [p for p in c.console_problems()
                if not ("/admin/backup - " in p and "status of 500" in p)]
    assert not problems, problems
finally:
    c.quit()
print("console mail test passed")
