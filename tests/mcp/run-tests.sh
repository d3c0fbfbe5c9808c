#!/bin/sh
# tests/mcp/run-tests.sh [CAIRN_BIN] - `cairn mcp` driven by the official
# MCP TypeScript SDK client (mcp-test.mjs). CAIRN_BIN defaults to
# build/cairn at the top of the repo. Installs the SDK pinned in
# package-lock.json with `npm ci` when node_modules is missing or older than
# the lock file. Prints TAP, then a closing "mcp: N passed, N failed";
# exits non-zero on any failure, and when node, npm or the install is
# missing (never a silent skip).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/cairn}

die() {
  echo "mcp tests: $*" >&2
  echo "mcp: 0 passed, 1 failed"
  exit 1
}

case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
[ -x "$bin" ] || die "no cairn binary at $bin (run make first, or give its path)"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

command -v node >/dev/null 2>&1 || die "node is not installed (Node.js 20 or later is needed)"
command -v npm >/dev/null 2>&1 || die "npm is not installed (it comes with Node.js)"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || die "node does not run"
[ "$major" -ge 20 ] 2>/dev/null || die "Node.js $(node --version) is too old: 20 or later is needed"

cd "$here" || die "cannot enter $here"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "# npm ci (tests/mcp/node_modules)"
  npm ci --no-audit --no-fund --silent || die "npm ci failed in $here (is the npm registry reachable?)"
fi
[ -f node_modules/@modelcontextprotocol/sdk/package.json ] || die "npm ci did not install @modelcontextprotocol/sdk"

out=$(mktemp "${TMPDIR:-/tmp}/cairn-mcp-tests.XXXXXX") || die "mktemp failed"
trap 'rm -f "$out"' EXIT
# Each test bounds its own waits; --test-timeout is the backstop for a hang.
node --test-reporter=tap --test-timeout=60000 mcp-test.mjs "$bin" > "$out" 2>&1
rc=$?
cat "$out"
pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out" | tail -n 1)
fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out" | tail -n 1)
cancelled=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$out" | tail -n 1)
fail=$(( ${fail:-0} + ${cancelled:-0} ))
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
  fail=1 # node failed before it could count (a syntax error, a crash)
fi
echo "mcp: ${pass:-0} passed, $fail failed"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]
