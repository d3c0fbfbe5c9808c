#!/bin/sh
# bench_dump.sh - `cairn dump --where PATH=VALUE` next to `cairn dump | jq
# select(...)`, the same store, the same answer, in one run. Not part of
# `make test`.
#
#   sh bench/bench_dump.sh [CAIRN [N [DIR]]]
#
# CAIRN (default build/cairn), N events (default 1000000), DIR the store's
# parent (default build/bench-tmp; never tmpfs). The events are generated
# deterministically (awk, no randomness): {"tool": one of 8 names, "n": i,
# "ok": i % 3 != 0, "args": {"path": "src/file<i%1000>.c"}}, one in 8 with
# tool "grep", logged with `cairn log` from stdin. Then, best of 3 each:
#   where  cairn dump --where tool=grep
#   jq     cairn dump | jq -c 'select(.payload.tool == "grep")'
#   dump   cairn dump alone (what both start from)
# and the same for a nested path (args.path=src/file7.c, one in 1000).
# Output: one JSON line per measure on stdout, a table and the ratio
# (target: where >= 5x jq) on stderr. Needs jq (apt-get install jq).
set -eu
CAIRN=${1:-build/cairn}
N=${2:-1000000}
DIR=${3:-build/bench-tmp}
command -v jq >/dev/null 2>&1 || { echo "bench_dump: jq is needed" >&2; exit 1; }
[ -x "$CAIRN" ] || { echo "bench_dump: no $CAIRN (run make)" >&2; exit 1; }
mkdir -p "$DIR"
S="$DIR/dump-bench.cairn"
rm -rf "$S"
awk -v n="$N" 'BEGIN {
    split("grep sed awk cat ls git make cc", t, " ");
    for (i = 1; i <= n; i++)
        printf "{\"tool\":\"%s\",\"n\":%d,\"ok\":%s,\"args\":{\"path\":\"src/file%d.c\"}}\n",
               t[(i % 8) + 1], i, (i % 3 != 0) ? "true" : "false", i % 1000;
}' | "$CAIRN" --store "$S" log --quiet >/dev/null

now() { date +%s.%N; }
best() { # best wall time of 3 runs of "$@" (its stdout counted into $count)
    b=""
    for r in 1 2 3; do
        t0=$(now)
        count=$("$@" | wc -l)
        t1=$(now)
        t=$(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }')
        if [ -z "$b" ] || [ "$(awk -v t="$t" -v b="$b" 'BEGIN { print (t < b) }')" = 1 ]; then b=$t; fi
    done
    echo "$b $count"
}
where_tool() { "$CAIRN" --store "$S" dump --where tool=grep; }
jq_tool() { "$CAIRN" --store "$S" dump | jq -c 'select(.payload.tool == "grep")'; }
where_path() { "$CAIRN" --store "$S" dump --where args.path=src/file7.c; }
jq_path() { "$CAIRN" --store "$S" dump | jq -c 'select(.payload.args.path == "src/file7.c")'; }
dump_all() { "$CAIRN" --store "$S" dump; }

set -- $(best where_tool); w1=$1 c1=$2
set -- $(best jq_tool); j1=$1 d1=$2
set -- $(best where_path); w2=$1 c2=$2
set -- $(best jq_path); j2=$1 d2=$2
set -- $(best dump_all); da=$1
[ "$c1" = "$d1" ] && [ "$c2" = "$d2" ] || { echo "bench_dump: answers differ ($c1/$d1, $c2/$d2)" >&2; exit 1; }
r1=$(awk -v a="$j1" -v b="$w1" 'BEGIN { print a / b }')
r2=$(awk -v a="$j2" -v b="$w2" 'BEGIN { print a / b }')
for m in "tool $w1 $j1 $c1 $r1" "path $w2 $j2 $c2 $r2"; do
    set -- $m
    printf '{"bench":"dump_where","events":%s,"filter":"%s","where_s":%.3f,"jq_s":%.3f,"matches":%s,"ratio":%.2f}\n' \
        "$N" "$1" "$2" "$3" "$4" "$5"
done
printf '{"bench":"dump_all","events":%s,"s":%.3f}\n' "$N" "$da"
{
    printf '%-28s %10s %10s %10s %8s\n' "filter ($N events)" "--where s" "jq s" "matches" "ratio"
    printf '%-28s %10.3f %10.3f %10s %7.2fx %s\n' "tool=grep (1 in 8)" "$w1" "$j1" "$c1" "$r1" \
        "$(awk -v r="$r1" 'BEGIN { print (r >= 5 ? "PASS" : "FAIL") }')"
    printf '%-28s %10.3f %10.3f %10s %7.2fx %s\n' "args.path=src/file7.c" "$w2" "$j2" "$c2" "$r2" \
        "$(awk -v r="$r2" 'BEGIN { print (r >= 5 ? "PASS" : "FAIL") }')"
    printf 'dump alone: %.3f s. Target: --where >= 5x jq over dump.\n' "$da"
} >&2
rm -rf "$S"
