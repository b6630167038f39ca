"""The console as a Reader, in headless Chromium (run by
crates/folio/tests/console_browser.rs).

rita has Reader access to team.fdb, where one document is hidden from
her by $Readers. The page must offer her no way to change anything; when
she forces an edit anyway (the editor's address typed in, or a request
made from the page's own script with the session's CSRF token) the
server refuses and the page shows the refusal. The hidden document must
be in no list or count the page shows: the change listing, the view, the
folder, the database list, the database's facts. Screenshots go to the
directory given.

usage: console_reader.py URL RITA_PASSWORD SCREENSHOT_DIR SETUP_JSON
"""
import json
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.ui import Select

from consolelib import Console

url, password, shots, setup = sys.argv[1:5]
setup = json.loads(setup)
OPEN, HIDDEN, SECRET = setup["open"], setup["hidden"], setup["secret"]
c = Console(url, shots)


def nothing_hidden(unid_too=True):
    """Neither the hidden document's Subject nor (where she did not type
    it in herself) its UNID is on the page."""
    text = c.main_text()
    assert SECRET not in text, "the hidden document shows:\n" + text
    assert not unid_too or HIDDEN not in text, "the hidden document's UNID shows:\n" + text


try:
    c.sign_in("rita", password)
    assert not c.find("nav-users").is_displayed(), "a Reader is offered the Users page"

    # The databases list: team.fdb, with no count that includes the hidden one.
    c.open("#/databases")
    c.wait.until(lambda d: "…" not in c.find("databases").text and "team.fdb" in c.find("databases").text)
    row = [r for r in c.find("databases").text.splitlines() if r.startswith("team.fdb")][0]
    assert "–" in row, row
    assert not c.css("#new-db"), "a Reader is offered to create databases"

    # The database: no actions, no counts, the hidden document in no listing.
    c.open("#/db/team.fdb")
    facts = c.until_text("Your access", "facts")
    assert "reader" in facts and "counted for administrators only" in facts, facts
    c.until_text("Open agenda", "documents")
    for id_ in ["db-copy", "db-compact", "db-delete", "new-doc"]:
        assert not c.css("#" + id_), "a Reader is offered #" + id_
    nothing_hidden()
    listed = {"changes": c.find("documents").text}
    for choice, total in [("view: By subject", 1), ("folder: Pinned", 1)]:
        Select(c.find("show-by")).select_by_visible_text(choice)
        c.until_text("of %d" % total, "entries-count")
        listed[choice] = c.find("entries").text
        nothing_hidden()
    c.shot("reader-database.png")
    print("listed as a Reader:", json.dumps(listed))

    # Her document page offers no edit, delete or upload.
    c.open("#/db/team.fdb/doc/" + OPEN)
    c.until_text("Open agenda", "items")
    for id_ in ["edit", "doc-delete", "upload-file"]:
        assert not c.css("#" + id_), "a Reader is offered #" + id_

    # Forced: the editor's address typed in. The page warns; the server refuses.
    c.open("#/db/team.fdb/doc/%s/edit" % OPEN)
    c.until_text("the server will refuse a save", "access-warning")
    subject = c.css("#edit-items .item-value")[0]
    subject.clear()
    subject.send_keys("Edited by a Reader")
    c.find("save").click()
    refused = c.until_text("403", "edit-status")
    assert "Not saved" in refused, refused
    c.shot("reader-refused.png")
    print("the forced edit was refused:", refused)

    # Forced from the page's own script, CSRF token and all.
    status, body = c.fetch("PUT", "/db/team.fdb/docs/" + OPEN,
                           json.dumps({"$seq": 1, "Subject": "Edited by a script"}))
    assert status == 403, (status, body)
    status, body = c.fetch("DELETE", "/db/team.fdb/docs/%s?seq=1" % OPEN)
    assert status == 403, (status, body)
    status, body = c.fetch("PUT", "/db/team.fdb/docs/" + HIDDEN, json.dumps({"Subject": "x"}))
    assert status == 404, (status, body)
    status, body = c.fetch("POST", "/_users", json.dumps({"name": "rita2", "password": "long-enough-1"}))
    assert status == 403, (status, body)
    print("requests forced from the page: 403, 403, 404 (hidden), 403 (users)")

    # The hidden document's address: not found, nothing of it shown.
    c.open("#/db/team.fdb/doc/" + HIDDEN)
    c.until_text("no document", "system")
    nothing_hidden(unid_too=False)
    # The Users page's address: the server's refusal, shown.
    c.open("#/users")
    c.until_text("Not shown (403)", "server-users")
    c.until_text("Not shown (403)", "mail-users")

    c.no_alert()
    problems = c.console_problems()
    assert not problems, problems
    print("console reader test passed")
except (TimeoutException, AssertionError):
    c.shot("failure-reader.png")
    print(c.main_text(), file=sys.stderr)
    raise
finally:
    c.quit()
