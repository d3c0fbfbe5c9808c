#!/bin/sh
# The Python binding's tests, against a libcairn.so that `make` built:
#   1. pytest over python/tests (the package from this source tree);
#   2. an offline install: `pip install --no-index --target TMP ./python`,
#      then, from TMP and nowhere else, import cairn, add and recall.
# Usage: python/run-tests.sh [LIBRARY]   LIBRARY: the libcairn.so to test
# (default ../build/libcairn.so relative to this script). Builds nothing.
# Uses /usr/bin/python3 when there is one (Debian's, with python3-pytest
# and python3-pip), else python3. Exits non-zero on any failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:-$here/../build/libcairn.so}
if [ ! -f "$lib" ]; then
  echo "python/run-tests.sh: no library at $lib (run make first)" >&2
  exit 1
fi
CAIRN_LIBRARY="$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")"
export CAIRN_LIBRARY
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
for mod in pytest pip; do
  if ! "$PY" -m "$mod" --version >/dev/null 2>&1; then
    echo "python/run-tests.sh: $PY has no $mod (Debian: apt-get install python3-$mod)" >&2
    exit 1
  fi
done
export PYTHONDONTWRITEBYTECODE=1 # leave no __pycache__ in the tree

cd "$here"
"$PY" -m pytest -q -p no:cacheprovider tests

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --no-index: nothing from the network, as on a machine without it.
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  "$PY" -m pip install --quiet --no-index --no-cache-dir --target "$tmp/site" "$here"
cd "$tmp"
PYTHONPATH="$tmp/site" "$PY" - "$tmp" <<'PYEOF'
import os, sys
import cairn
tmp = sys.argv[1]
assert cairn.__file__.startswith(os.path.join(tmp, "site")), cairn.__file__
with cairn.Store(os.path.join(tmp, "store")) as s:
    m = s.add("installed offline and imported")
    hits = s.recall("offline")
    assert [h["id"] for h in hits] == [m["id"]], hits
print("python: offline install into --target, import, add and recall: ok (libcairn %s)"
      % cairn.library_version)
PYEOF
