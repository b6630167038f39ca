"""The routes behind the console's access-control, views and fixup pages,
called with Python `requests` the way the console calls them (a session
cookie and its CSRF token), by a Manager, a Designer, an Editor, a
Reader, a stranger and nobody (run by crates/folio/tests/console_admin.rs).

For every refusal it checks the status, that the reason names what was
wrong, and that nothing changed: the ACL reads back the same, no view
appeared. Attacker reads: a Reader's view of a categorized view counts
neither the documents `$Readers` hides from her nor their categories.

usage: console_admin_api.py URL SETUP_JSON
"""
import json
import sys

import requests

url, setup = sys.argv[1], json.loads(sys.argv[2])
DB = "/db/team.fdb"
checks = 0


def session(user, password):
    """A console session: the cookie (kept by requests) and its CSRF token."""
    s = requests.Session()
    r = s.post(url + "/_session?cookie=true", json={"user": user, "password": password})
    assert r.status_code == 200, (user, r.status_code, r.text)
    assert "HttpOnly" in r.headers["Set-Cookie"] and "SameSite=Strict" in r.headers["Set-Cookie"]
    s.csrf = r.json()["csrf"]
    return s


def call(s, method, path, body=None, raw=None, csrf=True, headers=None):
    h = {"X-Folio-Console": "1"}
    if csrf is True and method != "GET":
        h["X-Folio-CSRF"] = s.csrf
    elif isinstance(csrf, str):
        h["X-Folio-CSRF"] = csrf
    h.update(headers or {})
    kw = {"headers": h}
    if raw is not None:
        kw["data"] = raw
        h["Content-Type"] = "application/json"
    elif body is not None:
        kw["json"] = body
    return s.request(method, url + path, **kw)


def expect(r, status, *needles):
    """`r` has `status`; an error body is the API's, and its reason holds
    every needle (ignoring case)."""
    global checks
    checks += 1
    assert r.status_code == status, "%s %s: wanted %d, got %d %s" % (
        r.request.method, r.request.url, status, r.status_code, r.text[:400])
    if status >= 400:
        e = r.json()
        assert e["code"] == status, e
        for n in needles:
            assert n.lower() in e["reason"].lower(), "%r not in %r" % (n, e["reason"])
    return r


admin = session("admin", setup["admin_password"])
mona = session("mona", "mona-password")        # Manager
dave = session("dave", "dave-password")        # Designer
eddie = session("eddie", "eddie-password")     # Editor
rita = session("rita", "rita-password")        # Reader
sam = session("sam", "sam-password")           # no entry: no access
nobody = requests.Session()
nobody.csrf = None


def acl():
    return expect(call(admin, "GET", DB + "/_acl"), 200).json()


original = acl()

# ---- the ACL: who may read and change it ----------------------------------
expect(call(nobody, "GET", DB + "/_acl"), 401)
expect(call(nobody, "PUT", DB + "/_acl", original), 401)
for who in (rita, eddie, dave):
    expect(call(who, "GET", DB + "/_acl"), 403, "Manager")
    expect(call(who, "PUT", DB + "/_acl", {"entries": [{"name": "x", "level": "manager"}]}), 403)
for who in (sam,):
    expect(call(who, "GET", DB + "/_acl"), 404, "no such database")
    expect(call(who, "PUT", DB + "/_acl", original), 404, "no such database")
# The cookie alone, or with a CSRF token not the session's, changes nothing.
takeover = {"entries": [{"name": "mona", "level": "manager"}]}
expect(call(mona, "PUT", DB + "/_acl", takeover, csrf=False), 403, "x-folio-csrf")
expect(call(mona, "PUT", DB + "/_acl", takeover, csrf=rita.csrf), 403, "x-folio-csrf")
expect(call(mona, "PUT", DB + "/_acl", takeover, csrf=""), 403, "x-folio-csrf")
assert acl() == original
expect(call(mona, "GET", DB + "/_acl"), 200)

# ---- the ACL: bad lists are refused whole, naming the mistake ---------------
def entries(*extra):
    return [e for e in original["entries"]] + list(extra)


bad_lists = [
    ({"entries": entries({"name": "zed", "level": "Managr"})}, ["Managr"]),
    ({"entries": entries({"name": "zed", "level": " editor "})}, ['" editor "']),
    ({"entries": entries({"name": "zed", "level": ""})}, ["unknown access level"]),
    ({"entries": entries({"name": "zed", "level": "reader", "create_docs": True})}, ["create_docs"]),
    ({"entries": entries({"name": "zed", "level": "reader", "delete_documents": "yes"})},
     ["invalid"]),
    ({"entries": entries(), "colour": "red"}, ["colour"]),
    ({"default": "superuser", "entries": entries()}, ["superuser"]),
    ({"anonymous": "Readers", "entries": entries()}, ["Readers"]),
    ({"entries": [{"name": e["name"], "level": "editor"} for e in original["entries"]]},
     ["Manager"]),
    ({"entries": []}, ["Manager"]),
    ({"entries": entries({"name": "RITA", "level": "editor"})}, ["same name"]),
    ({"entries": entries({"name": " zed", "level": "reader"})}, ["spaces"]),
    ({"entries": entries({"name": "", "level": "reader"})}, ["empty"]),
    ({"entries": entries({"name": "../../etc", "level": "reader", "roles": ["Nope"]})},
     ["Nope"]),
    ({"entries": entries({"name": "zed", "level": "reader", "roles": ["Sales", "sales"]})},
     ["twice"]),
    ({"roles": ["Sales", "SALES"], "entries": entries()}, ["defined twice"]),
    ({"roles": ["[Sales]"], "entries": entries()}, ["brackets"]),
]
for body, needles in bad_lists:
    body = dict({"roles": original["roles"]}, **body)
    expect(call(mona, "PUT", DB + "/_acl", body), 400, *needles)
