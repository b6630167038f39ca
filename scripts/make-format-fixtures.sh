#!/usr/bin/env bash
# Makes the format fixtures of crates/folio/tests/fixtures/format-v1/ (see
# docs/design.md §13): a data directory in today's formats, written by the
# real binary — a database with documents, an attachment, a view, a folder,
# a deletion stub and an ACL, its catalog, and the transaction log (small
# extents so the directory stays small). Run it only for a deliberate new
# format version, into a new directory; never to refresh format-v1.
#
#   scripts/make-format-fixtures.sh crates/folio/tests/fixtures/format-vN
set -euo pipefail
out=${1:?usage: make-format-fixtures.sh OUT_DIR}
folio=${FOLIO:-target/release/folio}
if [ -e "$out" ]; then
    echo "$out exists; fixtures are never regenerated in place" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=$work/data
mkdir -p "$data"
cat >"$data/folio.toml" <<'TOML'
[translog]
extent_size = "64KiB"
max_size = "256KiB"
TOML
f() { "$folio" --data "$data" "$@"; }

f db create fx.fdb --title "Format fixture" >/dev/null
a=$(echo '{"Form":"Memo","Subject":"alpha","N":1}' | f doc put fx.fdb)
b=$(echo '{"Form":"Memo","Subject":"bravo","N":2,"Tags":["x","y"]}' | f doc put fx.fdb)
c=$(echo '{"Form":"Memo","Subject":"charlie","N":3}' | f doc put fx.fdb)
head -c 20000 /dev/zero | tr '\0' 'A' >"$work/a.txt"
f attach put fx.fdb "$a" "$work/a.txt" --name a.txt --mime text/plain >/dev/null
f view create fx.fdb BySubject --select 'SELECT Form = "Memo"' \
    --column 'Subject=Subject:asc' --column 'N=N' --logged --refresh auto >/dev/null
f view create fx.fdb Pinned --folder --column 'Subject=Subject:asc' --logged >/dev/null
f folder add fx.fdb Pinned "$b" >/dev/null
f doc delete fx.fdb "$c" >/dev/null
echo '{"default":"reader","entries":[{"name":"admin","level":"manager"}]}' | f acl set fx.fdb >/dev/null

mkdir -p "$out/data"
cp "$data/fx.fdb" "$data/catalog" "$data/folio.toml" "$out/data/"
cp -r "$data/translog" "$out/data/translog"
printf '%s\n' "alpha $a" "bravo $b" "charlie $c" >"$out/unids.txt"
echo "fixtures written to $out"
