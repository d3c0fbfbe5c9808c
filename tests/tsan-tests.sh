#!/bin/sh
# Runs the named cmocka suites of BUILD/tests (the ThreadSanitizer build);
# prints one line per suite, the output of a failing one, and a closing
# "N passed, N failed" line; exits non-zero if anything failed.
BUILD=$1
shift
pass=0
fail=0
failed=""
for n in "$@"; do
  t0=$(date +%s)
  if "$BUILD/tests/$n" > "$BUILD/tests/$n.out" 2>&1; then
    pass=$((pass + 1)); echo "PASS $n (thread sanitizer, $(($(date +%s) - t0)) s)"
  else
    fail=$((fail + 1)); failed="$failed $n"; echo "FAIL $n (thread sanitizer)"; tail -n 60 "$BUILD/tests/$n.out"
  fi
done
echo "$pass passed, $fail failed (thread sanitizer)"
[ "$fail" -eq 0 ] || { echo "failed:$failed"; exit 1; }