raw_bad = [
    (b"", "json"),
    (b"   ", "json"),
    (b"[]", "must be a json object"),
    (b'["reader", "reader", [], []]', "must be a json object"),
    (b'"manager"', "must be a json object"),
    (b'{"entries": [', "json"),
    (b'{"default": "reader", "default": "manager", "entries": []}', "duplicate field"),
    (json.dumps({"entries": entries({"name": "zed", "level": "reader"})})[:-1].encode(), "json"),
]
for raw, needle in raw_bad:
    expect(call(mona, "PUT", DB + "/_acl", raw=raw), 400, needle)
# Huge: past the ACL's own limit (4 MiB of JSON), and past the body limit.
many = {"roles": original["roles"], "entries": entries(*({"name": "user%06d" % i, "level": "reader"} for i in range(80000)))}
r = call(mona, "PUT", DB + "/_acl", many)
expect(r, r.status_code if r.status_code in (400, 413) else 400)
huge = b'{"entries":[' + b" " * (9 << 20) + b"]}"
expect(call(mona, "PUT", DB + "/_acl", raw=huge), 413)
# Paths that are not the database's.
for path in ["/db/..%2Fteam.fdb/_acl", "/db/team.fdb%2F..%2Fteam.fdb/_acl", "/db/%2E%2E/_acl",
             "/db/TEAM.FDB/_acl", "/db/team.fdb%20/_acl", "/db/%20team.fdb/_acl"]:
    r = call(mona, "PUT", path, takeover)
    assert r.status_code in (400, 404), (path, r.status_code, r.text)
    checks += 1
assert acl() == original, "a refused change left a trace:\n%s\n%s" % (acl(), original)

# A good change, spelled strangely: level names in any case, flags left
# to the level's defaults. Stored as the canonical form.
changed = json.loads(json.dumps(original))
changed["roles"] = ["Sales", "Auditors"]
changed["entries"].append({"name": "zed", "level": "EDITOR", "roles": ["Auditors"]})
stored = expect(call(mona, "PUT", DB + "/_acl", changed), 200).json()
zed = [e for e in stored["entries"] if e["name"] == "zed"][0]
assert zed == {"name": "zed", "level": "editor", "roles": ["Auditors"],
               "create_documents": True, "delete_documents": True}, zed
assert acl() == stored
# Taking Reader access away from rita takes effect at once: her next
# request finds no database, exactly as for one that does not exist.
nora = json.loads(json.dumps(stored))
for e in nora["entries"]:
    if e["name"] == "rita":
        e["level"] = "noaccess"
expect(call(mona, "PUT", DB + "/_acl", nora), 200)
expect(call(rita, "GET", DB), 404, "no such database")
expect(call(rita, "GET", "/db/nothing-here.fdb"), 404, "no such database")
expect(call(mona, "PUT", DB + "/_acl", original), 200)
expect(call(rita, "GET", DB), 200)
assert acl() == original

# ---- views and folders -------------------------------------------------------
def names(who):
    return sorted(v["name"] for v in expect(call(who, "GET", DB + "/views"), 200).json())


before = names(admin)
assert names(rita) == before
expect(call(nobody, "GET", DB + "/views"), 401)
expect(call(sam, "GET", DB + "/views"), 404)
good = {"name": "By author", "kind": "view", "selection": "SELECT @All",
        "columns": [{"title": "Author", "formula": "Author", "sort": "asc", "categorized": True}]}
for who in (rita, eddie):
    expect(call(who, "POST", DB + "/views", good), 403, "Designer")
    expect(call(who, "POST", DB + "/views/By%20category/rebuild"), 403, "Designer")
    expect(call(who, "DELETE", DB + "/views/By%20category"), 403, "Designer")
