"""The console's Databases and Users pages in headless Chromium, as an
administrator (run by crates/folio/tests/console_browser.rs).

On crm.fdb (60 documents, a view, a folder, an attachment, made by the
Rust test): creates a database; pages through the view and the folder;
opens a document (items with their types), downloads its attachment,
uploads another and removes it;
edits it while someone else saves it first, which the page must answer
with the 409 and no overwrite; creates a document; copies, compacts and
deletes a database (the confirmation names it); adds a server user,
resets their password, makes and revokes a token, removes them; adds a
mail user, and removes mail users with and without their mail file.
Each step is checked through the HTTP API too. Screenshots go
to the directory given.

usage: console_manage.py URL ADMIN_PASSWORD SCREENSHOT_DIR SETUP_JSON
"""
import json
import os
import sys
import tempfile
import time

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from consolelib import Console, Http

url, password, shots, setup = sys.argv[1:5]
setup = json.loads(setup)
downloads = tempfile.mkdtemp()
c = Console(url, shots, downloads)
api = Http(url, "admin", password)
DOC = setup["doc"]


def select(id_, text):
    Select(c.find(id_)).select_by_visible_text(text)


def item_row(name):
    for row in c.css("#edit-items tr.item-row"):
        if row.find_element(By.CSS_SELECTOR, ".item-name").get_attribute("value") == name:
            return row
    raise AssertionError("no item row " + name)


