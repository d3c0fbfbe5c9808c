#!/bin/sh
# Runs every cmocka suite in BUILD/tests and replays every fuzz corpus with
# BUILD/fuzz/replay_*; prints one line per suite and a closing
# "N passed, N failed" line; exits non-zero if anything failed.
# PART (second argument): units (the cmocka suites), rest (the corpus replays
# and the tool's tests) or all (the default), so that make test can run the
# two halves side by side.
BUILD=${1:-build}
PART=${2:-all}
pass=0
fail=0
failed=""
for t in "$BUILD"/tests/test_*; do
  [ "$PART" = rest ] && break
  [ -x "$t" ] || continue
  n=$(basename "$t")
  t0=$(date +%s)
  if "$t" > "$BUILD/tests/$n.out" 2>&1; then
    pass=$((pass + 1)); echo "PASS $n ($(($(date +%s) - t0)) s)"
  else
    fail=$((fail + 1)); failed="$failed $n"; echo "FAIL $n"; tail -n 40 "$BUILD/tests/$n.out"
  fi
done
for r in "$BUILD"/fuzz/replay_fuzz_*; do
  [ "$PART" = units ] && break
  [ -x "$r" ] || continue
  target=$(basename "$r" | sed 's/^replay_fuzz_//')
  dir="fuzz/corpora/$target"
  if [ ! -d "$dir" ]; then
    fail=$((fail + 1)); failed="$failed replay_$target"; echo "FAIL replay_$target (no corpus $dir)"; continue
  fi
  if "$r" "$dir" > "$BUILD/fuzz/$target.out" 2>&1; then
    pass=$((pass + 1)); echo "PASS replay_$target ($(tail -n 1 "$BUILD/fuzz/$target.out"))"
  else
    fail=$((fail + 1)); failed="$failed replay_$target"; echo "FAIL replay_$target"; tail -n 20 "$BUILD/fuzz/$target.out"
  fi
done
# The tool, end to end (shell script; takes the binary).
if [ "$PART" != units ] && [ -x "$BUILD/cairn" ] && [ -f tests/cli-tests.sh ]; then
  t0=$(date +%s)
  if sh tests/cli-tests.sh "$BUILD/cairn" > "$BUILD/tests/cli-tests.out" 2>&1; then
    pass=$((pass + 1)); echo "PASS cli-tests ($(tail -n 1 "$BUILD/tests/cli-tests.out"), $(($(date +%s) - t0)) s)"
  else
    fail=$((fail + 1)); failed="$failed cli-tests"; echo "FAIL cli-tests"; grep -v '^ok' "$BUILD/tests/cli-tests.out" | tail -n 30
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] || { echo "failed:$failed"; exit 1; }