expect(call(dave, "POST", DB + "/views", good, csrf=False), 403, "x-folio-csrf")
expect(call(nobody, "POST", DB + "/views/By%20category/rebuild"), 401)
expect(call(sam, "POST", DB + "/views/By%20category/rebuild"), 404)
bad_views = [
    (dict(good, selection="SELECT Subject = "), ["line 1, column"]),
    (dict(good, selection="SELECT @Nope(Subject)"), ["@Nope", "line 1, column 8"]),
    (dict(good, selection="SELECT Subject = \"open"), ["line 1, column"]),
    (dict(good, selection="SELECT @All\n  & (Form = "), ["line 2, column"]),
    (dict(good, columns=[{"title": "X", "formula": "@Left(Subject"}]), ["column"]),
    (dict(good, columns=[{"title": "X", "formula": "X", "widht": 3}]), ["widht"]),
    (dict(good, refresh="sometimes"), ["sometimes"]),
    (dict(good, name="By category"), ["already exists"]),
    (dict(good, name="BY CATEGORY"), ["already exists"]),
    (dict(good, kind="folder"), ["folder"]),
    ({k: v for k, v in good.items() if k != "selection"}, ["selection"]),
    (dict(good, name=""), ["name"]),
]
for body, needles in bad_views:
    expect(call(dave, "POST", DB + "/views", body), 400, *needles)
expect(call(dave, "POST", DB + "/views", raw=b'{"name":"a","name":"b","kind":"view"}'), 400, "duplicate")
assert names(admin) == before, "a refused definition left a view"
expect(call(dave, "POST", DB + "/views", good), 201)
assert names(admin) == sorted(before + ["By author"])
expect(call(dave, "DELETE", DB + "/views/by%20AUTHOR"), 200)
assert names(admin) == before

# Rebuild: a Designer is told no count (she may not see every document);
# an administrator is.
r = expect(call(dave, "POST", DB + "/views/By%20category/rebuild"), 200).json()
assert "entries" not in r and "documents" not in r, r
r = expect(call(admin, "POST", DB + "/views/By%20category/rebuild"), 200).json()
assert r["documents"] == setup["documents"], r
expect(call(admin, "POST", DB + "/views/No%20such/rebuild"), 404)
expect(call(admin, "POST", DB + "/folders/Pinned/rebuild"), 200)

# ---- what a Reader reads of a categorized view ---------------------------------
def read(who, extra=""):
    return expect(call(who, "GET", DB + "/views/By%20category?count=1000&total=true&categories=true"
                       + extra), 200).json()


def categories(answer):
    return {row["category"]: row["count"] for row in answer["rows"] if "category" in row}


everything, hers = read(admin), read(rita)
assert everything["total"] == setup["documents"], everything["total"]
assert hers["total"] == setup["visible_to_rita"], hers["total"]
assert setup["hidden_category"] in categories(everything)
assert setup["hidden_category"] not in categories(hers), categories(hers)
assert sum(categories(hers).values()) == hers["total"], hers
for cat, n in categories(hers).items():
    assert n <= categories(everything)[cat]
assert setup["secret"] not in json.dumps(hers)
for extra in ["&backward=true", "&start=1", "&key=" + setup["hidden_category"]]:
    assert setup["secret"] not in json.dumps(read(rita, extra))
expect(call(rita, "GET", DB + "/views/By%20category/find?key=" + setup["hidden_category"]), 404)
expect(call(rita, "GET", DB + "/docs/" + setup["hidden"]), 404)
# The folder holds a hidden document too: not in her total either.
pinned = expect(call(rita, "GET", DB + "/folders/Pinned?total=true"), 200).json()
assert pinned["total"] == 1 and setup["secret"] not in json.dumps(pinned), pinned

# ---- fixup -------------------------------------------------------------------
expect(call(nobody, "POST", DB + "/fixup"), 401)
expect(call(sam, "POST", DB + "/fixup"), 404, "no such database")
for who in (rita, eddie, dave, mona):
    expect(call(who, "POST", DB + "/fixup", {"dry_run": True}), 403, "administrator")
expect(call(admin, "POST", DB + "/fixup", {"dry_run": True}, csrf=False), 403, "x-folio-csrf")
expect(call(admin, "POST", DB + "/fixup", {"dry_run": "yes"}), 400, "dry_run")
expect(call(admin, "POST", DB + "/fixup", {"dryrun": True}), 400, "dryrun")
expect(call(admin, "POST", DB + "/fixup", raw=b"[true]"), 400)
expect(call(admin, "POST", "/db/..%2Fteam.fdb/fixup"), 400)
expect(call(admin, "POST", "/db/missing.fdb/fixup"), 404)
dry = expect(call(admin, "POST", DB + "/fixup", {"dry_run": True}), 200).json()
assert dry["dry_run"] and dry["clean"] and dry["new_instance"] is None, dry
before_info = expect(call(admin, "GET", DB), 200).json()
done = expect(call(admin, "POST", DB + "/fixup"), 200).json()
assert done["clean"] and not done["dry_run"] and done["notes_lost"] == [], done
assert done["old_instance"] != done["new_instance"], done
assert "view by category" in done["indexes_rebuilt"], done
after_info = expect(call(admin, "GET", DB), 200).json()
assert after_info["instance_id"] != before_info["instance_id"]
# The database and its views serve as before, to each as before.
assert read(rita)["total"] == setup["visible_to_rita"]
assert read(admin)["total"] == setup["documents"]
assert acl() == original

print(json.dumps({"checks": checks}))
print("console admin api test passed")