try:
    c.sign_in("admin", password)

    # -- create a database -------------------------------------------------
    c.open("#/databases")
    c.until_text("crm.fdb", "databases")
    c.find("new-db-path").send_keys("sales/q3.fdb")
    c.find("new-db-title").send_keys("Q3 <b>figures</b>")
    c.shot("databases-new.png")
    c.find("new-db-create").click()
    c.until_text("Created sales/q3.fdb.")
    assert "Q3 <b>figures</b>" in c.main_text()
    assert api.ok("GET", "/db/sales%2Fq3.fdb")["title"] == "Q3 <b>figures</b>"
    # A second time: the server's 409, shown.
    c.open("#/databases")
    c.until_text("sales/q3.fdb", "databases")
    c.find("new-db-path").send_keys("sales/q3.fdb")
    c.find("new-db-create").click()
    c.until_text("Not created (409)")
    print("created a database; a second create was refused with 409")

    # -- a view and a folder, paged ----------------------------------------
    c.open("#/db/crm.fdb")
    c.until_text("Your access", "facts")
    assert "manager" in c.find("facts").text
    select("show-by", "view: By subject")
    c.until_text("entries 1–50 of 60", "entries-count")
    first_page = c.find("entries").text
    assert "Customer 00" in first_page and "Customer 50" not in first_page, first_page
    c.shot("database-view.png", height=1700)
    c.find("listing").find_element(By.XPATH, ".//button[contains(., 'Next')]").click()
    c.until_text("entries 51–60 of 60", "entries-count")
    assert "Customer 59" in c.find("entries").text
    select("show-by", "folder: Key accounts")
    c.until_text("entries 1–2 of 2", "entries-count")
    print("paged a view (50 + 10 of 60) and read a folder (2)")

    # -- a document: items with types, an attachment downloaded -------------
    c.open("#/db/crm.fdb/doc/" + DOC)
    c.until_text("Customer 00", "items")
    items = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
             for r in c.css("#items tbody tr")}
    assert items == {"Subject": "text", "Revenue": "number", "Tags": "text list",
                     "Due": "date-time", "Notes": "rich text"}, items
    c.until_text("contract.txt", "files")
    c.css("#files a.download")[0].click()
    saved = os.path.join(downloads, "contract.txt")
    deadline = time.time() + 15
    while time.time() < deadline and not os.path.exists(saved):
        time.sleep(0.2)
    with open(saved, "rb") as f:
        assert f.read() == setup["attachment"].encode(), "the download differs"
    c.shot("document-items.png")
    print("items shown with their types; the attachment downloaded whole")

    # -- an attachment uploaded, then removed -------------------------------
    upload = os.path.join(tempfile.mkdtemp(), "minutes <img src=x>.md")
    with open(upload, "wb") as f:
        f.write(b"# Minutes\n" * 300)
    c.find("upload-file").send_keys(upload)
    c.find("upload-go").click()
    c.until_text("Stored the attachment minutes <img src=x>.md (2.9 KiB).")
    c.until_text("minutes <img src=x>.md", "files")
    stored = api.ok("GET", "/db/crm.fdb/docs/" + DOC)["$FILE:minutes <img src=x>.md"]
    assert stored["size"] == 3000, stored
    c.find("remove-minutes <img src=x>.md").click()
    c.until_text("Removed the attachment minutes <img src=x>.md.")
    assert "$FILE:minutes <img src=x>.md" not in api.ok("GET", "/db/crm.fdb/docs/" + DOC)
    print("uploaded an attachment, then removed it")

    # -- edit with a save conflict -----------------------------------------
    seq = api.ok("GET", "/db/crm.fdb/docs/" + DOC)["$seq"]
    c.find("edit").click()
    c.until_text("Editing sequence %d " % seq)
    subject = item_row("Subject").find_element(By.CSS_SELECTOR, ".item-value")
    subject.clear()
    subject.send_keys("Customer 00 (renamed in the console)")
    # Someone else saves first.
    api.ok("PUT", "/db/crm.fdb/docs/" + DOC, {"$seq": seq, "Subject": "Customer 00 (renamed elsewhere)"})
    c.find("save").click()
    conflict = c.until_text("409", "edit-status")
    assert "Nothing was overwritten" in conflict, conflict
    assert subject.get_attribute("value") == "Customer 00 (renamed in the console)"
    assert api.ok("GET", "/db/crm.fdb/docs/" + DOC)["Subject"] == "Customer 00 (renamed elsewhere)"
    c.shot("document-conflict.png")
    c.find("reload-current").click()
    c.until_text("Editing sequence %d " % (seq + 1))
    subject = item_row("Subject").find_element(By.CSS_SELECTOR, ".item-value")
    assert subject.get_attribute("value") == "Customer 00 (renamed elsewhere)"
    subject.clear()
    subject.send_keys("Customer 00 (renamed in the console)")
    tags = item_row("Tags").find_element(By.CSS_SELECTOR, ".item-value")
    tags.send_keys("\nrenewal")
    item_row("Notes").find_element(By.CSS_SELECTOR, ".item-remove").click()
    c.find("save").click()
    c.until_text("Saved: the document is at sequence %d." % (seq + 2))
    doc = api.ok("GET", "/db/crm.fdb/docs/" + DOC)
    assert doc["Subject"] == "Customer 00 (renamed in the console)", doc
    assert doc["Tags"] == ["gold", "emea", "renewal"], doc
    assert "Notes" not in doc and doc["Revenue"] == 1000 and doc["$seq"] == seq + 2, doc
    print("a stale save was refused with 409 and kept; the save after reloading landed")

    # -- a new document -----------------------------------------------------
    c.open("#/db/crm.fdb")
    c.until_text("New document")
    c.find("new-doc").click()
    c.until_text("New document in crm.fdb")
    row = c.css("#edit-items tr.item-row")[0]
    row.find_element(By.CSS_SELECTOR, ".item-name").send_keys("Subject")
    row.find_element(By.CSS_SELECTOR, ".item-value").send_keys("Made in the console")
    c.find("add-item").click()
    row = c.css("#edit-items tr.item-row")[1]
    row.find_element(By.CSS_SELECTOR, ".item-name").send_keys("Seats")
    Select(row.find_element(By.CSS_SELECTOR, ".item-type")).select_by_visible_text("number")
    row.find_element(By.CSS_SELECTOR, ".item-value").send_keys("abc")
    c.find("save").click()
    c.until_text("is not a number", "edit-status")
    row.find_element(By.CSS_SELECTOR, ".item-value").clear()
    row.find_element(By.CSS_SELECTOR, ".item-value").send_keys("12")
    c.find("save").click()
    c.until_text("Created document")
    unid = c.driver.current_url.rsplit("/", 1)[1]
    made = api.ok("GET", "/db/crm.fdb/docs/" + unid)
    assert made["Subject"] == "Made in the console" and made["Seats"] == 12, made
    print("created a document with a text and a number item")

    # -- copy, compact, delete ----------------------------------------------
    c.open("#/db/crm.fdb")
    c.find("db-copy").click()
    c.find("copy-to").send_keys("crm-copy.fdb")
    c.find("copy-go").click()
    c.until_text("Copied crm.fdb to crm-copy.fdb: 61 documents, 2 views and folders.")
    assert api.ok("GET", "/db/crm-copy.fdb")["path"] == "crm-copy.fdb"
    c.find("db-compact").click()
    c.find("compact-dry").click()
    c.find("compact-go").click()
    c.until_text("dry run: nothing written", "compact-result")
    c.find("compact-dry").click()
    c.find("compact-go").click()
    c.until_text("compacted", "compact-result")
    c.shot("database-compact.png")
    c.find("db-delete").click()
    yes = c.find("confirm-yes")
    assert "crm-copy.fdb" in c.find("confirm").text
    assert not yes.is_enabled()
    c.find("confirm-text").send_keys("crm.fdb")
    assert not yes.is_enabled(), "a different name confirmed the delete"
    c.find("confirm-text").clear()
    c.find("confirm-text").send_keys("crm-copy.fdb")
    assert yes.is_enabled()
    c.shot("database-delete.png")
    yes.click()
    c.until_text("Deleted crm-copy.fdb.")
    c.until_text("crm.fdb", "databases")
    assert "crm-copy.fdb" not in c.find("databases").text
    assert api.call("GET", "/db/crm-copy.fdb")[0] == 404
    print("copied, compacted (dry run, then for real) and deleted a database")

    # -- users ----------------------------------------------------------------
    c.open("#/users")
    c.until_text("carol", "users")
    c.find("new-user-name").send_keys("dave")
    c.find("new-user-password").send_keys("dave-password-1")
    c.find("new-user-add").click()
    c.until_text("Added the server user dave.")
    dave = Http(url, "dave", "dave-password-1")
    assert dave.ok("GET", "/")["user"] == "dave"
    c.find("password-dave").click()
    c.find("reset-password").send_keys("dave-password-2")
    c.find("reset-go").click()
    c.until_text("Set a new password for dave.")
    assert dave.call("GET", "/")[0] == 401
    assert Http(url, "dave", "dave-password-2").ok("GET", "/")["user"] == "dave"
    c.find("token-dave").click()
    c.find("token-label").send_keys("prometheus")
    c.find("token-go").click()
    token = c.until_text("folio_", "new-token")
    assert Http(url, token).ok("GET", "/")["user"] == "dave"
    c.until_text("prometheus", "users")
    c.find("new-mail-name").send_keys("Alice Smith")
    c.find("new-mail-aliases").send_keys("alice@example.com")
    c.find("new-mail-user").send_keys("carol")
    c.find("new-mail-add").click()
    c.until_text("Added Alice Smith with the mail file")
    c.until_text("alice@example.com", "mail-people")
    c.shot("users.png", height=1300)
    c.find("revoke-dave-prometheus").click()
    c.find("confirm-yes").click()
    c.until_text("Revoked the token prometheus of dave.")
    assert Http(url, token).call("GET", "/")[0] == 401
    c.find("remove-dave").click()
    assert "dave" in c.find("confirm").text
    c.find("confirm-yes").click()
    c.until_text("Removed the server user dave.")
    assert "dave" not in c.find("users").text
    assert Http(url, "dave", "dave-password-2").call("GET", "/")[0] == 401
    assert not c.css("#remove-admin"), "the page offers to remove the administrator signed in"
    # A second person, then taken out again with their mail file; then
    # Alice taken out keeping hers.
    c.find("new-mail-name").send_keys("Bob Jones")
    c.find("new-mail-add").click()
    c.until_text("Added Bob Jones with the mail file mail/bob.jones.fdb")
    assert api.call("GET", "/db/mail%2Fbob.jones.fdb")[0] == 200
    c.find("remove-mail-bob.jones").click()
    assert "Bob Jones" in c.find("confirm").text
    c.find("delete-mail-file").click()
    c.find("confirm-yes").click()
    said = c.until_text("Removed Bob Jones from the directory")
    assert "mail/bob.jones.fdb" in said, said
    assert api.call("GET", "/db/mail%2Fbob.jones.fdb")[0] == 404
    people = api.ok("GET", "/mail/users")
    assert [p["name"] for p in people] == ["Alice Smith"], people
    c.find("remove-mail-alice.smith").click()
    c.find("confirm-yes").click()
    c.until_text("Removed Alice Smith from the directory")
    c.until_text("Nobody yet.", "mail-people")
    assert api.ok("GET", "/mail/users") == []
    assert api.call("GET", "/db/mail%2Falice.smith.fdb")[0] == 200, "the mail file was kept"
    print("added a user, reset their password, made and revoked a token, removed them; "
          "added mail users and removed them, with and without their mail file")

    c.no_alert()
    problems = c.console_problems()
    assert not problems, problems
    print("console manage test passed")
except (TimeoutException, AssertionError):
    c.shot("failure-manage.png")
    print(c.main_text(), file=sys.stderr)
    raise
finally:
    c.quit()
