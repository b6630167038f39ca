"""PouchDB in headless Chromium syncing with the CouchDB door across
origins (crates/folio/tests/couch_browser.rs).

argv: door URL, database, user, password, the port of the listed origin,
the port of an origin not listed, the path of PouchDB's browser build.

Serves one page (and pouchdb.js) on both ports of 127.0.0.1, loads it
from the listed origin, makes a document with an attachment in the
browser's PouchDB (IndexedDB) and syncs both ways; then loads it from the
other origin, where the same sync must fail (the browser withholds the
door's answers). Prints `RESULT <json>` and `REFUSED <json>`."""
import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

door, db, user, password, listed, other, pouch_js = sys.argv[1:8]

PAGE = """<!doctype html><meta charset="utf-8"><title>sync</title>
<script src="pouchdb.js"></script><p id="ready">ready</p>"""

SYNC = """
const [door, db, user, password, tag, done] = arguments;
(async () => {
  const local = new PouchDB('browser-' + tag + '-' + Date.now());
  const remote = new PouchDB(door + '/' + db, {auth: {username: user, password}, skip_setup: true});
  await local.put({_id: 'from-' + tag, made: 'in the browser', _attachments: {
    'b.txt': {content_type: 'text/plain', data: btoa('made in the browser at ' + tag)}}});
  const r = await local.sync(remote);
  const got = await local.get('from-server', {attachments: true});
  done({ok: true, pushed: r.push.docs_written, pulled: r.pull.docs_written,
        pull_failures: r.pull.doc_write_failures, push_failures: r.push.doc_write_failures, got});
})().catch((e) => done({ok: false, error: String(e && (e.message || e)), status: e && e.status}));
"""


def serve(root, port):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main():
    root = tempfile.mkdtemp()
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write(PAGE)
    shutil.copy(pouch_js, os.path.join(root, "pouchdb.js"))
    servers = [serve(root, listed), serve(root, other)]
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
        opts.add_argument(a)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path="/usr/bin/chromedriver"))
    driver.set_script_timeout(120)
    try:
        for tag, port, label in [("listed", listed, "RESULT"), ("other", other, "REFUSED")]:
            driver.get("http://127.0.0.1:%s/index.html" % port)
            out = driver.execute_async_script(SYNC, door, db, user, password, tag)
            print(label, json.dumps(out), flush=True)
    finally:
        driver.quit()
        for s in servers:
            s.shutdown()
        shutil.rmtree(root, ignore_errors=True)


main()
