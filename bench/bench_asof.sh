#!/bin/sh
# bench_asof.sh - what `--as-of` costs: `cairn recall` now next to `cairn
# recall --as-of SEQ` at moments 90 %, 50 % and 10 % back, on a store of N
# memories imported in 10 steps (each leaves a memory index file, as a
# writer's close does), with the CLI (a process per call), median of 5.
#
# usage: sh bench/bench_asof.sh PATH/TO/cairn [N] [DIR]
# Prints one JSON line per moment and the ratio to a recall now; target:
# at a moment 90 % back, at most 10x a recall now.
set -eu
CAIRN=$1
N=${2:-100000}
DIR=${3:-build/bench-tmp/asof}
rm -rf "$DIR" && mkdir -p "$DIR"
S="$DIR/store"
python3 - "$N" "$DIR" <<'PY'
import json, random, sys
n, d = int(sys.argv[1]), sys.argv[2]
random.seed(3)
words = ("alpha beta gamma delta deploy rollback release train cache build test flaky "
         "docker kube secret token agent memory index chain audit replay vector merge").split()
step = n // 10
for p in range(10):
    with open("%s/part%d.jsonl" % (d, p), "w") as f:
        for i in range(p * step, (p + 1) * step):
            f.write(json.dumps({"content": " ".join(random.choice(words) for _ in range(12))
                                + " item %d" % i}) + "\n")
PY
"$CAIRN" init --store "$S" --max-memories 0 >/dev/null
p=0
while [ $p -lt 10 ]; do
    "$CAIRN" --no-embed import --store "$S" --format jsonl "$DIR/part$p.jsonl" >/dev/null
    p=$((p + 1))
done
LAST=$("$CAIRN" head --store "$S" | cut -d: -f1)
# The index files the imports left: each import writes one, and a writer's
# merger folds small ones into bigger ones in the background, so how many
# there are (and how far the oldest reaches) depends on timing. A moment
# before the oldest file's seq is folded from the first record.
FILES=$(ls "$S" | grep -c '^mem-.*\.cmx$' || true)
OLDEST=$(ls "$S" | grep '^mem-.*\.cmx$' | head -1 | sed 's/^mem-\([0-9a-f]*\)\.cmx$/\1/')
echo "{\"name\":\"layout\",\"memories\":$N,\"index_files\":$FILES,\"oldest_file_covers\":$(printf '%d' "0x${OLDEST:-0}")}"
median_ms() {
    for k in 1 2 3 4 5; do
        s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
    done | sort -n | sed -n 3p
}
Q="deploy rollback cache"
NOW=$(median_ms "$CAIRN" recall --store "$S" "$Q")
echo "{\"name\":\"recall_now\",\"memories\":$N,\"median_ms\":$NOW}"
for back in 90 50 10; do
    SEQ=$((LAST * (100 - back) / 100))
    MS=$(median_ms "$CAIRN" recall --store "$S" "$Q" --as-of "$SEQ")
    R=$(python3 -c "print('%.2f' % ($MS / max($NOW, 1)))")
    V=PASS
    [ "$back" -eq 90 ] && python3 -c "import sys; sys.exit(0 if $MS <= 10 * max($NOW, 1) else 1)" || V=FAIL
    [ "$back" -ne 90 ] && V=""
    echo "{\"name\":\"recall_as_of_${back}_back\",\"seq\":$SEQ,\"median_ms\":$MS,\"ratio_to_now\":$R${V:+,\"target\":\"<=10x\",\"verdict\":\"$V\"}}"
done
rm -rf "$DIR"
