#!/bin/sh
# cli-tests.sh - end-to-end checks of the `cairn` command-line tool: every
# command, its help, the documented exit codes (0, 1, 2, 64) and the error
# paths (invalid JSON mid-stream, a second writer while one holds the lock,
# unknown options, corruption found by verify).
#
# usage: sh tests/cli-tests.sh PATH/TO/cairn
# Prints "ok - NAME" or "not ok - NAME" per check and a summary; exits
# non-zero if any check failed. Needs jq (tools/install-deps.sh installs it):
# without it the JSON checks fail. Works in a temporary directory; takes ~10 s.
set -u

CAIRN=${1:-}
if [ -z "$CAIRN" ] || [ ! -x "$CAIRN" ]; then
    echo "usage: sh tests/cli-tests.sh PATH/TO/cairn" >&2
    exit 64
fi
case $CAIRN in /*) ;; *) CAIRN=$(pwd)/$CAIRN ;; esac

HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/cairn-cli.XXXXXX") || exit 1
BG=""
cleanup() {
    [ -n "$BG" ] && kill "$BG" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1
unset CAIRN_STORE

pass=0
fail=0
ok() {
    pass=$((pass + 1))
    echo "ok - $1"
}
notok() {
    fail=$((fail + 1))
    echo "not ok - $1"
    [ -s out ] && sed 's/^/#   stdout: /' out | head -n 5
    [ -s err ] && sed 's/^/#   stderr: /' err | head -n 5
    return 0
}
# check NAME CONDITION...: run the condition (a command), report.
check() {
    name=$1
    shift
    if "$@"; then ok "$name"; else notok "$name"; fi
}
# run CMD...: run the tool with stdout in ./out, stderr in ./err; $rc is set.
run() {
    "$CAIRN" "$@" >out 2>err
    rc=$?
}
rc_is() { [ "$rc" -eq "$1" ]; }
out_has() { grep -q -- "$1" out; }
err_has() { grep -q -- "$1" err; }
err_lines() { [ "$(wc -l <err | tr -d ' ')" -eq "$1" ]; }
out_lines() { [ "$(wc -l <out | tr -d ' ')" -eq "$1" ]; }
out_is() { [ "$(cat out)" = "$1" ]; }
# The JSON checks need jq: without it they fail (never pass unchecked).
have_jq() { command -v jq >/dev/null 2>&1; }
have_jq || echo "# jq is not installed (sh tools/install-deps.sh): the JSON checks will fail"
# (jq 1.6's -e exits 0 on empty input: an empty ./out must fail too.)
valid_json_lines() { have_jq && [ -s out ] && jq -e . out >/dev/null 2>&1; }
# jq_ok FILTER: the JSON in ./out passes the jq filter (fails without jq).
jq_ok() { have_jq && [ -s out ] && jq -e "$1" out >/dev/null 2>&1; }

S="--store $T/s"

# ---- help and usage ---------------------------------------------------------
run --help
check "--help exits 0" rc_is 0
check "--help documents exit codes" sh -c 'grep -q "^  64" out && grep -q "^  2 " out && grep -q "^  1 " out'
check "--help lists every command" sh -c 'for c in init log dump verify stats config restore compact purge help; do grep -q "^  $c " out || exit 1; done'
run --version
check "--version prints the version" sh -c "[ $rc -eq 0 ] && grep -q '^cairn [0-9]' out"
for c in init log dump verify stats config restore compact purge help; do
    run "$c" --help
    check "$c --help exits 0 with usage on stdout" sh -c "[ $rc -eq 0 ] && grep -q '^usage: cairn' out && [ ! -s err ]"
    run help "$c"
    check "help $c prints the same text" sh -c "[ $rc -eq 0 ] && $CAIRN $c --help | cmp -s - out"
done
run
check "no command exits 64" rc_is 64
run frobnicate
check "unknown command exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'unknown command' err"
run $S dump --bogus
check "unknown option exits 64 with one line" sh -c "[ $rc -eq 64 ] && [ \$(wc -l <err) -eq 1 ] && grep -q \"^cairn: dump: unknown option '--bogus'\" err"
run $S log --namespace
check "missing option value exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'needs a value' err"
run $S init --durability sometimes
check "bad --durability exits 64" rc_is 64
run $S dump --since yesterday-ish
check "bad time exits 64" rc_is 64
run --bogus-global dump
check "unknown global option exits 64" rc_is 64
run help nosuch
check "help of an unknown command exits 64" rc_is 64

# ---- missing store ----------------------------------------------------------
for c in dump verify stats; do
    run $S "$c"
    check "$c without a store exits 1 naming cairn init" \
        sh -c "[ $rc -eq 1 ] && grep -q \"^cairn: $c: no store at $T/s (run 'cairn init') (CAIRN_ENOTFOUND)\$\" err"
done

# ---- init -------------------------------------------------------------------
run $S init --durability full --batch-ms 20 --segment-size 4K
check "init exits 0 silently" sh -c "[ $rc -eq 0 ] && [ ! -s out ] && [ ! -s err ] && [ -f $T/s/MANIFEST ]"
run $S init
check "init of an existing store exits 1" sh -c "[ $rc -eq 1 ] && grep -q 'store already exists' err && grep -q 'CAIRN_EEXIST' err"
run $S stats
check "stats shows the init settings" sh -c "[ $rc -eq 0 ] && grep -q '^durability: *full' out && grep -q '^batch ms: *20' out && grep -q '^segment size: *4096' out"
check "stats of an empty store" sh -c "grep -q '^records: *0\$' out && grep -q '^compression ratio: *n/a' out"

# ---- log ----------------------------------------------------------------------
run $S log '{"a":1}' '[2, 3]' -- -4
check "log of arguments prints one seq each" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out | tr '\n' ' ')\" = '1 2 3 ' ]"
printf '{"b":1}\n\n   \n{"b":2}\r\n{"b":3}' | "$CAIRN" $S log >out 2>err
rc=$?
check "log of stdin skips blank lines, takes a last line without newline" \
    sh -c "[ $rc -eq 0 ] && [ \"\$(cat out | tr '\n' ' ')\" = '4 5 6 ' ]"
printf '{"c":1}\n{"c":2}\n' | "$CAIRN" $S log --quiet --namespace quiet-ns >out 2>err
rc=$?
check "log --quiet prints only the count" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = 2 ]"
printf '{"d":1}\n{"d":2}\n{"d":\n{"d":4}\n' | "$CAIRN" $S log --namespace bad >out 2>err
rc=$?
check "invalid JSON on line 3 exits 1 with one error line" \
    sh -c "[ $rc -eq 1 ] && [ \$(wc -l <err) -eq 1 ] && grep -q '^cairn: log: line 3: invalid JSON' err"
run $S dump
check "lines 1-2 before the invalid line are committed, nothing after" \
    sh -c "[ \$(grep -c '\"ns\":\"bad\"' out) -eq 2 ] && ! grep -q '\"d\":4' out"
run $S log '{"e":1}' '{"e":'
check "an invalid argument appends nothing" sh -c "[ $rc -eq 1 ] && grep -q 'argument 2: invalid JSON' err && [ \$($CAIRN $S dump | grep -c '\"e\":1') -eq 0 ]"
for bad in '01' '{"a":1,}' '[1 2]' 'nul' '{"a":1}}' "$(printf '"tab\there"')"; do
    run $S log "$bad"
    check "log rejects $bad" rc_is 1
done
run $S log ''
check "an empty argument is invalid" sh -c "[ $rc -eq 1 ] && grep -q 'empty' err"
run $S log --type 32769 '"user type"'
check "log --type with a number" rc_is 0
run $S log --type 'no such' '{}'
check "log --type with a name that is no type name exits 1 and appends nothing" sh -c "[ $rc -eq 1 ] && grep -q 'a letter first' err"
printf '{"x":"%s"}\n' "$(head -c 20000 /dev/zero | tr '\0' 'x')" | "$CAIRN" $S log >out 2>err
rc=$?
check "a 20 KB line is one record" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ]"

# ---- dump ---------------------------------------------------------------------
run $S dump
check "dump exits 0" rc_is 0
check "dump output is valid JSON (jq)" valid_json_lines
check "dump has every record" out_lines 12
check "dump record format" sh -c "head -n 1 out | grep -Eq '^\\{\"seq\":1,\"ts\":\"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z\",\"type\":\"event\",\"ns\":\"\",\"payload\":\\{\"a\":1\\}\\}\$'"
check "dump prints an unknown type as a number" grep -q '"type":32769,' out
check "dump keeps the namespace" grep -q '"ns":"quiet-ns","payload":{"c":1}' out
run $S dump --from-seq 2 --to-seq 3
check "dump --from-seq/--to-seq" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ] && head -n 1 out | grep -q '^{\"seq\":2,'"
run $S dump --type 32769
check "dump --type number" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ]"
run $S dump --type event
check "dump --type name" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 11 ]"
run $S dump --since 1h
check "dump --since 1h (relative) sees everything" out_lines 12
run $S dump --since 2000-01-01 --until 2000-01-02T00:00:00.000Z
check "dump --since/--until ISO range in the past is empty" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
run $S dump --until @0
check "dump --until @0 is empty" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
run $S dump --since "$(date -u +%Y-%m-%d)" --until now
check "dump --since today (date) --until now" out_lines 12
run $S dump --since 2026-02-30
check "an impossible date exits 64" rc_is 64
run $S dump extra
check "dump with a positional argument exits 64" rc_is 64
# dump filters: namespace, payload paths, csv
F="--store $T/filters"
run $F log '{"tool":"grep","args":["-r","x"],"ok":true,"n":1}' '{"tool":"sed","args":["-i"],"ok":false,"n":2}'
run $F log --namespace agent-b '{"tool":"grep","ctx":{"file":"a.c","line":7},"n":3}'
run $F dump --namespace agent-b
check "dump --namespace keeps that namespace only" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q '\"n\":3' out"
run $F dump --where tool=grep
check "dump --where PATH=text matches a string member" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ] && ! grep -q sed out"
run $F dump --where 'args[0]=-i'
check "dump --where follows [N] into an array" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q '\"n\":2' out"
run $F dump --where ctx.line=7 --where tool=grep
check "dump --where nested members, several all held (JSON number)" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q '\"n\":3' out"
run $F dump --where ok=false
check "dump --where VALUE as JSON (false is no string)" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q '\"n\":2' out"
run $F dump --where 'tool="grep"' --where n=1
check "dump --where a quoted JSON string" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ]"
run $F dump --where nosuch.path=1
check "dump --where a path that is not there matches nothing" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
run $F dump --where novalue
check "dump --where without '=' exits 64" rc_is 64
run $F dump --format csv --where tool=sed
check "dump --format csv: a header and RFC 4180 rows (CRLF)" sh -c "[ $rc -eq 0 ] && head -n 1 out | tr -d '\r' | grep -qx 'seq,ts,type,ns,payload,bin' && tail -n 1 out | grep -q '^2,20[0-9-]*T[0-9:.]*Z,event,\"\",\"{\"\"tool\"\":\"\"sed\"\"' && [ \$(tr -cd '\r' <out | wc -c) -eq 2 ]"
# dump --follow: what another process commits, until SIGINT; a closed pipe ends it too
"$CAIRN" $F dump --follow --where tool=awk >follow.out 2>follow.err &
fpid=$!
sleep 0.3
"$CAIRN" $F log '{"tool":"awk","n":4}' >/dev/null
"$CAIRN" $F log --namespace agent-c '{"tool":"awk","n":5}' >/dev/null
i=0; while [ $i -lt 50 ] && [ "$(wc -l <follow.out)" -lt 2 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT $fpid; wait $fpid; frc=$?
check "dump --follow prints records committed later by other processes, then exits 0 on SIGINT" sh -c "[ $frc -eq 0 ] && [ \$(wc -l <follow.out) -eq 2 ] && grep -q '\"n\":4' follow.out && grep -q '\"n\":5' follow.out && [ ! -s follow.err ]"
( "$CAIRN" $F dump --follow | head -n 1 >/dev/null ) &
hpid=$!
sleep 0.3
"$CAIRN" $F log '{"tool":"late"}' >/dev/null
i=0; while [ $i -lt 50 ] && kill -0 $hpid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
check "dump --follow ends when its reader closes the pipe" sh -c "! kill -0 $hpid 2>/dev/null"

# ---- long lines (own store) ---------------------------------------------------
L="--store $T/long"
head -c 300000 /dev/zero | tr '\0' 'x' | sed 's/^/{"long":"/; s/$/"}/' | "$CAIRN" $L log >out 2>err
rc=$?
check "a 300 KB line is one record" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = 1 ]"
run $L dump
check "a 300 KB record dumps whole" sh -c "[ $rc -eq 0 ] && [ \$(wc -c <out) -gt 300000 ]"
{ echo '{"before":1}'; head -c 17000000 /dev/zero | tr '\0' 'x'; echo; } | "$CAIRN" $L log >out 2>err
rc=$?
check "a line over 16 MiB exits 1 (CAIRN_ETOOBIG), earlier lines kept" \
    sh -c "[ $rc -eq 1 ] && grep -q '^cairn: log: line 2: .*(CAIRN_ETOOBIG)\$' err && [ \"\$(cat out)\" = 2 ]"

# ---- stats and verify -------------------------------------------------------
run $S stats --json
check "stats --json exits 0" rc_is 0
check "stats --json is valid JSON" valid_json_lines
check "stats --json counts records" grep -q '"records":12,' out
run $S stats
check "stats is aligned key: value lines" sh -c "[ $rc -eq 0 ] && grep -q '^records: *12\$' out && grep -q '^last seq: *12\$' out && grep -q '^segments: *[0-9]* active, [0-9]* closed, [0-9]* sealed\$' out"
check "stats shows a ratio once segments are sealed" grep -Eq '^compression ratio: *[0-9]+\.[0-9]{2}$' out
run $S verify
check "verify of a sound store exits 0 with a summary" sh -c "[ $rc -eq 0 ] && grep -Eq '^ok: 12 records in [0-9]+ segments verified\$' out && [ ! -s err ]"

# ---- CAIRN_STORE and ./.cairn ------------------------------------------------
CAIRN_STORE=$T/env "$CAIRN" log '{"env":1}' >out 2>err
rc=$?
check "\$CAIRN_STORE picks the store (log creates it)" sh -c "[ $rc -eq 0 ] && [ -f $T/env/MANIFEST ]"
"$CAIRN" log '{"cwd":1}' >out 2>err
check "the default store is ./.cairn" test -f "$T/.cairn/MANIFEST"
run dump --store "$T/env"
check "--store after the command" sh -c "[ $rc -eq 0 ] && grep -q '\"env\":1' out"

# ---- writers take turns; readers alongside them ------------------------------
# A writer that logs one line, then keeps the store open for 3 s.
{ echo '{"live":1}'; sleep 3; } | "$CAIRN" --store "$T/w" log >"$T/w.out" 2>"$T/w.err" &
BG=$!
i=0
while [ $i -lt 40 ]; do
    "$CAIRN" --store "$T/w" dump 2>/dev/null | grep -q '"live":1' && break
    sleep 0.05
    i=$((i + 1))
done
check "a streaming writer's line is visible to dump while it runs" test $i -lt 40
run --store "$T/w" log '{"second":1}'
check "a second writer gets its turn while a streaming writer runs" rc_is 0
run --store "$T/w" add "written while the log streams"
check "a memory is stored while a streaming writer runs" rc_is 0
run --store "$T/w" recall "streams"
check "and recalled while it runs" sh -c "[ $rc -eq 0 ] && grep -q 'written while the log streams' out"
run --store "$T/w" context "streams"
check "context works while it runs" sh -c "[ $rc -eq 0 ] && grep -q 'written while the log streams' out"
run --store "$T/w" recall "streams" --format json
wid=$(jq -r '.[0].id' out 2>/dev/null)
run --store "$T/w" get "$wid"
check "get works while it runs" sh -c "[ $rc -eq 0 ] && grep -q 'written while the log streams' out"
run --store "$T/w" verify
check "verify works while a writer streams" rc_is 0
run --store "$T/w" stats
check "stats works while a writer streams" rc_is 0
wait "$BG"
rc=$?
BG=""
check "the writer exits 0 when its input ends" sh -c "[ $rc -eq 0 ] && [ \"\$(cat $T/w.out)\" = 1 ]"
run --store "$T/w" dump
check "every writer's record is in the log" sh -c "grep -q '\"live\":1' out && grep -q '\"second\":1' out"
# A writer in its turn (here: flock(1) holding LOCK) makes the next wait up
# to --busy-timeout, then fail.
if command -v flock >/dev/null 2>&1; then
    flock "$T/w/LOCK" sleep 2 &
    FL=$!
    sleep 0.3
    t0=$(date +%s%N)
    run --store "$T/w" --busy-timeout 400 log '{"third":1}'
    t1=$(date +%s%N)
    check "a writer finding the lock held waits --busy-timeout, then exits 1 (CAIRN_ELOCKED)" \
        sh -c "[ $rc -eq 1 ] && grep -q 'CAIRN_ELOCKED' err && grep -q 'waited 400 ms' err && [ $(( (t1 - t0) / 1000000 )) -ge 380 ]"
    run --store "$T/w" get nothing-here
    check "a reader does not wait for the lock" sh -c "grep -q 'no memory with id' err"
    run --store "$T/w" log '{"third":1}'
    check "with the default timeout it waits for the turn and gets in" rc_is 0
    wait "$FL"
fi
run --store "$T/w" --busy-timeout soon log '{"x":1}'
check "--busy-timeout takes milliseconds" rc_is 64

# 20 processes storing at once: all succeed, all 20 are found.
P=$T/procs
"$CAIRN" --store "$P" init >/dev/null 2>&1
pids=""
for n in $(seq 1 20); do
    "$CAIRN" --store "$P" add "concurrent memory number $n about turns" >"$T/p$n.out" 2>"$T/p$n.err" &
    pids="$pids $!"
done
fails=0
for p in $pids; do wait "$p" || fails=$((fails + 1)); done
check "20 concurrent adds all succeed" test "$fails" -eq 0
run --store "$P" recall "concurrent memory about turns" --k 50 --format json
check "all 20 memories are found" jq_ok 'length == 20'

# ---- verify finds damage ------------------------------------------------------
seg=$(ls "$T/w" | grep '\.log$' | tail -n 1)
if [ -n "$seg" ]; then
    f=$T/w/$seg
    size=$(wc -c <"$f" | tr -d ' ')
    off=$((size - 12))
    b=$(od -An -tu1 -j "$off" -N1 "$f" | tr -d ' ')
    # shellcheck disable=SC2059
    printf "\\$(printf %03o $(((b + 1) % 256)))" | dd of="$f" bs=1 seek="$off" conv=notrunc 2>/dev/null
    run --store "$T/w" verify
    check "verify of a damaged store exits 2" rc_is 2
    check "verify prints FILE@OFFSET: CAIRN_EXXX: message" grep -Eq "^$seg@[0-9]+: CAIRN_E[A-Z]+: " out
    check "verify reports the count on stderr" grep -q '^cairn: verify: [0-9]* problem(s)$' err
else
    notok "verify of a damaged store (no .log segment found in $T/w)"
fi

# ---- memories: add, get, remove, recall ------------------------------------------
M=$T/mem
run --store "$M" add "User prefers TypeScript over JavaScript" --category preference --importance 0.8 --tags lang,ts
check "add prints an id" sh -c "[ $rc -eq 0 ] && grep -Eq '^m[0-9a-f]{16}$' out"
id1=$(cat out)
run --store "$M" add "User lives in San Francisco" --importance 0.9
id2=$(cat out)
run --store "$M" add "User lives in San Francisco"
check "add of the same text prints the same id and writes nothing" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = '$id2' ] && grep -q 'already stored' err"
run --store "$M" add "x" --importance 1.5
check "add refuses an importance out of 0..1 (exit 64)" sh -c "[ $rc -eq 64 ] && grep -q 'importance' err"
run --store "$M" add "x" --meta '[1]'
check "add refuses metadata that is not an object" rc_is 64
run --store "$M" get "$id1" --format json
check "get --format json has Engram's fields" sh -c "[ $rc -eq 0 ] && grep -q '\"id\":\"$id1\"' out && grep -q '\"accessCount\":0' out && grep -q '\"tags\":\[\"lang\",\"ts\"\]' out"
run --store "$M" recall "typescript" --explain
check "recall finds the matching memory first, with its components" sh -c "[ $rc -eq 0 ] && head -n 1 out | grep -q '$id1' && grep -q 'relevance 1.0000' out"
run --store "$M" recall "typescript" --format json
check "recall counts the access" grep -q '"accessCount":2' out
check "recall --format json is valid JSON" valid_json_lines
run --store "$M" recall "typescript" --categories fact
check "recall --categories filters" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
# update: fields change, the rest stays; --tags keeps the other metadata keys
run --store "$M" update "$id2" --importance 0.3 --tags home,city --format json
check "update changes the importance and the tags" sh -c "[ $rc -eq 0 ] && jq -e '.importance == 0.3 and .metadata.tags == [\"home\",\"city\"] and .content == \"User lives in San Francisco\"' out >/dev/null"
run --store "$M" update "$id1" --tags x
run --store "$M" get "$id1" --format json
check "update --tags replaces the tags only" sh -c "jq -e '.metadata.tags == [\"x\"] and .category == \"preference\"' out >/dev/null"
run --store "$M" update "$id2" --expires 1h --category place
check "update prints the id" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = '$id2' ]"
run --store "$M" get "$id2" --format json
check "update set the expiry and the category" sh -c "jq -e '.expiresAt != null and .category == \"place\"' out >/dev/null"
run --store "$M" update "$id2" --expires never --format json
check "update --expires never clears it" sh -c "jq -e '.expiresAt == null' out >/dev/null"
run --store "$M" update "$id2"
check "update with nothing to change is a usage error" sh -c "[ $rc -eq 64 ] && grep -q 'nothing to change' err"
run --store "$M" update m0000000000000000 --importance 0.5
check "update of an unknown id exits 1" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run --store "$M" update "$id2" --importance 2
check "update refuses an importance out of 0..1" rc_is 64
# recall --since / --until: the creation time
S=$T/since
"$CAIRN" --store "$S" add "an early note about the cache" >/dev/null 2>&1
sleep 1
mid=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
sleep 1
"$CAIRN" --store "$S" add "a later note about the cache" >/dev/null 2>&1
run --store "$S" recall "note cache" --since "$mid"
check "recall --since keeps what was created after" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q 'later' out"
run --store "$S" recall "note cache" --until "$mid"
check "recall --until keeps what was created before" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q 'early' out"
run --store "$S" recall "note cache" --since 1h
check "recall --since takes a duration" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ]"
run --store "$S" recall "note cache" --since soon
check "recall --since refuses a bad time" rc_is 64
"$CAIRN" --store "$S" add "a tagged note about the cache" --tags ops,cache >/dev/null 2>&1
run --store "$S" recall "note cache" --tags cache,other
check "recall --tags keeps the memories holding one of the tags" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q 'tagged' out"
# list: without a query, oldest first, the newest N with --limit, no access
L=$T/list
for i in 1 2 3 4; do
    c=fact; [ $i -gt 2 ] && c=decision
    "$CAIRN" --store "$L" add "release note $i" --category $c >/dev/null 2>&1
done
"$CAIRN" --store "$L" add "release note 5" --namespace work >/dev/null 2>&1
run --store "$L" list
check "list prints every namespace's memories, oldest first" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 5 ] && head -n 1 out | grep -q 'note 1' && tail -n 1 out | grep -q 'note 5'"
run --store "$L" list --limit 2
check "list --limit N keeps the N newest and says how many more" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ] && head -n 1 out | grep -q 'note 4' && grep -q '3 more match' err"
run --store "$L" list --categories decision --format json
check "list --categories filters, --format json is the memories" sh -c "[ $rc -eq 0 ] && jq -e 'length == 2 and all(.category == \"decision\")' out >/dev/null"
run --store "$L" list --namespace work --format json
check "list --namespace keeps that namespace" sh -c "jq -e 'length == 1 and .[0].namespace == \"work\" and .[0].accessCount == 0' out >/dev/null"
run --store "$L" list --since "@9999999999999"
check "list --since in the future is empty" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
run --store "$L" list --limit many
check "list --limit must be a number" rc_is 64
# history: a memory's records, oldest first, from the log (also once removed)
H=$T/history
hid=$("$CAIRN" --store "$H" add "the staging database is read-only on Sundays" --namespace ops 2>/dev/null)
"$CAIRN" --store "$H" add "another memory of the same namespace" --namespace ops >/dev/null 2>&1
"$CAIRN" --store "$H" update "$hid" --importance 0.9 >/dev/null 2>&1
"$CAIRN" --store "$H" remove "$hid" >/dev/null 2>&1
"$CAIRN" --store "$H" clear --namespace ops --yes >/dev/null 2>&1
run --store "$H" history "$hid" --format json
check "history lists store, update, delete and the clear of its namespace, in order" sh -c "[ $rc -eq 0 ] && jq -e '[.[].type] == [\"memory\",\"memory.update\",\"memory.delete\",\"memory.clear\"] and (.[0].seq < .[1].seq)' out >/dev/null"
run --store "$H" history "$hid"
check "history (text) is one line per record" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 4 ] && grep -q 'memory.update' out"
run --store "$H" history m0000000000000000
check "history of an id the log never held exits 1" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
# errors: with --format json (or --json), one JSON object on stderr
run --store "$M" get m0000000000000000 --format json
check "an error with --format json is a JSON object on stderr" sh -c "[ $rc -eq 1 ] && [ ! -s out ] && jq -e '.error.code == \"CAIRN_ENOTFOUND\" and .error.command == \"get\" and .error.exit == 1 and (.error.message | length > 0)' err >/dev/null"
run --store "$M" recall x --k 0 --format json
check "a usage error with --format json is a JSON object too" sh -c "[ $rc -eq 64 ] && jq -e '.error.code == \"usage\" and .error.exit == 64' err >/dev/null"
run --store "$M" get m0000000000000000
check "without it the error stays one line of text" sh -c "[ $rc -eq 1 ] && grep -q '^cairn: get: .*(CAIRN_ENOTFOUND)$' err"
# Access statistics: recalls append to the side file ACCESS, not to the log
# (the bound is 20 records per 10,000 recalls of 2 memories; 300 here).
A=$T/access
run --store "$A" add "the CI cache lives in S3"
acc1=$(cat out)
run --store "$A" add "the CI runner uses docker"
run --store "$A" stats --json
acc_before=$(grep -o '"records":[0-9]*' out | cut -d: -f2)
i=0
while [ $i -lt 300 ] && "$CAIRN" --store "$A" recall "CI" >/dev/null 2>&1; do i=$((i + 1)); done
check "300 cairn recall runs of 2 memories all succeed" [ $i -eq 300 ]
run --store "$A" stats --json
acc_after=$(grep -o '"records":[0-9]*' out | cut -d: -f2)
check "300 recalls of 2 memories add at most 1 record to the log" [ $((acc_after - acc_before)) -le 1 ]
check "the recalls' accesses are in ACCESS: 64 + 600 x 24 bytes" [ "$(wc -c <"$A/ACCESS" | tr -d ' ')" -eq 14464 ]
run --store "$A" get "$acc1" --format json
check "get counts the accesses not folded yet" grep -q '"accessCount":300' out
run --store "$A" add "the CI badge is green"
run --store "$A" stats --json
check "the next add folds them: one record more than the add" sh -c "grep -q '\"records\":$((acc_before + 2))' out"
check "the fold leaves an empty ACCESS" [ "$(wc -c <"$A/ACCESS" | tr -d ' ')" -eq 64 ]
run --store "$A" get "$acc1" --format json
check "the folded count is the same" grep -q '"accessCount":300' out
run --store "$M" remove "$id2" --reason "moved"
check "remove exits 0" rc_is 0
run --store "$M" get "$id2"
check "a removed memory is not found (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run --store "$M" recall "San Francisco"
check "a removed memory is never recalled" sh -c "[ $rc -eq 0 ] && ! grep -q '$id2' out"
run --store "$M" dump --type memory.delete
check "the tombstone is in the log with its reason" grep -q '"reason":"moved"' out
run --store "$M" recall
check "recall without QUERY exits 64" rc_is 64
run --store "$M" context "typescript" --format xml
check "context --format xml prints the memories block" sh -c "[ $rc -eq 0 ] && head -n 1 out | grep -qx '<memories>' && grep -q '<memory category=\"preference\">User prefers TypeScript over JavaScript</memory>' out && tail -n 1 out | grep -qx '</memories>'"
run --store "$M" context "typescript" --max-tokens 2
check "context prints nothing when no memory fits --max-tokens" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
run --store "$M" forget --dry-run --mode aggressive --format json
check "forget --dry-run reports and keeps everything" sh -c "[ $rc -eq 0 ] && grep -qx '{\"pruned\":0,\"kept\":1}' out"
run --store "$M" add "fleeting note" --expires @1
run --store "$M" forget --mode gentle
check "forget prunes an expired memory" sh -c "[ $rc -eq 0 ] && grep -qx 'pruned: 1' out && grep -qx 'kept: 1' out"
run --store "$M" dump --type memory.delete
check "forget's tombstone names the mode" grep -q '"reason":"forget:gentle"' out
run --store "$M" stats --json
check "stats --json has the memory statistics" sh -c "[ $rc -eq 0 ] && grep -q '\"memories\":{\"total\":1,\"byCategory\":{\"preference\":1}' out"
run --store "$M" clear
check "clear without --yes exits 64" rc_is 64
run --store "$M" clear --yes
check "clear --yes exits 0" rc_is 0
run --store "$M" recall "typescript"
check "nothing is recalled after clear" sh -c "[ $rc -eq 0 ] && [ ! -s out ]"
run --store "$M" add "exported memory, with \"quotes\"" --namespace ex --tags t1
for fmt in json md csv; do
    run --store "$M" export --format $fmt
    cp out "$T/export.$fmt"
    run --store "$T/imp-$fmt" import --format $fmt "$T/export.$fmt"
    check "import --format $fmt of an export imports it" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 1' out"
    run --store "$T/imp-$fmt" export --format $fmt
    check "export --format $fmt round-trips exactly" cmp -s out "$T/export.$fmt"
done
run --store "$M" import --format json "$T/export.json"
check "importing what is there already skips it" sh -c "[ $rc -eq 0 ] && grep -qx 'skipped: 1' out"
printf '[{"content":"ok"},{"content":"bad","importance":7}]' >"$T/bad.json"
run --store "$M" import --format json "$T/bad.json"
check "a bad import fails naming the memory and stores nothing" sh -c "[ $rc -eq 1 ] && grep -q 'memory 2' err"
# An import is one commit: a writer killed by the file size limit (SIGXFSZ,
# or EFBIG where it is ignored) in the middle of writing 3000 memories leaves
# part of them in the log and none of them in the store, says so, and the
# same import then lands whole.
BIG=$T/bigimp
i=0
{
    printf '['
    while [ $i -lt 3000 ]; do
        [ $i -gt 0 ] && printf ','
        printf '{"id":"big%04d","content":"memory %d of a large import"}' $i $i
        i=$((i + 1))
    done
    printf ']'
} >"$T/big.json"
# (with vectors: records big enough for the limit to cut the import)
"$CAIRN" --store "$BIG" --embed-builtin add "stored before the import" >/dev/null 2>&1
(ulimit -f 2048 && exec "$CAIRN" --store "$BIG" import --format json "$T/big.json") >out 2>err
rc=$?
check "an import the file size limit cuts short fails" sh -c "[ $rc -ne 0 ] && ! grep -q 'imported:' out"
run --store "$BIG" stats --json
check "part of the cut import is in the log" jq_ok '.records > 100 and .records < 3001'
check "none of it is in the store, and stats counts its records as unfinished" \
    jq_ok '.memories.total == 1 and .memories.unfinished == .records - 1 and .memories.skipped == .memories.unfinished'
run --store "$BIG" get big0000
check "a memory of the cut import is not found, with a warning that says why" \
    sh -c "[ $rc -eq 1 ] && grep -q 'of an import or forget cut short by a crash or a full disk; none of it was applied' err"
run --store "$BIG" import --format json "$T/big.json"
check "the same import then lands whole" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 3000' out"
run --store "$BIG" stats --json
check "and the store holds it all" jq_ok '.memories.total == 3001'
mkdir -p "$T/mdir" && printf 'first note\n' >"$T/mdir/alpha.md" && printf 'second note\n' >"$T/mdir/beta.md" && printf 'x' >"$T/mdir/skip.txt"
run --store "$T/mdstore" import --from markdown "$T/mdir"
check "import --from markdown takes every .md file" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 2' out"
run --store "$T/mdstore" export --format json
check "a markdown memory keeps its name and path" sh -c "grep -q '\"name\":.*\"alpha\"' out && grep -q 'mdir/alpha.md' out"
# a FIFO named *.md must not hang the import (holding the writer lock), a
# file that cannot be read must not stop the files after it
MD=$T/mdmix
mkdir -p "$MD/xdir.md" && printf 'note one\n' >"$MD/a.md" && mkfifo "$MD/x.md" && ln -s "$MD/missing" "$MD/y.md" &&
    printf 'note four\n' >"$MD/z.md" && printf 'linked note\n' >"$T/linked.txt" && ln -s "$T/linked.txt" "$MD/w.md"
timeout 10 "$CAIRN" --store "$T/mdmix-store" import --from markdown "$MD/" >out 2>err
rc=$?
check "import --from markdown finishes past a FIFO (exit 1: a file failed)" rc_is 1
check "the summary counts what was imported, skipped and failed" sh -c "grep -qx 'imported: 3' out && grep -qx 'skipped: 2' out && grep -qx 'failed: 1' out"
check "the FIFO and the folder (named *.md) are skipped, a line each" sh -c "grep -qx 'cairn: import: $MD/x.md: not a regular file (a FIFO); skipped' err && grep -qx 'cairn: import: $MD/xdir.md: a folder (--recursive imports its files); skipped' err"
check "the dangling symlink failed, named with its reason" grep -qx "cairn: import: $MD/y.md: No such file or directory; failed" err
check "the failure is summed up on stderr" sh -c "grep -q '1 file(s) failed, the others were imported' err && [ \$(wc -l <err) -eq 4 ]"
run --store "$T/mdmix-store" export --format json
check "the notes before and after the FIFO are stored (and a symlinked one), paths without //" sh -c "grep -q 'note one' out && grep -q 'note four' out && grep -q 'linked note' out && grep -q '\"$MD/z.md\"' out && ! grep -q 'mdmix//' out"
timeout 10 "$CAIRN" --store "$T/mdmix-store" import --from markdown "$MD" --json >out 2>err
rc=$?
check "import --from markdown --json: exit 1 too" rc_is 1
check "import --from markdown --json lists skipped and failed files" jq_ok '.imported == 0 and .skipped == 5 and .failed == 1 and (.skippedFiles | length) == 5 and ([.skippedFiles[] | select(.reason == "already stored")] | length) == 3 and ([.skippedFiles[] | select(.file == "'"$MD/x.md"'")][0].reason == "not a regular file (a FIFO)") and .failures == [{"file": "'"$MD/y.md"'", "error": "No such file or directory", "code": "CAIRN_EIO"}]'
check "what is only already stored is not reported on stderr" sh -c "! grep -q 'already stored' err && grep -q 'x.md' err"
rm "$MD/y.md"
timeout 10 "$CAIRN" --store "$T/mdmix-store" import --from markdown "$MD" >out 2>err
rc=$?
check "skipped files alone are no failure (exit 0)" sh -c "[ $rc -eq 0 ] && grep -qx 'failed: 0' out && grep -qx 'skipped: 5' out"
# search finds a memory by its name (a markdown file's stem)
mkdir -p "$T/psmem" && printf 'Use @() to force a collection.\n' >"$T/psmem/powershell-arrays.md"
run --store "$T/psstore" import --from markdown "$T/psmem"
run --store "$T/psstore" search "PowerShell arrays"
check "search finds a memory by its name, as Search-Memory does" jq_ok '.Count == 1 and .Results[0].Name == "powershell-arrays" and .Results[0].Score == 1'
# Folders: named as skipped without --recursive, walked with it
mkdir -p "$T/mdtree/sub/deeper" "$T/mdtree/.hidden" && printf 'top note\n' >"$T/mdtree/top.md" &&
    printf 'sub note\n' >"$T/mdtree/sub/inner.md" && printf 'deep note\n' >"$T/mdtree/sub/deeper/deep.md" &&
    printf 'hidden note\n' >"$T/mdtree/.hidden/h.md" && ln -s "$T/mdtree" "$T/mdtree/sub/loop"
run --store "$T/mdtree-store" import --from markdown "$T/mdtree/"
check "without --recursive a folder is reported as skipped, not passed over" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 1' out && grep -qx 'skipped: 1' out && grep -qx 'cairn: import: $T/mdtree/sub: a folder (--recursive imports its files); skipped' err"
run --store "$T/mdtree-store2" import --from markdown "$T/mdtree/" --recursive
check "--recursive imports the files of every folder (not hidden ones; a symlink to a folder named, not followed)" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 3' out && grep -qx 'skipped: 1' out && grep -qx 'cairn: import: $T/mdtree/sub/loop: a symbolic link to a folder (not followed); skipped' err"
run --store "$T/mdtree-store2" export --format json
check "a nested note keeps its file stem as name and its path, without //" sh -c "grep -q '\"name\":.*\"deep\"' out && grep -q '\"$T/mdtree/sub/deeper/deep.md\"' out && ! grep -q '//' out"
run --store "$T/mdtree-store3" import --format json "$T/big.json" --recursive
check "--recursive is for --from markdown only" rc_is 64
mkdir -p "$T/mdbig" && head -c 1100000 /dev/zero | tr '\0' a >"$T/mdbig/a.md" && printf 'small note\n' >"$T/mdbig/b.md"
run --store "$T/mdbig-store" import --from markdown "$T/mdbig"
check "a file too large for a memory fails, the next is imported" sh -c "[ $rc -eq 1 ] && grep -qx 'imported: 1' out && grep -qx 'failed: 1' out && grep -q 'mdbig/a.md: content must be 1 byte..1 MiB; failed' err"
# ---- max-memories: the store setting, prunes told, imports refused, restore --------
L=$T/limit
run --store "$L" init --max-memories 3 --format json
check "init --max-memories sets the limit (json)" jq_ok '.max_memories == 3 and .durability == "batch"'
run --store "$L" config
check "config lists every setting, one per line" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 9 ] && grep -qx 'durability: batch' out && grep -qx 'batch-ms: 50' out && grep -qx 'segment-size: 67108864' out && grep -qx 'max-memories: 3' out && grep -qx 'retain: all' out && grep -qx 'labels: case-insensitive' out && grep -qx 'reflect-threshold: 150' out && grep -qx 'core-budget: 8000' out && grep -qx 'core-section-budget: 2000' out"
run --store "$L" config --format json
check "config --format json is one object of every setting" jq_ok '. == {"durability": "batch", "batch_ms": 50, "segment_size": 67108864, "max_memories": 3, "retain": "all", "labels": "case-insensitive", "reflect_threshold": 150, "core_budget": 8000, "core_section_budget": 2000}'
run --store "$L" config max-memories
check "config KEY prints its value alone" out_is 3
run --store "$L" config durability full
check "config refuses to change a setting fixed at init (exit 64)" sh -c "[ $rc -eq 64 ] && grep -q 'durability is chosen when the store is created' err"
run --store "$L" config colour blue
check "config of an unknown setting exits 64" sh -c "[ $rc -eq 64 ] && grep -q \"unknown setting 'colour'\" err"
run --store "$L" config max-memories lots
check "config max-memories of a non-number exits 64" rc_is 64
run --store "$T/nolimit" config
check "config without a store exits 1 naming cairn init" sh -c "[ $rc -eq 1 ] && grep -q \"run 'cairn init'\" err"
run --store "$L" add "limit one" --importance 0.9 --namespace work --meta '{"k":1}'
run --store "$L" add "limit two, the least important" --importance 0.1 --namespace work --meta '{"k":2}' --tags keep
low=$(cat out)
run --store "$L" add "limit three" --importance 0.8 --namespace work
check "an add within the limit says nothing of pruning" sh -c "[ $rc -eq 0 ] && [ ! -s err ]"
run --store "$L" add "limit four" --importance 0.7 --namespace work
check "an add past the limit is stored and tells the prune on stderr" sh -c "[ $rc -eq 0 ] && grep -Eq '^m[0-9a-f]{16}\$' out && grep -q '^cairn: add: pruned 1 memory of namespace \"work\" (maxMemories, limit 3;' err"
run --store "$L" get "$low"
check "the least important memory was the one pruned" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run --store "$L" dump --type memory.delete
check "its tombstone says maxMemories" sh -c "grep -q '\"id\":\"$low\",\"reason\":\"maxMemories\"' out"
run --store "$L" add "limit five" --importance 0.75 --namespace work --format json
check "add --format json reports the prune (count, reason, namespace, limit, kept)" jq_ok '.content == "limit five" and .pruned == {"count": 1, "reason": "maxMemories", "namespace": "work", "limit": 3, "kept": 3}'
check "and tells it on stderr too" err_has 'pruned 1 memory of namespace "work"'
run --store "$L" add "limit six, elsewhere" --namespace other --format json
check "add --format json without a prune has no pruned member" jq_ok 'has("pruned") | not'
run --store "$L" restore "$low"
check "restore into a namespace at the limit is refused, naming the setting (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'max-memories setting (3); nothing was written' err && grep -q 'cairn config max-memories N' err && grep -q CAIRN_EINVAL err"
run --store "$L" config max-memories 10
check "config max-memories N changes it, printing nothing" sh -c "[ $rc -eq 0 ] && [ ! -s out ] && [ ! -s err ]"
run --store "$L" config max-memories
check "the new limit is kept" out_is 10
run --store "$L" restore "$low" --format json
check "restore brings the pruned memory back with its id, content and metadata" jq_ok '.id == "'"$low"'" and .content == "limit two, the least important" and .namespace == "work" and .importance == 0.1 and .metadata == {"k": 2, "tags": ["keep"]}'
run --store "$L" get "$low"
check "the restored memory is found again" sh -c "[ $rc -eq 0 ] && grep -qx 'content: limit two, the least important' out"
run --store "$L" restore "$low"
check "restore of a live memory is refused (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'is live' err && grep -q CAIRN_EEXIST err"
run --store "$L" restore m0000000000000000
check "restore of an id the log never had exits 1 (CAIRN_ENOTFOUND)" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run --store "$L" restore
check "restore without ID exits 64" rc_is 64
run --store "$L" remove "$low" --reason "by hand"
run --store "$L" restore "$low"
check "a removed memory comes back too, printed as get prints it" sh -c "[ $rc -eq 0 ] && grep -qx 'id: $low' out && grep -qx 'metadata: {\"k\":2,\"tags\":\[\"keep\"\]}' out"
run --store "$L" stats --json
records_before=$(jq -r .records out 2>/dev/null)
printf '[' >"$T/lim.json"
i=0
while [ $i -lt 8 ]; do
    [ $i -gt 0 ] && printf ',' >>"$T/lim.json"
    printf '{"content":"bulk %d","namespace":"work"}' $i >>"$T/lim.json"
    i=$((i + 1))
done
printf ',{"content":"bulk elsewhere","namespace":"fresh"}]' >>"$T/lim.json"
run --store "$L" import --format json "$T/lim.json"
check "an import past the limit is refused, naming the setting and how to change it" sh -c "[ $rc -eq 1 ] && grep -q 'namespace \"work\" would hold 12 memories, past the store.s max-memories setting (10); nothing was written' err && grep -q 'cairn config max-memories N' err && grep -q CAIRN_EINVAL err"
run --store "$L" stats --json
check "the refused import wrote nothing (the log's record count is unchanged)" jq_ok ".records == $records_before"
run --store "$L" export --format json
check "no memory of the refused import is stored, in any namespace" sh -c "! grep -q 'bulk' out"
run --store "$L" config max-memories 0
run --store "$L" import --format json "$T/lim.json"
check "with no limit (0) the same import goes in whole" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 9' out"
run --store "$L" config --format json
check "0 is listed as the limit" jq_ok '.max_memories == 0'
mkdir -p "$T/limdir" && printf 'note a\n' >"$T/limdir/a.md" && printf 'note b\n' >"$T/limdir/b.md" && printf 'note c\n' >"$T/limdir/c.md"
run --store "$T/limmd" init --max-memories 2
run --store "$T/limmd" import --from markdown "$T/limdir"
check "import --from markdown past the limit is refused whole, naming the setting" sh -c "[ $rc -eq 1 ] && grep -q 'would hold 3 memories, past the store.s max-memories setting (2); nothing was written' err"
run --store "$T/limmd" stats --json
check "the refused markdown import stored nothing" jq_ok '.memories.total == 0'
run --store "$T/limmd" config max-memories 3
run --store "$T/limmd" import --from markdown "$T/limdir"
check "with room for it the same import goes in whole" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 3' out"
printf 'good note\n' >"$T/limdir/d.md" && printf 'bad \377 bytes\n' >"$T/limdir/e.md"
run --store "$T/limmd" config max-memories 0
run --store "$T/limmd" import --from markdown "$T/limdir"
check "a file that is not UTF-8 fails alone; the others go in (or are already there)" sh -c "[ $rc -eq 1 ] && grep -qx 'imported: 1' out && grep -qx 'skipped: 3' out && grep -qx 'failed: 1' out && grep -q 'limdir/e.md: .*UTF-8.*; failed' err"

# ---- the rule for text: valid UTF-8 without NUL, at every entry point -------------
X=$T/text
run --store "$X" add "a good memory"
run --store "$X" add "$(printf 'bad \377\376 bytes')"
check "add refuses text that is not UTF-8 (exit 1, names the field)" sh -c "[ $rc -eq 1 ] && grep -q 'content: is not valid UTF-8 at byte 4 (CAIRN_EINVAL)' err"
run --store "$X" add "fine" --meta '{"k":"a\u0000b"}'
check "add refuses a --meta with \\u0000 (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q -- '--meta: k: holds a NUL' err"
printf '[{"content":"ok"},{"content":"abc\\u0000hidden tail"}]' >"$T/nul.json"
run --store "$X" import --format json "$T/nul.json"
check "import refuses \\u0000 in a memory, naming it (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'memory 2: content: holds a NUL' err"
printf 'id,namespace,category,importance,createdAt,accessedAt,accessCount,expiresAt,metadata,content\r\n,,fact,0.5,,,,,,"abc\000hidden tail"\r\n' >"$T/nul.csv"
run --store "$X" import --format csv "$T/nul.csv"
check "import refuses a NUL byte in csv (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'memory 1 (csv row 2): content: holds a NUL byte' err"
printf '[{"role":"user","content":"hello"}]' >"$T/hello.json"
cat >"$T/llm-esc.sh" <<'SH'
#!/bin/sh
cat >/dev/null
printf '[{"content":"first fine memory"},{"content":"abc\\u0000hidden tail"}]\n'
SH
cat >"$T/llm-nul.sh" <<'SH'
#!/bin/sh
cat >/dev/null
printf '[{"content":"abc\000hidden tail"}]\n'
SH
chmod +x "$T/llm-esc.sh" "$T/llm-nul.sh"
run --store "$X" remember --llm-cmd "$T/llm-esc.sh" "$T/hello.json"
check "remember refuses an answer with \\u0000, storing nothing of it (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'LLM answer: item 2: content: holds a NUL' err"
run --store "$X" remember --llm-cmd "$T/llm-nul.sh" "$T/hello.json"
check "remember refuses an answer with a NUL byte (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'answer holds a NUL byte at byte 16' err"
run --store "$X" export --format json
check "after the refusals the export holds the good memory only" sh -c "[ \$(grep -c '\"content\"' out) -eq 1 ] && grep -q 'a good memory' out"
check "the export has no byte that is not UTF-8 (0xFF)" sh -c "! LC_ALL=C grep -q \"\$(printf '\\377')\" out"
check "the export is valid JSON" jq_ok 'length == 1'
printf '{"session":"s-nul","task":"t","outcome":"success","decisions":[{"chosen":"x\\u0000hidden"}]}' >"$T/nul-episode.json"
run --store "$X" episode new --file "$T/nul-episode.json"
check "episode new --file refuses \\u0000, naming the member (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'decisions\[0\].chosen: holds a NUL' err"
run --store "$X" episode get --session-id s-nul
check "and stores nothing" out_is null
printf '{"nodes":[{"id":"a","type":"event","label":"fine"},{"id":"b","type":"event","label":"bad \377"}]}' >"$T/bad-graph.json"
run --store "$X" import --from causal-graph "$T/bad-graph.json"
check "import --from causal-graph refuses a label that is not UTF-8 (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'nodes\[1\].label: is not valid UTF-8' err"
run --store "$X" causal status
check "and stores nothing (no node, nothing skipped at replay)" sh -c "[ $rc -eq 0 ] && grep -q '^nodes: *0' out && grep -q '^skipped records: *0' out"
# ---- search (the Search-Memory skill) and status ----------------------------------
S=$T/search
# Vectors only when asked for: a store stays lexical until a memory is
# stored with an embedder, whose vectors then make it every command's default.
V=$T/vecdefault
run --store "$V" add "a memory stored with no embedder named"
run --store "$V" stats
check "a new store stays lexical: add stores no vector" sh -c "[ $rc -eq 0 ] && grep -Eq '^vectors: +none \(lexical only\)$' out"
run --store "$V" merge
check "merge without vectors says how memories get them (CAIRN_EUNAVAIL)" sh -c "[ $rc -ne 0 ] && grep -q 'embed-builtin' err"
run --store "$V" --embed-builtin add "a memory stored with the built-in embedder"
run --store "$V" add "a later memory with no embedder named"
run --store "$V" stats --json
check "--embed-builtin stores a vector, and the store's vectors make later adds embed" jq_ok '.vectors.embedder == "cairn-hash-v1" and .vectors.count == 2'
run --store "$V" --embed-builtin --no-embed stats
check "--embed-builtin with --no-embed is a usage error (exit 64)" rc_is 64
# the first add names the built-in embedder,
# and the store's vectors make it the default for every later command
run --store "$S" --embed-builtin add "PowerShell arrays need @() to stay arrays" --meta '{"name":"powershell-arrays","path":"mem/powershell-arrays.md"}'
run --store "$S" add "git hooks run before each commit"
run --store "$S" stats --json
recs_before=$(grep -o '"records":[0-9]*' out)
run --store "$S" search "PowerShell arrays"
check "search prints Search-Memory's JSON" sh -c "[ $rc -eq 0 ] && grep -q '\"Query\":.*\"PowerShell arrays\"' out && grep -q '\"Count\":.*1' out && grep -q '\"Source\":.*\"Unified\"' out && grep -q '\"Name\":.*\"powershell-arrays\"' out && grep -q '\"Path\":.*\"mem/powershell-arrays.md\"' out && grep -q '\"Diagnostic\"' out"
want=$(printf '%s' "PowerShell arrays need @() to stay arrays" | sha256sum | cut -c1-64)
check "search's Hash is the SHA-256 of the content" grep -q "\"Hash\":.*\"$want\"" out
check "search output is valid JSON" jq_ok .Results
run --store "$S" stats --json
check "search writes nothing (no access records)" sh -c "grep -q '$recs_before' out"
run --store "$S" search "bad<query"
check "search refuses a query outside the pattern with the Error JSON, exit 1" sh -c "[ $rc -eq 1 ] && grep -q '\"Error\":.*Query' out"
run --store "$S" search "$(head -c 501 /dev/zero | tr '\0' a)"
check "search refuses a query over 500 characters" rc_is 1
run --store "$S" search "git" --max-results 101
check "search refuses --max-results over 100" sh -c "[ $rc -eq 1 ] && grep -q MaxResults out"
run --store "$S" search "git" --lexical-only --semantic-only
check "search refuses both switches" sh -c "[ $rc -eq 1 ] && grep -q 'Cannot specify both' out"
run --store "$S" search "git hoks" --semantic-only
check "search --semantic-only finds a misspelled query by its vector" sh -c "[ $rc -eq 0 ] && grep -q '\"Source\":.*\"Semantic\"' out && grep -q 'git hooks run' out"
run --store "$S" --no-embed search "git" --semantic-only
check "search --semantic-only fails without an embedder" sh -c "[ $rc -eq 1 ] && grep -q 'Semantic search is not available' out"
run --store "$T/novec" --no-embed add "stored without a vector"
run --store "$T/novec" search "stored" --semantic-only
check "search --semantic-only fails on a store without vectors" sh -c "[ $rc -eq 1 ] && grep -q 'has no vectors' out"
run --store "$S" recall "hoks comitt" --explain
check "recall --explain says which side found a memory" sh -c "[ $rc -eq 0 ] && grep -q 'source semantic' out"
# ---- --embed-cmd: an external embedder ----------------------------------------------
E=$T/embstore
cat >"$T/emb.sh" <<'SH'
#!/bin/sh
# a toy embedder: 3 values from the length of each line
while IFS= read -r l; do echo "[${#l}, 1, 0.5]"; done
SH
chmod +x "$T/emb.sh"
run --store "$E" --embed-cmd "$T/emb.sh" --embed-name toy add "first memory"
check "add with --embed-cmd stores the memory" rc_is 0
run --store "$E" status
check "status names the external embedder and its dimension" sh -c "grep -q '\"Embedder\":.*\"toy\"' out && grep -q '\"Dimensions\":.*3' out"
run --store "$E" add "second memory"
check "an add naming no embedder on a store of another embedder says to name it" sh -c "[ $rc -eq 1 ] && grep -q 'embedder \"toy\" (3 dimensions): name it with --embed-cmd' err"
run --store "$E" --embed-builtin add "second memory"
check "the built-in embedder is refused on a store of another embedder" sh -c "[ $rc -eq 1 ] && grep -q 'never mixed' err"
run --store "$E" --embed-cmd "exit 3" --embed-name toy add "third memory"
check "a failing --embed-cmd is an error that stores nothing" sh -c "[ $rc -eq 1 ] && grep -q 'status 3' err"
run --store "$E" --embed-cmd "echo '[1,2]'; cat >/dev/null" --embed-name toy add "fourth memory"
check "an answer of another length is an error" sh -c "[ $rc -eq 1 ] && grep -q 'not 3' err"
run --store "$E" --embed-cmd "cat >/dev/null; echo '[1,\"x\",3]'" --embed-name toy add "fifth memory"
check "an answer that is not numbers is an error" sh -c "[ $rc -eq 1 ] && grep -q 'not a number' err"
run --store "$E" --embed-cmd "sleep 5" --embed-name toy --embed-timeout 1 add "sixth memory"
check "a slow --embed-cmd times out" sh -c "[ $rc -eq 1 ] && grep -q 'embed-timeout' err"
# timed_run CMD...: run the tool with stdout and stderr through a pipe (as
# $(cairn ...) or `cairn | less` would), so a process left holding them keeps
# the pipeline waiting; ./out gets both, $rc the tool's status, $secs the time.
timed_run() {
    t0=$(date +%s)
    { "$CAIRN" "$@"; echo $? >"$T/rc"; } 2>&1 | cat >out
    secs=$(($(date +%s) - t0))
    rc=$(cat "$T/rc")
    : >err
}
printf '#!/bin/sh\ncat >/dev/null\nsleep 20\necho "[1, 2, 3]"\n' >"$T/slow-emb.sh"
chmod +x "$T/slow-emb.sh"
timed_run --store "$E" --embed-cmd "$T/slow-emb.sh" --embed-name toy --embed-timeout 1 add "seventh memory"
check "a timed-out --embed-cmd is killed with its children (the pipeline ends in $secs s)" sh -c "[ $rc -eq 1 ] && grep -q 'embed-timeout' out && [ $secs -lt 8 ]"
timed_run --store "$E" --embed-cmd "cat >/dev/null; echo '[4, 5, 6]'; sleep 20 &" --embed-name toy --embed-timeout 10 add "eighth memory"
check "an --embed-cmd that answers and exits is not kept waiting for a child holding its output ($secs s)" sh -c "[ $rc -eq 0 ] && [ $secs -lt 8 ]"
timed_run --store "$E" --embed-cmd "cat >/dev/null; echo '[1, 2, 3]'; exec >&- 2>&-; sleep 20" --embed-name toy --embed-timeout 1 add "twelfth memory"
check "an --embed-cmd that closes its output but does not exit times out ($secs s)" sh -c "[ $rc -eq 1 ] && grep -q 'did not exit within' out && [ $secs -lt 8 ]"
run --store "$E" --embed-cmd "cat >/dev/null; echo '[1, 2, 3] and more'" --embed-name toy add "ninth memory"
check "an answer with text after the vector is an error" sh -c "[ $rc -eq 1 ] && grep -q 'after the array' err"
run --store "$E" --embed-cmd "cat >/dev/null; echo '[1, 2, 3][4]'" --embed-name toy add "tenth memory"
check "an answer of two arrays on one line is an error" sh -c "[ $rc -eq 1 ] && grep -q 'after the array' err"
run --store "$E" --embed-cmd "cat >/dev/null; printf '[1, 2, 3] \\t\\r\\n'" --embed-name toy add "eleventh memory"
check "white space after the vector is fine" rc_is 0
run --store "$E" --no-embed export --format json
check "none of the failed adds stored anything" sh -c "grep -q 'first memory' out && grep -q 'eighth memory' out && grep -q 'eleventh memory' out && ! grep -q 'third memory\|fourth memory\|fifth memory\|sixth memory\|seventh memory\|ninth memory\|tenth memory\|twelfth memory' out"
# ---- remember (--llm-cmd) and merge ------------------------------------------------
R=$T/remember
printf '[{"role":"user","content":"I prefer TypeScript over JavaScript"}]' >"$T/conv.json"
cat >"$T/llm.sh" <<'SH'
#!/bin/sh
cat >/dev/null
printf '```json\n[{"content":"The user prefers TypeScript over JavaScript","category":"preference","importance":0.8}]\n```\n'
SH
chmod +x "$T/llm.sh"
run --store "$R" remember --llm-cmd "$T/llm.sh" "$T/conv.json"
check "remember stores a novel memory" sh -c "[ $rc -eq 0 ] && grep -qx 'stored: 1' out"
run --store "$R" remember --llm-cmd "$T/llm.sh" --explain "$T/conv.json"
check "remember skips what is already stored" sh -c "[ $rc -eq 0 ] && grep -qx 'stored: 0' out && grep -q 'already stored' out"
run --store "$R" remember --llm-cmd "cat >/dev/null; echo '[{\"content\":\"x\",\"importance\":7}]'" "$T/conv.json"
check "a malformed LLM answer is an error naming the field" sh -c "[ $rc -eq 1 ] && grep -q 'importance' err"
printf '#!/bin/sh\ncat >/dev/null\nsleep 20\necho "[]"\n' >"$T/slow-llm.sh"
chmod +x "$T/slow-llm.sh"
timed_run --store "$R" --embed-timeout 1 remember --llm-cmd "$T/slow-llm.sh" "$T/conv.json"
check "a timed-out --llm-cmd is killed with its children (the pipeline ends in $secs s)" sh -c "[ $rc -eq 1 ] && grep -q 'no answer within' out && [ $secs -lt 8 ]"
run --store "$R" remember "$T/conv.json"
check "remember without an LLM fails with Engram's error" sh -c "[ $rc -eq 1 ] && grep -q 'LLM function required' err"
run --store "$R" export --format json
check "the failed remember calls stored nothing" sh -c "[ \$(grep -c '\"content\"' out) -eq 1 ]"
G=$T/merge
run --store "$G" --embed-builtin add "the deploy failed on friday because of the database migration" --importance 0.3
run --store "$G" add "the deploy failed on friday because of a database migration" --importance 0.9
run --store "$G" add "lunch is at noon"
run --store "$G" merge --dry-run --explain
check "merge --dry-run reports the pair and changes nothing" sh -c "[ $rc -eq 0 ] && grep -qx 'merged: 1' out && grep -q 'would merge' out"
run --store "$G" merge --format json --explain
check "merge merges the pair the dry run found" sh -c "[ $rc -eq 0 ] && grep -q '\"merged\":1' out && grep -q 'higher importance' out"
run --store "$G" export --format json
check "merge keeps the more important memory with the history" sh -c "grep -q 'mergedFrom' out && [ \$(grep -c '\"namespace\"' out) -eq 2 ] && grep -q '\"importance\":.*0.9' out"
run --store "$G" merge --threshold 0
check "merge refuses a threshold of 0 (exit 64)" rc_is 64
run --store "$T/novec" merge
check "merge on a store without vectors fails" sh -c "[ $rc -eq 1 ] && grep -q 'none' err"
run --store "$S" search "git hooks" --lexical-only --format table
check "search --format table has the header and the Lexical source" sh -c "[ $rc -eq 0 ] && head -n 1 out | grep -q '^Name .*Source .*Score .*Preview' && grep -q 'Lexical' out"
run --store "$S" status
check "status reports both sides" sh -c "[ $rc -eq 0 ] && grep -q '\"Lexical\"' out && grep -q '\"Semantic\"' out && grep -q '\"MemoryCount\":.*2' out"

run --store "$M" context "typescript" --format yaml
check "context refuses an unknown format (exit 64)" rc_is 64

# --format json on init, log, verify; the memory index file
X=$T/fmt
run --store "$X" init --format json
check "init --format json prints the settings" sh -c "[ $rc -eq 0 ] && grep -q '\"durability\":\"batch\"' out && grep -q '\"segment_size\":67108864' out"
check "init --format json is valid JSON" jq_ok .store
run --store "$X" log --format json '{"a":1}' '{"b":2}'
check "log --format json prints one {seq} a record" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = '{\"seq\":1}
{\"seq\":2}' ]"
run --store "$X" log --format json --quiet '{"c":3}'
check "log --format json --quiet prints the count" out_is '{"count":1}'
run --store "$X" log --format yaml '{"c":3}'
check "log refuses an unknown --format (exit 64)" rc_is 64
run --store "$X" add "the deploy needs a canary first"
run --store "$X" add "rollback plans live in the runbook"
run --store "$X" checkpoint
check "checkpoint writes the memory index" sh -c "[ $rc -eq 0 ] && grep -q 'memory index: 2 memories up to seq 5' out && ls '$X'/mem-*.cmx >/dev/null"
check "checkpoint of a store with no graph records writes no graph file" sh -c "grep -q '^graph file: none (no graph records)' out && ! ls '$X'/graph-*.cgx >/dev/null 2>&1"
run --store "$X" verify --format json
check "verify --format json: ok, the index verified" sh -c "[ $rc -eq 0 ] && grep -q '\"ok\":true' out && grep -q '\"memory_index\":\"verified\"' out"
check "verify --format json is valid JSON" jq_ok '.problems | length == 0'
run --store "$X" stats --format json
check "stats shows the memory index" sh -c "grep -q '\"memory_index\":{\"bytes\":[1-9]' out && grep -q '\"memories\":2' out"
mx=$(ls "$X"/mem-*.cmx)
# the first memory's row strings (its category: the file keeps no content)
off=$(grep -boa "fact" "$mx" | head -n 1 | cut -d: -f1)
printf 'N' | dd of="$mx" bs=1 seek=$((off + 2)) conv=notrunc 2>/dev/null
run --store "$X" verify --format json
check "verify finds a damaged memory index (exit 2, named)" sh -c "[ $rc -eq 2 ] && grep -q '\"memory_index\":\"damaged\"' out && grep -q 'mem-.*cmx' out"
run --store "$X" recall canary
check "a recall that meets the damage fails, names the file, removes it" sh -c "[ $rc -ne 0 ] && grep -q 'damaged' err && ! ls '$X'/mem-*.cmx >/dev/null 2>&1"
run --store "$X" recall canary
check "the next command rebuilds from the log: nothing lost" sh -c "[ $rc -eq 0 ] && grep -q 'needs a canary first' out"
run --store "$X" verify --format json
check "verify --format json reports the access side file after recalls" sh -c "[ $rc -eq 0 ] && grep -q '\"access\":\"verified\"' out"
# one flipped byte in the first entry of ACCESS (offset 64 + 3)
printf 'Z' | dd of="$X/ACCESS" bs=1 seek=67 conv=notrunc 2>/dev/null
run --store "$X" verify
check "verify names damage in the access side file (exit 2, offset)" sh -c "[ $rc -eq 2 ] && grep -q '^ACCESS@64: CAIRN_ECHECKSUM: ' out"
run --store "$X" add "a store folds the side file and replaces a damaged one"
run --store "$X" verify
check "verify is clean again once a writer replaced the side file" rc_is 0
run --store "$X" checkpoint
printf 'X' | dd of="$(ls "$X"/mem-*.cmx)" bs=1 seek=20 conv=notrunc 2>/dev/null
run --store "$X" get nonexistent-id
check "a memory index damaged at open: the command warns, and goes on from the log" sh -c "grep -q 'warning: memory index: .*rebuilt from the log' err && grep -q 'no memory with id' err"

# --format json on remove and clear, --json on import
Y=$T/fmt2
run --store "$Y" add "to be removed soon"
rid=$(cat out)
run --store "$Y" remove "$rid" --format json
check "remove --format json names what it removed" out_is "{\"removed\":\"$rid\"}"
run --store "$Y" clear --namespace team --yes --format json
check "clear --format json names the namespace" out_is '{"cleared":"team"}'
printf '[{"id":"i1","content":"imported one","category":"fact","importance":0.5,"createdAt":1,"accessedAt":1,"accessCount":0,"expiresAt":null,"metadata":{}}]' >"$T/one.json"
run --store "$Y" import --format json "$T/one.json" --json
check "import --json counts as JSON" out_is '{"imported":1,"skipped":0}'

# ---- reflexion: episodes, the causal graph, patterns ---------------------------------
# field NAME: the value of a "NAME: value" line of ./out.
field() { sed -n "s/^$1: *//p" out | head -n 1; }
RF="--store $T/reflex"
for c in episode causal pattern; do
    run "$c" --help
    check "$c --help lists its subcommands" sh -c "[ $rc -eq 0 ] && grep -q '^usage: cairn $c ' out && [ ! -s err ]"
    run help "$c"
    check "help $c prints the same text" sh -c "[ $rc -eq 0 ] && $CAIRN $c --help | cmp -s - out"
done
for sub in "episode new" "episode get" "episode list" "episode decisions" "episode extract" \
    "causal node" "causal edge" "causal path" "causal update" "causal status" \
    "pattern add" "pattern list" "pattern anti"; do
    # shellcheck disable=SC2086
    run $sub --help
    check "$sub --help exits 0 with its usage" sh -c "[ $rc -eq 0 ] && head -n 1 out | grep -q '^usage: cairn $sub' && [ ! -s err ]"
    # shellcheck disable=SC2086
    run help $sub
    check "help $sub prints the same text" sh -c "[ $rc -eq 0 ] && $CAIRN $sub --help | cmp -s - out"
done
run --help
check "--help lists episode, causal and pattern" sh -c 'grep -q "^  episode " out && grep -q "^  causal " out && grep -q "^  pattern " out'
run $RF episode
check "episode without a subcommand exits 64 naming them" sh -c "[ $rc -eq 64 ] && [ \$(wc -l <err) -eq 1 ] && grep -q 'missing subcommand: new, get, list, decisions or extract' err"
run $RF causal frobnicate
check "an unknown subcommand exits 64" sh -c "[ $rc -eq 64 ] && grep -q \"^cairn: causal: unknown subcommand 'frobnicate'\" err"
run help pattern frobnicate
check "help of an unknown subcommand exits 64" rc_is 64
run $RF causal path --from-label a --to-label b --bogus
check "an unknown option of a subcommand exits 64 with one line" sh -c "[ $rc -eq 64 ] && [ \$(wc -l <err) -eq 1 ] && grep -q \"^cairn: causal path: unknown option '--bogus' (see 'cairn help causal path')\" err"
run $RF episode list
check "a read command without a store exits 1 naming cairn init" sh -c "[ $rc -eq 1 ] && grep -q \"no store at $T/reflex (run 'cairn init')\" err"

# episodes: new, get, list, decisions
DEC='[{"id":"d002","timestamp":"2026-01-01T17:10:00Z","type":"implementation","context":"Building it","chosen":"Module first","rationale":"Smaller steps","outcome":"success","effects":[]},{"id":"d001","timestamp":"2026-01-01T17:05:00Z","type":"design","context":"Choosing routing","chosen":"Serena-first","rationale":"Lower latency","outcome":"success","effects":["d002"]}]'
EVT='[{"id":"e001","timestamp":"2026-01-01T17:20:00Z","type":"commit","content":"Created module","caused_by":["d001"],"leads_to":[]}]'
MET='{"duration_minutes":45,"tool_calls":87,"errors":2,"recoveries":2,"commits":3,"files_changed":8}'
run $RF episode new --session-id 2026-01-01-session-126 --task "Implement feature X" --outcome success \
    --decisions "$DEC" --events "$EVT" --metrics "$MET" --lessons "Lesson 1,Lesson 2" --format json
check "episode new stores and prints the episode (json)" sh -c "[ $rc -eq 0 ] && grep -q '\"id\":\"episode-2026-01-01-session-126\"' out && grep -q '\"session\":\"2026-01-01-session-126\"' out && grep -q '\"outcome\":\"success\"' out"
check "episode new: --lessons a,b is a list, --metrics kept" sh -c "grep -q '\"lessons\":\[\"Lesson 1\",\"Lesson 2\"\]' out && grep -q '\"tool_calls\":87' out"
check "episode new: the output is one valid JSON object" jq_ok '.decisions | length == 2'
run $RF episode new --session-id 2026-01-01-session-126 --task "Something else" --outcome failure
check "episode new of an existing session exits 1 and says --force" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <err) -eq 1 ] && grep -q 'exists' err && grep -q -- '--force' err && grep -q CAIRN_EEXIST err"
run $RF episode get --session-id 2026-01-01-session-126
check "episode get (text) shows the first version" sh -c "[ $rc -eq 0 ] && [ '$(field outcome)' = success ] && [ '$(field task)' = 'Implement feature X' ] && grep -q '^decisions: *2' out && grep -q '^  - Lesson 2' out"
run $RF episode new --session-id 2026-01-02-session-127 --task "Fix the parser" --outcome failure --lessons '["Read the spec"]'
run $RF episode new --session-id 2026-01-02-session-127 --task "Fix the parser again" --outcome partial --force
check "episode new --force replaces the episode" sh -c "[ $rc -eq 0 ] && [ '$(field outcome)' = partial ] && [ '$(field task)' = 'Fix the parser again' ]"
run $RF episode get --session-id episode-2026-01-02-session-127 --format json
check "episode get accepts the episode id, prints the replacement" sh -c "[ $rc -eq 0 ] && grep -q '\"task\":\"Fix the parser again\"' out"
run $RF episode get --session-id 2026-12-31-session-999
check "episode get of an unknown session prints null, exit 0" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = null ] && [ ! -s err ]"
printf '{"session":"2025-06-01-session-1","timestamp":"2025-06-01T10:00:00Z","task":"Old work","outcome":"failure"}' |
    "$CAIRN" $RF episode new - >out 2>err
rc=$?
check "episode new - reads a whole episode from stdin" sh -c "[ $rc -eq 0 ] && echo '$(field timestamp)' | grep -q '^2025-06-01T10:00' && [ '$(field session)' = 2025-06-01-session-1 ]"
printf '{"session":"2025-06-02-session-2","timestamp":"2025-06-02T10:00:00Z","task":"From a file","outcome":"success"}' >"$T/ep-file.json"
run $RF episode new --file "$T/ep-file.json" --outcome partial --format json
check "episode new --file: options replace the file's members" sh -c "[ $rc -eq 0 ] && grep -q '\"task\":\"From a file\"' out && grep -q '\"outcome\":\"partial\"' out"
run $RF episode list
check "episode list: newest first, one line each" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 4 ] && head -n 1 out | grep -q 2026-01-02-session-127 && tail -n 1 out | grep -q 2025-06-01-session-1"
run $RF episode list --format json
check "episode list --format json is an array of 4" jq_ok 'length == 4 and .[0].session == "2026-01-02-session-127"'
run $RF episode list --outcome failure
check "episode list --outcome filters" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q 2025-06-01-session-1 out"
run $RF episode list --since 2026-01-01
check "episode list --since DATE drops older episodes" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ] && ! grep -q 2025-06 out"
run episode --store "$T/reflex" list --since 7d --max-results 1
check "episode list --since AGE --max-results 1 (--store before the subcommand)" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ]"
run $RF episode decisions --episode-id episode-2026-01-01-session-126
check "episode decisions: sorted by timestamp" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ] && head -n 1 out | grep -q 'd001' && tail -n 1 out | grep -q 'd002'"
run $RF episode decisions --episode-id 2026-01-01-session-126 --format json
check "episode decisions --format json (a session id works too)" jq_ok 'length == 2 and .[0].id == "d001" and .[0].chosen == "Serena-first"'
run $RF episode decisions --episode-id episode-nosuch --format json
check "episode decisions of an unknown episode: []" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = '[]' ]"
run $RF episode new --task t --outcome success
check "episode new without --session-id exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'missing --session-id' err"
run $RF episode new --session-id s --task t --outcome maybe
check "episode new with a bad --outcome exits 64 with ReflexionMemory's message" sh -c "[ $rc -eq 64 ] && grep -q \"parameter 'Outcome'. The argument 'maybe' does not belong to the set 'success,partial,failure'\" err"
run $RF episode new --session-id s --task t --outcome success --decisions '{"id":"d1"}'
check "episode new --decisions that is not an array exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'JSON array' err"
run --store "$T/rf-noted" episode new --session-id s --task t --outcome success --decisions '[{"id":"d1","outcome":"maybe"}]'
check "episode new keeps the episode, drops a bad decision and says so on stderr" sh -c "[ $rc -eq 0 ] && grep -q 'decisions\[0\]\.chosen: required; dropped' err"
run --store "$T/rf-noted" episode get --session-id s --format json
check "the episode is stored without the dropped decision" jq_ok '.session == "s" and (.decisions | length) == 0'
run $RF episode list --max-results 101
check "episode list --max-results 101 exits 64 (1-100)" sh -c "[ $rc -eq 64 ] && grep -q \"parameter 'MaxResults'\" err && grep -q '1-100' err"
run $RF episode list --since someday
check "episode list with a bad --since exits 64" rc_is 64
run $RF episode decisions
check "episode decisions without --episode-id exits 64" rc_is 64

# episode extract: a session log authored here
cat >"$T/2026-01-03-session-7.md" <<'MD'
# Session 7: Causal graph

**Date**: 2026-01-03
**Objective**: Add the causal graph to the memory engine
**Status**: Complete

## Decisions

**Decision**: Breadth-first search for paths
**Rationale**: The shortest path is the explanation

## Work Performed

- [x] Wrote the graph file format
- [x] Added the path query

## Lessons Learned

- Test the cycle case first
MD
run $RF episode extract "$T/2026-01-03-session-7.md" --dry-run --format json
check "episode extract --dry-run prints the episode" sh -c "[ $rc -eq 0 ] && grep -q '\"session\":\"2026-01-03-session-7\"' out && grep -q '\"outcome\":\"success\"' out"
run $RF episode get --session-id 2026-01-03-session-7
check "episode extract --dry-run stores nothing" out_is null
run $RF episode extract "$T/2026-01-03-session-7.md"
check "episode extract stores the episode of the log" sh -c "[ $rc -eq 0 ] && [ '$(field id)' = episode-2026-01-03-session-7 ] && [ '$(field outcome)' = success ] && grep -q 'causal graph' out && grep -q 'Test the cycle case first' out"
run $RF episode get --session-id 2026-01-03-session-7 --format json
check "the extracted episode is stored" sh -c "[ $rc -eq 0 ] && grep -q '\"task\":\"Add the causal graph to the memory engine\"' out"
run $RF episode extract "$T/2026-01-03-session-7.md"
check "episode extract twice without --force exits 1" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <err) -eq 1 ] && grep -q 'exists' err"
run $RF episode extract "$T/2026-01-03-session-7.md" --dry-run
check "episode extract --dry-run fails as the real run would" rc_is 1
run $RF episode extract "$T/2026-01-03-session-7.md" --force
check "episode extract --force replaces it" rc_is 0
run $RF episode extract "$T/no-such-session.md"
check "episode extract of an unreadable log exits 1" sh -c "[ $rc -eq 1 ] && grep -q 'cannot read session log' err"
run $RF episode extract
check "episode extract without SESSION_LOG exits 64" rc_is 64

# the causal graph: nodes, edges, paths
run $RF causal node --type decision --label "Choose routing" --episode-id episode-a
check "causal node adds a node" sh -c "[ $rc -eq 0 ] && [ '$(field frequency)' = 1 ] && [ '$(field type)' = decision ] && echo '$(field id)' | grep -Eq '^n[0-9a-f]{16}$'"
NA=$(field id)
run $RF causal node --type decision --label "Choose routing" --episode-id episode-b --format json
check "causal node of the same label: frequency 2, both episodes, same id" sh -c "[ $rc -eq 0 ] && grep -q '\"id\":\"$NA\"' out && grep -q '\"frequency\":2' out && grep -q '\"episodes\":\[\"episode-a\",\"episode-b\"\]' out && grep -q '\"success_rate\":1' out"
run $RF causal node --type outcome --label "Lower latency"
NB=$(field id)
run $RF causal node --type error --label "Cache timeout"
NC=$(field id)
run $RF causal node --type milestone --label "Unconnected island"
run $RF causal edge --source-id "$NA" --target-id "$NB" --type causes --weight 0.9
check "causal edge adds an edge" sh -c "[ $rc -eq 0 ] && [ '$(field weight)' = 0.9 ] && [ '$(field evidence_count)' = 1 ] && [ '$(field source)' = $NA ]"
run $RF causal edge --source-id "$NA" --target-id "$NB" --type causes --weight 0.5
check "causal edge again: weight is the running average 0.7, evidence_count 2" sh -c "[ $rc -eq 0 ] && [ '$(field weight)' = 0.7 ] && [ '$(field evidence_count)' = 2 ]"
run $RF causal edge --source-id "$NB" --target-id "$NC" --type enables --episode-id episode-a --format json
check "causal edge --weight defaults to 0.5 (json), --episode-id kept" sh -c "[ $rc -eq 0 ] && grep -q '\"weight\":0.5' out && grep -q '\"type\":\"enables\"' out && grep -q '\"evidence_count\":1' out && grep -q '\"episodes\":\[\"episode-a\"\]' out"
run $RF causal edge --source-id "$NC" --target-id "$NA" --type causes --weight 0.3
check "causal edge closing a cycle" rc_is 0
run $RF causal edge --source-id "$NA" --target-id n0000000000000000 --type causes
check "causal edge to an unknown node exits 1 (CAIRN_ENOTFOUND)" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run $RF causal edge --source-id "$NA" --target-id "$NB" --type causes --weight 1.5
check "causal edge --weight 1.5 exits 64 (0-1)" sh -c "[ $rc -eq 64 ] && grep -q \"parameter 'Weight'\" err"
run $RF causal edge --source-id "$NA" --target-id "$NB" --type blames
check "causal edge with an unknown type exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'causes,enables,prevents,correlates' err"
run $RF causal edge --source-id "$NA" --type causes
check "causal edge without --target-id exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'missing --target-id' err"
run $RF causal node --type opinion --label x
check "causal node with an unknown type exits 64" rc_is 64
run $RF causal node --type decision
check "causal node without --label exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'missing --label' err"
run $RF causal path --from-label routing --to-label TIMEOUT
check "causal path finds the path (labels are case-insensitive parts)" sh -c "[ $rc -eq 0 ] && [ '$(field found)' = true ] && [ '$(field depth)' = 2 ] && [ \$(grep -c '^.. n[0-9a-f]' out) -eq 3 ]"
run $RF causal path --from-label routing --to-label timeout --format json
check "causal path --format json: found, path, depth" jq_ok '.found == true and .depth == 2 and (.path | length) == 3 and .path[0].label == "Choose routing" and .path[2].label == "Cache timeout"'
run $RF causal path --from-label timeout --to-label latency
check "causal path through the cycle's closing edge" sh -c "[ $rc -eq 0 ] && [ '$(field found)' = true ] && [ '$(field depth)' = 2 ]"
run $RF causal path --from-label routing --to-label timeout --max-depth 1 --format json
check "causal path beyond --max-depth: not found, exit 0, the error" sh -c "[ $rc -eq 0 ] && grep -q '\"found\":false' out && grep -q 'No path found within depth 1' out && grep -q '\"path\":\[\]' out"
run $RF causal path --from-label routing --to-label island
check "causal path with no path at all: found false, exit 0" sh -c "[ $rc -eq 0 ] && [ '$(field found)' = false ] && grep -q '^error: No path found within depth 5' out"
run $RF causal path --from-label "no such label" --to-label timeout
check "causal path from an unknown label: Node not found, exit 0" sh -c "[ $rc -eq 0 ] && [ '$(field found)' = false ] && grep -q 'Node not found' out"
run $RF checkpoint --format json
check "checkpoint writes the graph file too (json names it)" jq_ok '.graph.nodes == 4 and .graph.edges == 3 and (.graph.file | test("^graph-[0-9a-f]{16}[.]cgx$"))'
check "the graph file is in the store" sh -c "ls '$T/reflex'/graph-*.cgx >/dev/null"
run $RF causal path --from-label routing --to-label timeout --format json
check "causal path over the graph file gives the same answer" jq_ok '.found == true and .depth == 2 and .path[2].label == "Cache timeout"'
run $RF causal path --from-label routing --to-label timeout --max-depth 11
check "causal path --max-depth 11 exits 64 (1-10)" sh -c "[ $rc -eq 64 ] && grep -q \"parameter 'MaxDepth'\" err && grep -q '1-10' err"
run $RF causal path --from-label routing --to-label timeout --max-depth 0
check "causal path --max-depth 0 exits 64" rc_is 64
run $RF causal path --to-label timeout
check "causal path without --from-label exits 64" rc_is 64

# patterns
run $RF pattern add --name "Lint bypass" --trigger "Unrelated lint errors" --action "Skip the hook with a reason" --success-rate 0.5
check "pattern add adds a pattern" sh -c "[ $rc -eq 0 ] && [ '$(field occurrences)' = 1 ] && [ '$(field success_rate)' = 0.5 ] && echo '$(field id)' | grep -Eq '^p[0-9a-f]{16}$'"
run $RF pattern add --name "Lint bypass" --trigger "other" --action "other" --success-rate 0 --format json
check "pattern add of the same name: occurrences 2, average rate, first trigger kept" sh -c "[ $rc -eq 0 ] && grep -q '\"occurrences\":2' out && grep -q '\"success_rate\":0.25' out && grep -q '\"trigger\":\"Unrelated lint errors\"' out && grep -Eq '\"last_used\":\"20[0-9-]+T[0-9:.]+Z\"' out"
run $RF pattern add --name "Tests first" --trigger "A new module" --action "Write the test first" --description "TDD" --episode-id episode-a
check "pattern add: --success-rate defaults to 1.0; --description, --episode-id" sh -c "[ $rc -eq 0 ] && [ '$(field success_rate)' = 1 ] && [ '$(field description)' = TDD ] && [ '$(field episodes)' = episode-a ]"
run $RF pattern add --name "Once bad" --trigger "x" --action "y" --success-rate 0.1
run $RF pattern list
check "pattern list: best first" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 3 ] && head -n 1 out | grep -q 'Tests first' && tail -n 1 out | grep -q 'Once bad'"
run $RF pattern list --min-success-rate 0.5 --format json
check "pattern list --min-success-rate" jq_ok 'length == 1 and .[0].name == "Tests first"'
run $RF pattern list --min-occurrences 2
check "pattern list --min-occurrences" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q 'Lint bypass' out"
run $RF pattern anti
check "pattern anti: low success and 2+ occurrences only" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q 'Lint bypass' out && ! grep -q 'Once bad' out"
run $RF pattern anti --max-success-rate 0.2 --format json
check "pattern anti --max-success-rate" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = '[]' ]"
run $RF pattern list --min-occurrences 1001
check "pattern list --min-occurrences 1001 exits 64 (1-1000)" sh -c "[ $rc -eq 64 ] && grep -q '1-1000' err"
run $RF pattern list --min-success-rate 1.1
check "pattern list --min-success-rate 1.1 exits 64" rc_is 64
run $RF pattern anti --max-success-rate -1
check "pattern anti --max-success-rate -1 exits 64" rc_is 64
run $RF pattern add --name n --trigger t --action a --success-rate lots
check "pattern add with a bad --success-rate exits 64" rc_is 64
run $RF pattern add --name n --action a
check "pattern add without --trigger exits 64" sh -c "[ $rc -eq 64 ] && grep -q 'missing --trigger' err"

# update and status
run $RF causal status --format json
check "causal status (json): ReflexionMemory's fields" jq_ok '.Episodes.Count == 5 and .Episodes.Path == "'"$T/reflex"'" and .CausalGraph.Nodes == 4 and .CausalGraph.Edges == 3 and .CausalGraph.Patterns == 3 and .Configuration.EpisodesPath != null and (.CausalGraph.Updated | test("^20"))'
run $RF causal update --dry-run
check "causal update --dry-run counts the episodes" sh -c "[ $rc -eq 0 ] && [ '$(field episodes_processed)' = 5 ] && [ '$(field nodes_added)' -gt 0 ]"
run $RF causal status
check "causal update --dry-run changes nothing" sh -c "[ $rc -eq 0 ] && grep -q '^nodes: *4$' out && grep -q '^episodes processed: *0$' out"
run $RF causal update --since 2026-01-02 --format json
check "causal update --since folds the newer episodes only" sh -c "[ $rc -eq 0 ] && grep -q '\"episodes_processed\":3' out && grep -q '\"nodes_added\":[1-9]' out"
run $RF causal update
check "causal update folds the rest" sh -c "[ $rc -eq 0 ] && [ '$(field episodes_processed)' = 2 ]"
run $RF causal update --format json
check "causal update twice: the second adds nothing" out_is '{"episodes_processed":0,"nodes_added":0,"edges_added":0,"patterns_added":0}'
run $RF causal status
check "causal status (text) after update" sh -c "[ $rc -eq 0 ] && grep -q '^episodes processed: *5$' out && grep -q '^episodes: *5$' out && ! grep -q '^nodes: *4$' out"
run $RF causal update --since sometime
check "causal update with a bad --since exits 64" rc_is 64
run $RF causal node --type decision --label "Choose routing" --format json
check "the graph persists across invocations (frequency 3)" sh -c "[ $rc -eq 0 ] && grep -q '\"frequency\":3' out"
run $RF verify
check "verify stays 0 after the reflexion commands" sh -c "[ $rc -eq 0 ] && grep -q '^ok: ' out"
run $RF verify --format json
check "verify --format json reports the graph file" sh -c "[ $rc -eq 0 ] && grep -q '\"graph\":' out"

# import --from causal-graph: a small graph in ReflexionMemory's schema
cat >"$T/causal-graph.json" <<'JSON'
{
  "version": "1.0",
  "updated": "2026-01-05T10:00:00+00:00",
  "nodes": [
    {"id": "a1", "type": "decision", "label": "Adopt draft PRs", "episodes": ["episode-x", "episode-y"], "created": "2026-01-05T09:00:00+00:00"},
    {"id": "a2", "type": "milestone", "label": "CI stays visible", "episodes": ["episode-x"], "created": "2026-01-05T09:00:01+00:00"},
    {"id": "a3", "type": "feeling", "label": "Not a node type", "episodes": ["episode-x"]}
  ],
  "edges": [
    {"source": "a1", "target": "a2", "type": "causes", "weight": 0.8, "evidence_count": 2, "episodes": ["episode-x", "episode-y"], "contributions": {"episode-x": 0.9, "episode-y": 0.7}},
    {"source": "a1", "target": "zz", "type": "causes", "weight": 0.5, "evidence_count": 1, "episodes": ["episode-x"], "contributions": {"episode-x": 0.5}}
  ],
  "patterns": [
    {"id": "b1", "name": "Draft first", "description": "Pattern from episode-x", "trigger": "Work in progress", "action": "Open a draft PR", "success_rate": 1.0, "occurrences": 2, "episodes": ["episode-x", "episode-y"], "contributions": {"episode-x": 1.0, "episode-y": 1.0}}
  ]
}
JSON
CG="--store $T/cg"
run $CG import --from causal-graph "$T/causal-graph.json"
check "import --from causal-graph counts nodes, edges, patterns, skipped" sh -c "[ $rc -eq 0 ] && grep -qx 'nodes: 2' out && grep -qx 'edges: 1' out && grep -qx 'patterns: 1' out && grep -qx 'skipped: 2' out"
check "and says no merge when there was none" sh -c "! grep -q '^merged' out"
printf '{"nodes":[{"id":"u","type":"event","label":"Same label"},{"id":"v","type":"event","label":"Same label"},{"id":"w","type":"event","label":"Other label"}],"edges":[],"patterns":[]}' >"$T/dup-graph.json"
run --store "$T/cgdup" import --from causal-graph "$T/dup-graph.json"
check "import --from causal-graph says how many nodes merged by label, and what the graph gained" sh -c "[ $rc -eq 0 ] && grep -qx 'nodes: 3' out && grep -qx 'merged: 1 (same label as another node; the graph gained 2)' out"
run --store "$T/cgdup" import --from causal-graph "$T/dup-graph.json" --json
check "a second import merges all of them into the nodes it made (json)" jq_ok '.nodes == 3 and .merged == 3'
run --store "$T/cgdup" causal status --format json
check "the graph holds the distinct labels only" jq_ok '.CausalGraph.Nodes == 2'
run $CG causal path --from-label "draft prs" --to-label visible --format json
check "the imported edge is a path" jq_ok '.found == true and .depth == 1'
run $CG causal node --type decision --label "Adopt draft PRs" --format json
check "an imported node keeps its frequency (2, then 3)" sh -c "[ $rc -eq 0 ] && grep -q '\"frequency\":3' out"
run $CG pattern list --min-occurrences 2
check "an imported pattern keeps its occurrences" sh -c "[ $rc -eq 0 ] && grep -q 'Draft first' out"
printf '{"nodes": 7}' >"$T/not-a-graph.json"
run $CG import --from causal-graph "$T/not-a-graph.json" --json
check "import --from causal-graph of a file outside the schema exits 1" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_EINVAL err && [ \$(wc -l <err) -eq 1 ]"
run $CG import --from causal-graph "$T/no-such-graph.json"
check "import --from causal-graph of a missing file exits 1" rc_is 1
run $CG verify
check "verify stays 0 after an import" rc_is 0

# import --from episodes: a folder of episode files
mkdir -p "$T/eps"
printf '{"session":"2026-02-01-session-10","timestamp":"2026-02-01T09:00:00Z","task":"First imported","outcome":"success","decisions":[],"events":[],"metrics":{},"lessons":["x"]}' >"$T/eps/episode-2026-02-01-session-10.json"
printf '{"id":"episode-2026-02-02-session-11","session":"2026-02-02-session-11","timestamp":"2026-02-02T09:00:00Z","task":"Second imported","outcome":"partial"}' >"$T/eps/episode-2026-02-02-session-11.json"
printf '{"session":"2026-02-03-session-12","task":"Bad one","outcome":"sideways"}' >"$T/eps/episode-2026-02-03-session-12.json"
printf 'not an episode' >"$T/eps/notes.txt"
EP="--store $T/epimp"
run $EP import --from episodes "$T/eps"
check "import --from episodes imports the good files, names the bad one, exits 1" sh -c "[ $rc -eq 1 ] && grep -qx 'imported: 2' out && grep -qx 'skipped: 0' out && grep -qx 'failed: 1' out && grep -q '^failure: episode-2026-02-03-session-12.json: ' out && [ \$(wc -l <err) -eq 1 ]"
run $EP episode list --format json
check "the imported episodes are listed" jq_ok 'length == 2 and .[0].session == "2026-02-02-session-11"'
mkdir -p "$T/eps-rep" && printf '{"session":"rep-1","task":"","outcome":"success","events":[{"type":"artifact","content":"a file"},{"type":"commit","content":"abc1234"}]}' >"$T/eps-rep/episode-rep-1.json"
run --store "$T/eps-rep-store" import --from episodes "$T/eps-rep"
check "import --from episodes keeps an episode with unusable parts, says what it dropped or defaulted" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 1' out && grep -qx 'repaired: 1 (parts dropped or defaulted)' out && grep -q 'episode-rep-1.json: events\[0\].type: must be tool_call, commit, error, milestone, test or handoff; dropped' err && grep -q 'episode-rep-1.json: task: empty; the session id stands for it' err"
rm "$T/eps/episode-2026-02-03-session-12.json"
run $EP import --from episodes "$T/eps" --json
check "import --from episodes again skips existing sessions" sh -c "[ $rc -eq 0 ] && [ \"\$(cat out)\" = '{\"imported\":0,\"repaired\":0,\"skipped\":2,\"failed\":0,\"failures\":[]}' ]"
run $EP import --from episodes "$T/eps" --force
check "import --from episodes --force replaces them" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 2' out"
run $EP import --from episodes "$T/no-such-dir"
check "import --from episodes of a missing folder exits 1" rc_is 1
# cairn mcp: a last message without its newline is still answered
printf '{"jsonrpc":"2.0","id":41,"method":"ping"}' | "$CAIRN" --store "$T/mcp-eof" mcp >out 2>err
rc=$?
check "mcp answers a last message that ends without a newline" sh -c "[ $rc -eq 0 ] && grep -qx '{\"jsonrpc\":\"2.0\",\"id\":41,\"result\":{}}' out"
# A progress bar on a terminal (script(1) gives it one), none on a pipe.
script -qec "'$CAIRN' --store '$T/epbar' import --from episodes '$T/eps'" /dev/null >bar.out 2>&1
check "import --from episodes draws a progress bar on a terminal, then clears it" sh -c "grep -q 'episodes \[#*  *\] *[0-9]*% (0/2)' bar.out && grep -q '100% (2/2)' bar.out && grep -q 'imported: 2' bar.out"
run --store "$T/epbar2" import --from episodes "$T/eps"
check "and none when stderr is not a terminal" sh -c "[ $rc -eq 0 ] && [ ! -s err ] && ! grep -q '%' out"
# One long import (one commit) shows how long it has run, on a terminal only.
seq 1 3000 | sed 's/.*/{"content":"bulk memory number &"}/' > "$T/bulk.jsonl"
script -qec "'$CAIRN' --store '$T/bulkbar' import --format jsonl '$T/bulk.jsonl'" /dev/null >bar.out 2>&1
check "a single-file import shows its time on a terminal, then clears it" sh -c "grep -q 'importing (one commit): [0-9]*\.[0-9] s' bar.out && grep -q 'imported: 3000' bar.out"
run --store "$T/bulkbar2" import --format jsonl "$T/bulk.jsonl"
check "and nothing when stderr is not a terminal" sh -c "[ $rc -eq 0 ] && [ ! -s err ] && grep -qx 'imported: 3000' out"
mkdir -p "$T/epfifo" && mkfifo "$T/epfifo/a-fifo.json" && cp "$T/eps/episode-2026-02-01-session-10.json" "$T/epfifo/"
timeout 10 "$CAIRN" --store "$T/epfifo-store" import --from episodes "$T/epfifo" >out 2>err
rc=$?
check "import --from episodes passes over a FIFO named *.json (no hang), saying so" sh -c "[ $rc -eq 0 ] && grep -qx 'imported: 1' out && grep -qx 'skipped: 1' out && grep -q 'a-fifo.json: not a regular file (a FIFO); skipped' err"
run $EP import --from markdown "$T/eps" --force
check "import --force outside --from episodes exits 64" rc_is 64
run $EP import --from graphs "$T/eps"
check "import --from with an unknown source exits 64" rc_is 64
run $EP verify
check "verify stays 0 after importing episodes" rc_is 0

# a graph file: written when a writer closes after 1000+ graph records
BIG="--store $T/big"
{
    printf '{"version":"1.0","updated":"2026-01-05T10:00:00+00:00","nodes":['
    seq 1 1100 | awk '{printf "%s{\"id\":\"x%d\",\"type\":\"event\",\"label\":\"event number %d\",\"episodes\":[\"episode-big\"]}", (NR > 1 ? "," : ""), $1, $1}'
    printf '],"edges":[],"patterns":[]}'
} >"$T/big-graph.json"
run $BIG import --from causal-graph "$T/big-graph.json" --json
check "import of 1100 nodes" out_is '{"nodes":1100,"merged":0,"edges":0,"patterns":0,"skipped":0}'
run $BIG causal status --format json
check "causal status names the graph file written at close" jq_ok '.CausalGraph.File != null and .CausalGraph.Path == "'"$T/big/"'" + .CausalGraph.File and .CausalGraph.Nodes == 1100 and .CausalGraph.RecordsAfter == 0'
run $BIG verify
check "verify checks the graph file" sh -c "[ $rc -eq 0 ] && grep -q 'graph file verified' out"
gx=$(ls "$T/big" | grep '\.cgx$' | head -n 1)
if [ -n "$gx" ]; then
    size=$(wc -c <"$T/big/$gx" | tr -d ' ')
    printf 'Z' | dd of="$T/big/$gx" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
    run $BIG verify --format json
    check "verify finds a damaged graph file (exit 2, named)" sh -c "[ $rc -eq 2 ] && grep -q '\"graph\":\"damaged\"' out && grep -q '$gx' out"
    check "verify names where in the graph file (the damaged section's offset)" jq_ok '[.problems[] | select(.file == "'"$gx"'") | .offset] | length == 1 and .[0] > 512 and .[0] <= '"$((size / 2))"
    run $BIG causal path --from-label "number 10" --to-label "number 20"
    check "a damaged graph file is set aside: the graph comes from the log" sh -c "[ $rc -eq 0 ] && grep -q '^found: false' out"
    run $BIG causal node --type event --label "event number 7" --format json
    check "and nothing is lost (frequency 2)" sh -c "[ $rc -eq 0 ] && grep -q '\"frequency\":2' out"
else
    notok "a graph file after importing 1100 nodes (no .cgx file in $T/big)"
fi

# ---- symlinks and temp files in the store directory ---------------------------
H="--store $T/hyg"
run $H add "hygiene memory one"
check "a memory for the store-directory checks" rc_is 0
printf 'keep me\n' >"$T/hyg-victim"
rm -f "$T/hyg/LOCK"
ln -s "$T/hyg-victim" "$T/hyg/LOCK"
run $H add "hygiene memory two"
check "a writer refuses a LOCK that is a symlink (exit 1, LOCK named)" sh -c "[ $rc -eq 1 ] && grep -q 'LOCK is a symlink; refusing to follow it' err"
check "the file LOCK points to keeps its bytes" sh -c "[ \"\$(cat '$T/hyg-victim')\" = 'keep me' ]"
rm -f "$T/hyg/LOCK"
head -c 3000 /dev/zero >"$T/hyg/mem-0000000000000001.cmx.tmp"
run $H verify
check "verify notes a stale temp file with its size, and passes" sh -c "[ $rc -eq 0 ] && grep -q '^note: mem-0000000000000001.cmx.tmp (3000 bytes): ' out && grep -q '^ok: 1 records' out"
run $H verify --format json
check "verify --format json lists it under temp_files, ok" jq_ok '.ok == true and .temp_files == [{"file":"mem-0000000000000001.cmx.tmp","bytes":3000,"in_flight":false}]'
run $H stats
check "stats lists the temp file with its size" grep -q '^temp file: *mem-0000000000000001.cmx.tmp, 3000 bytes' out
run $H stats --json
check "stats --json lists it under temp_files" jq_ok '.temp_files == [{"file":"mem-0000000000000001.cmx.tmp","bytes":3000,"in_flight":false}]'
run $H add "hygiene memory two"
check "the next writer open removes it" sh -c "[ $rc -eq 0 ] && [ ! -e '$T/hyg/mem-0000000000000001.cmx.tmp' ]"
run $H verify
check "verify has no note after that" sh -c "[ $rc -eq 0 ] && ! grep -q '^note:' out && grep -q '^ok: 2 records' out"

# ---- derived files bound to their log; records lost at the tail ------------------
# cut_before SEQ FILE: truncate a log segment where record SEQ starts (the
# records' u32 lengths walked from offset 64 with od)
cut_before() {
    off=64
    n=$(od -An -tu8 -j 32 -N8 "$2" | tr -d ' ') # the segment's base_seq
    while [ "$n" -lt "$1" ]; do
        len=$(od -An -tu4 -j "$off" -N4 "$2" | tr -d ' ')
        off=$((off + len))
        n=$((n + 1))
    done
    truncate -s "$off" "$2"
}
B="--store $T/bind"
run $B init
for i in 1 2 3 4 5 6 7 8 9 10; do "$CAIRN" $B add "alpha memory A$i" >/dev/null 2>&1; done
run $B checkpoint
cut_before 6 "$T/bind/0000000000000001.log"
run $B verify
check "verify reports records cut from the end after a checkpoint (exit 2)" sh -c "[ $rc -eq 2 ] && grep -q 'records 6..10 are lost' out"
run $B stats
check "stats names the lost records" grep -q '^lost records: *6..10' out
run $B add "bravo memory B1"
b1=$(cat out)
check "the next writer warns that it retired them" sh -c "[ $rc -eq 0 ] && grep -q 'records 6..10 are lost (their numbers are retired' err"
run $B dump --from-seq 6
check "the new memory takes seq 11, not a number handed out before" sh -c "[ \$(wc -l <out) -eq 1 ] && grep -q '\"seq\":11,' out"
run $B recall alpha --k 20
check "recall finds only what the log holds (A1..A5)" sh -c "[ \$(grep -c 'alpha memory' out) -eq 5 ] && ! grep -q 'alpha memory A[6-9]' out"
run $B get "$b1"
check "get finds the new memory" sh -c "[ $rc -eq 0 ] && grep -q 'bravo memory B1' out"
run $B verify
check "verify is clean once a writer retired them" rc_is 0
for st in f1 f2; do
    run --store "$T/$st" init
    for i in 1 2 3; do "$CAIRN" --store "$T/$st" add "$st memory $i" >/dev/null 2>&1; done
    run --store "$T/$st" checkpoint
done
cp "$T/f2/mem-0000000000000003.cmx" "$T/f1/mem-0000000000000003.cmx"
sleep 1.1 # past the second a reader waits for a file just put in place (a merge's)
run --store "$T/f1" verify
check "another store's index file copied in is named by verify (exit 2)" sh -c "[ $rc -eq 2 ] && grep -q 'mem-0000000000000003.cmx is not the file the MANIFEST lists' out"
run --store "$T/f1" recall f2
check "and never answers: recall finds nothing of it" sh -c "[ $rc -eq 0 ] && ! grep -q 'f2 memory' out"
run --store "$T/f1" add "f1 memory 4"
check "a writer lists it as it is, and its binding refuses it: another store's" sh -c "[ $rc -eq 0 ] && grep -q 'belongs to another store' err"
run --store "$T/f1" verify
check "verify is clean after" rc_is 0
run --store "$T/miss" init --segment-size 4096
for i in $(seq 40); do "$CAIRN" --store "$T/miss" log '{"pad":"0123456789012345678901234567890123456789012345678901234567890123456789"}' >/dev/null 2>&1; done
rm "$T/miss/0000000000000001.seg"
run --store "$T/miss" verify
check "verify names a missing sealed segment (exit 2), not 'no store'" sh -c "[ $rc -eq 2 ] && grep -q 'missing: open 0000000000000001.seg' err && ! grep -q 'no store' err"
run --store "$T/miss" stats
check "stats names the missing segment too (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q '0000000000000001.seg' err && ! grep -q 'no store' err"
run --store "$T/miss" dump
check "dump names it too" sh -c "[ $rc -eq 1 ] && grep -q '0000000000000001.seg' err"

# ---- retention, compaction, purge -------------------------------------------
R="--store $T/ret"
run $R init --retain forever
check "init --retain of a bad policy exits 64, naming the forms" sh -c "[ $rc -eq 64 ] && grep -q 'live:GRACE' err && [ ! -e '$T/ret/MANIFEST' ]"
run $R init --retain live:0 --format json
check "init --retain live:0 is stored" jq_ok '.retain == "live:0"'
run $R config retain live:36h
run $R config retain
check "config retain changes it, shown in the largest whole unit" out_is "live:36h"
run $R config retain live:5
check "config retain of a grace without a unit exits 64" rc_is 64
run $R config retain live:0
for i in 1 2 3 4 5 6 7 8 9 10; do "$CAIRN" $R add "retained memory number $i about compaction" >/dev/null 2>&1; done
"$CAIRN" $R export --format json >ids.json 2>/dev/null
gone=$(jq -r '.[0:6][].id' ids.json 2>/dev/null || jq -r '.memories[0:6][].id' ids.json)
kept=$(jq -r '.[6].id' ids.json 2>/dev/null || jq -r '.memories[6].id' ids.json)
for id in $gone; do "$CAIRN" $R remove "$id" >/dev/null 2>&1; done
first=$(echo "$gone" | head -n 1)
run $R compact --dry-run --format json
check "compact --dry-run names the 12 records of the 6 removed memories" jq_ok '.dry_run == true and .dropped_records == 12 and .memories_dropped == 6'
run $R dump --type memory
check "a dry run changes nothing" sh -c "[ \$(wc -l <out) -eq 10 ]"
run $R compact --format json
check "compact drops them: 26 records become 4 live ones and one hole (and its run of deletes)" jq_ok '.dropped_records == 12 and .memories_dropped == 6 and .records_before == 16 and .records_after == 6 and .rolled == true'
run $R dump --type log.compacted
check "each run of dropped records is one log.compacted record saying what it stood for" sh -c "[ \$(wc -l <out) -eq 2 ] && grep -q '\"records\":6' out && grep -q '\"why\":\"retain live:0\"' out"
run $R recall "retained memory compaction" --k 10
check "recall after compaction finds the 4 live memories, none of the dropped" sh -c "[ $rc -eq 0 ] && [ \$(grep -c 'retained memory' out) -eq 4 ]"
run $R stats
check "stats still counts the 6 removed memories" out_has "(6 deleted)"
run $R restore "$first"
check "restore of a dropped memory fails (exit 1), not found" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run $R verify
check "verify is clean after compaction" rc_is 0
run $R compact
check "compact again drops nothing more" sh -c "[ $rc -eq 0 ] && grep -q '^dropped: 0 records' out"
run $R add "the password is hunter2 for the staging box"
secret=$(sed -n 's/.*(\(m[0-9a-f]*\)).*/\1/p' out | head -n 1)
[ -n "$secret" ] || secret=$("$CAIRN" $R recall hunter2 --format json | jq -r '.[0].id')
run $R checkpoint
run $R purge "$secret" --format json
check "purge removes a live memory's records and says so" jq_ok '.records == 1 and .was_live == true and .segments >= 1'
check "after purge no file of the store holds its text" sh -c "! grep -rq hunter2 '$T/ret'"
run $R dump --type memory.purge
check "a memory.purge record names what was purged" sh -c "[ \$(wc -l <out) -eq 1 ] && grep -q '$secret' out"
run $R get "$secret"
check "a purged memory is gone" rc_is 1
run $R purge "$secret"
check "purge again finds nothing left and says so (exit 0)" sh -c "[ $rc -eq 0 ] && grep -q ': 0 records' out"
run $R purge m0000000000000000
check "purge of an id the log never held exits 1 (not found)" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_ENOTFOUND err"
run $R purge "not an id!"
check "purge of something that is not an id exits 1 (invalid)" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_EINVAL err"
run $R get "$kept"
check "purge leaves the other memories" rc_is 0
run $R verify
check "verify is clean after purge" rc_is 0
A="--store $T/all"
run $A init
"$CAIRN" $A add "kept forever" >/dev/null 2>&1
all_id=$("$CAIRN" $A recall "kept forever" --format json | jq -r '.[0].id')
"$CAIRN" $A remove "$all_id" >/dev/null 2>&1
run $A compact
check "under retain all compact drops nothing and says how to change it" sh -c "[ $rc -eq 0 ] && grep -q 'every record is kept' out && grep -q '^dropped: 0 records' out"
run $A restore "$all_id"
check "and restore still brings it back" rc_is 0

# ---- recall's metadata filters ---------------------------------------------
W="--store $T/where"
run $W init
for i in 1 2 3; do "$CAIRN" $W add "deploy step $i" --meta "{\"cycle\":$i,\"refs\":[$i,9]}" >/dev/null 2>&1; done
run $W recall deploy --where 'cycle>=2' --where refs=9 --format json
check "recall --where keeps the memories whose metadata passes every filter" jq_ok '[.[].content] | sort == ["deploy step 2","deploy step 3"]'
run $W recall deploy --where 'cycle>x'
check "recall --where with a lone > is a usage error" sh -c "[ $rc -eq 64 ] && grep -q 'no operator' err"
run $W recall deploy --where 'cycle>=x'
check "recall --where >= wants a number" sh -c "[ $rc -eq 1 ] && grep -q 'not a number' err"

# ---- the cognitive tiers --------------------------------------------------------
TS="--store $T/tiers"
run $TS init
run $TS stream add "Fixed the headless mode test" --cycle 281 --role engineering --importance 8 --issue 84 --tags ci
check "stream add prints the entry's id" sh -c "[ $rc -eq 0 ] && grep -q '^added .* (cycle 281, engineering)' out"
run $TS stream add "Fixed the headless mode test" --cycle 282 --role qa --format json
check "stream add keeps a text repeated in another cycle" jq_ok '.existed == false and .entry.cycle == 282 and .entry.importance == 5 and .entry.tokenEstimate == 7'
run $TS stream add "x" --cycle 1 --role qa --importance 11
check "stream add refuses importance 11 (usage)" rc_is 64
run $TS stream list --cycles 281..282 --format json
check "stream list gives every entry of the range by cycle" jq_ok '[.[].cycle] == [281,282]'
run $TS stream list --cycles 5..9 --format json
check "stream list of a range without cycles is CYCLE_NOT_FOUND, and says what there is" sh -c "[ $rc -eq 1 ] && jq -e '.error.kind == \"CYCLE_NOT_FOUND\" and .error.recoverable == true' err >/dev/null && grep -q '281..282' err"
run $TS stream list --cycles 9..5 --format json
check "stream list of an inverted range is INVALID_QUERY" sh -c "[ $rc -eq 1 ] && jq -e '.error.kind == \"INVALID_QUERY\" and .error.code == \"CAIRN_EQUERY\"' err >/dev/null"
run $TS stream list --cycles 9-5
check "stream list of a malformed range is INVALID_QUERY" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_EQUERY err"
run $TS stream search headless --issue 84 --format json
check "stream search filters by issue" jq_ok 'length == 1 and .[0].role == "engineering" and (.[0].score > 0)'
run $TS stream search headless --role qa --min-importance 6 --format json
check "stream search filters by role and importance" jq_ok 'length == 0'
run $TS core set sprint '{"goal":"demo"}'
check "core set sprint" sh -c "[ $rc -eq 0 ] && grep -q '^set sprint' out"
run $TS core set roleState "merging #145" --role qa
check "core set roleState of a role" rc_is 0
run $TS core set roleState "merging"
check "core set roleState without --role is INVALID_QUERY" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_EQUERY err"
run $TS core append lessons "L1: compress early" --format json
lesson=$(jq -r '.item.id' out 2>/dev/null)
check "core append gives the item's id" sh -c "[ $rc -eq 0 ] && [ -n '$lesson' ]"
run $TS core show --format json
check "core show holds the sections" jq_ok '.sections.sprint.goal == "demo" and .sections.roleState.qa == "merging #145" and (.sections.lessons | length) == 1 and .tokens.budget == 8000'
run $TS core remove lessons "$lesson"
check "core remove takes the item out" sh -c "[ $rc -eq 0 ] && grep -q '^removed' out"
run $TS restore "$lesson"
check "a removed core item comes back with restore" rc_is 0
run $TS tiers reflect "headless tests pay off" --cycle 282 --outcome success
check "tiers reflect records a reflection" sh -c "[ $rc -eq 0 ] && grep -q '^recorded reflection' out"
run $TS tiers stats --format json
check "tiers stats reports the stream, core and last reflection" jq_ok '.recall.entryCount == 2 and .recall.oldestCycle == 281 and .recall.newestCycle == 282 and .lastReflection.cycle == 282 and .lastReflection.importanceAccumulated == 0 and .core.tokenUsage > 0'
run $TS tokens "hello world!"
check "tokens prints the estimate" out_is 3
run $TS import --from ada "$HERE/data/ada" --json
check "import --from ada takes bank.md, stream.jsonl and rotation.json" jq_ok '.core.changed == 17 and .stream.added == 4 and .reflections.added == 3'
check "import --from ada names each part no tier takes" sh -c "grep -q 'Project Metrics' err && grep -q 'history\\[3\\]: no reflection in it; skipped' err"
run $TS import --from ada "$HERE/data/ada" --json
check "a second import --from ada adds nothing" jq_ok '.core.changed == 0 and .stream.added == 0 and .reflections.added == 0 and .stream.existed == 4'
run $TS stream list --cycles 281..284 --role qa --format json
check "the imported stream keeps ids and cycles" jq_ok 'length == 2 and .[1].id == "b43d808b-1537-4ac3-9972-7c7ef666613b" and .[1].cycle == 282'
run $TS stream search "Coordinator" --scope repo:acme/api --format json
check "a repo's stream search sees the global stream" jq_ok 'length == 1 and .[0].scope == "global"'
run $TS stream search "Coordinator" --scope repo:acme/api --only-scope --format json
check "--only-scope keeps to the repo" jq_ok 'length == 0'

# ---- archival memory ---------------------------------------------------------------
AR="--store $T/arch"
run $AR init
run $AR archival insert "ADR-001 type authority chain" --type adr --date 2026-01-10 --id adr-1 --format json
check "archival insert without an embedder stores the entry unembedded" jq_ok '.entry.id == "adr-1" and .entry.indexed == false and .queued == false'
run $AR --embed-builtin archival insert "retro of sprint 2: compress early" --type retro --date 2026-02-14 --later --format json
check "archival insert --later stores at once and embeds before it exits" jq_ok '.queued == true'
run $AR --embed-builtin archival index --format json
check "archival index embeds what was stored without a vector" jq_ok '.indexed == 1'
run $AR archival insert "ADR-001 type authority chain" --id adr-1 --format json
check "archival insert of an id there already adds nothing" jq_ok '.existed == true and .entry.indexed == true'
run $AR archival search "retro compress" --type retro --since 2026-02-01 --until 2026-02-28 --format json
check "archival search by type and date" jq_ok 'length == 1 and .[0].type == "retro" and .[0].date == "2026-02-14"'
run $AR archival search "retro" --since 2026-03-01 --format json
check "archival search past every date finds none" jq_ok 'length == 0'
run $AR tiers stats --format json
check "tiers stats counts archival entries and the embedded ones" jq_ok '.archival.entryCount == 2 and .archival.indexedDocs == 2 and (.archival.lastIndexed | type) == "string"'
run $AR archival search x --since soon
check "archival search with a bad date is INVALID_QUERY" sh -c "[ $rc -eq 1 ] && grep -q CAIRN_EQUERY err"

# ---- the tier settings ------------------------------------------------------------
TC="--store $T/tierset"
run $TC init
run $TC config reflect-threshold 20
check "config reflect-threshold sets the threshold" rc_is 0
run $TC config reflect-threshold
check "config reflect-threshold shows it" out_is 20
run $TC stream add "a" --cycle 1 --role qa --importance 10
run $TC stream add "b" --cycle 2 --role qa --importance 10 --format json
check "a reflection is due at the store's threshold" sh -c "[ $rc -eq 0 ] && jq -e '.reflection.due == true and .reflection.threshold == 20' out >/dev/null && grep -q 'a reflection is due' err"
run $TC config core-section-budget 5
run $TC core append lessons "a lesson longer than twenty characters"
check "core append past a lowered section budget is refused, naming it" sh -c "[ $rc -eq 1 ] && grep -q 'budget of 5' err"
run $TC config core-section-budget 9000
check "config refuses a section budget above the core's" sh -c "[ $rc -eq 1 ] && grep -q 'at most the core' err"
run $TC config labels exact
check "config labels cannot change" rc_is 64

# ---- named record types ------------------------------------------------------------
NT="--store $T/named"
run $NT init
run $NT log --type tool_call '{"tool":"grep","ms":12}' '{"tool":"rg","ms":3}'
check "log --type NAME registers the name and appends" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 2 ]"
run $NT log '{"x":1}'
run $NT dump
check "dump prints a named type by its name" sh -c "[ $rc -eq 0 ] && [ \$(grep -c '\"type\":\"tool_call\"' out) -eq 2 ] && grep -q '\"type\":\"event\"' out"
run $NT dump --type tool_call --where tool=rg
check "dump --type NAME keeps that type" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <out) -eq 1 ] && grep -q '\"rg\"' out"
run $NT dump --type 32768 --format csv
check "a named type is the number it was given" sh -c "[ $rc -eq 0 ] && [ \$(grep -c ',tool_call,' out) -eq 2 ]"
run $NT dump --type nosuch
check "dump --type of a name never registered exits 1, saying how to register one" sh -c "[ $rc -eq 1 ] && grep -q 'log --type NAME' err"
run $NT log --type Bad '{}'
check "log --type with a name that is not valid exits 1, naming the rule" sh -c "[ $rc -eq 1 ] && grep -q 'a letter first' err"
run $NT verify
check "a store with named types verifies" rc_is 0

# ---- --as-of: the store as it was at a seq or a time ---------------------------
AO="--store $T/asof"
run $AO init --segment-size 4K --retain live:0
i=1
while [ $i -le 24 ]; do "$CAIRN" $AO add "as-of memory $i about the release train and its rollbacks" >/dev/null 2>&1; i=$((i + 1)); done
"$CAIRN" $AO export --format json >asof-ids.json 2>/dev/null
A1=$(jq -r '.[0].id' asof-ids.json 2>/dev/null)
A2=$(jq -r '.[1].id' asof-ids.json 2>/dev/null)
S1=$("$CAIRN" $AO head 2>/dev/null | cut -d: -f1)
"$CAIRN" $AO remove "$A1" >/dev/null 2>&1
"$CAIRN" $AO update "$A2" --importance 0.9 >/dev/null 2>&1
for j in 1 2 3 4 5 6; do "$CAIRN" $AO add "later memory $j about the release train" >/dev/null 2>&1; done
run $AO get "$A1"
check "a removed memory is gone now" rc_is 1
run $AO get "$A1" --as-of "$S1"
check "get --as-of SEQ finds it as it was then" sh -c "[ $rc -eq 0 ] && grep -q 'as-of memory 1 about' out"
asof_norm='if type == "array" then map(del(.accessedAt, .accessCount, .score)) else del(.accessedAt, .accessCount) end'
asof_same() { # COMMAND... : its output with --as-of $S1 is its output on a replay to $S1
    # (access times and counts aside: each read of either counts one now;
    # and recall's scores: the replay's recency is reckoned from now,
    # --as-of's from the moment)
    "$CAIRN" $AO "$@" --as-of "$S1" >asof.a 2>&1
    "$CAIRN" --store "$T/asof-at" "$@" >asof.b 2>&1
    if jq -e . asof.a >/dev/null 2>&1; then
        jq -S "$asof_norm" asof.a >asof.na && jq -S "$asof_norm" asof.b >asof.nb &&
            cmp -s asof.na asof.nb && [ -s asof.a ]
    else
        cmp -s asof.a asof.b && [ -s asof.a ]
    fi
}
"$CAIRN" $AO replay --to "$S1" "$T/asof-at" >/dev/null 2>&1
check "recall --as-of answers as a replay of the log up to then" asof_same recall "release train rollbacks" --format json
check "list --as-of answers as a replay of the log up to then" asof_same list --format json
check "get --as-of of an updated memory gives its importance then" asof_same get "$A2" --format json
check "context --as-of answers as a replay of the log up to then" asof_same context "release train"
run $AO list --format json --as-of "$S1"
check "list --as-of holds the 24 memories of then, not the 29 of now" jq_ok 'length == 24'
run $AO recall "later memory" --as-of "$S1" --format json
check "a memory stored after the moment is not recalled as of it" sh -c "[ $rc -eq 0 ] && ! grep -q 'later memory' out"
run $AO list --as-of 2000-01-01
check "--as-of a time before the first record exits 1, saying so" sh -c "[ $rc -eq 1 ] && grep -q 'first record is later' err"
run $AO list --as-of now --format json
check "--as-of now is the store now" jq_ok 'length == 29'
EXP_AT=$(($(date +%s%3N) + 2000))
"$CAIRN" $AO add "an expiring memory of the as-of test" --expires "@$EXP_AT" >asof-exp.id 2>/dev/null
S4=$("$CAIRN" $AO head 2>/dev/null | cut -d: -f1)
while [ "$(date +%s%3N)" -le $((EXP_AT + 50)) ]; do sleep 0.2; done
run $AO get "$(cat asof-exp.id)"
check "a memory past its expiry is not returned now" rc_is 1
run $AO get "$(cat asof-exp.id)" --as-of "$S4"
check "get --as-of a seq before its expiry returns it: now is the moment's time" sh -c "[ $rc -eq 0 ] && grep -q 'an expiring memory' out"
run $AO recall "expiring memory" --as-of "$S4" --format json
check "recall --as-of reckons expiry at the moment too" jq_ok 'any(.[]; .content | test("an expiring memory"))'
run $AO stats --format json --as-of "$S4"
check "stats --as-of counts a memory that had not expired then" jq_ok '.memories.total == 30'
run $AO recall "release" --as-of 999999
check "--as-of a seq past the end exits 1, saying so" sh -c "[ $rc -eq 1 ] && grep -q 'past the end of the log' err"
run $AO add "x" --as-of 3
check "--as-of on a command that writes exits 64, naming those that take it" sh -c "[ $rc -eq 64 ] && grep -q 'recall, get, list' err"
run $AO list --as-of
check "--as-of without a value exits 64" rc_is 64
check "no view is left in the store" sh -c "! ls -a '$T/asof' | grep -q as-of"
DEAD=$(sh -c 'echo $$')
mkdir "$T/asof/.as-of-$DEAD-gone01" "$T/asof/.as-of-$$-live01"
echo x >"$T/asof/.as-of-$DEAD-gone01/0000000000000001.seg"
run $AO add "a writer's open sweeps the views of processes gone"
check "a writer's open removes a view whose process is gone, not a live one's" sh -c "[ $rc -eq 0 ] && [ ! -e '$T/asof/.as-of-$DEAD-gone01' ] && [ -d '$T/asof/.as-of-$$-live01' ]"
rmdir "$T/asof/.as-of-$$-live01"

# ---- the hash chain: head, verify --head, signatures, the independent checker --
HC="--store $T/chain"
run $HC init --segment-size 4K --retain live:0
run $HC head
check "head of an empty log is 0 and the zero hash" out_is "0:0000000000000000000000000000000000000000000000000000000000000000"
i=0
while [ $i -lt 40 ]; do
    echo "{\"i\":$i,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"
    i=$((i + 1))
done | "$CAIRN" $HC log >/dev/null 2>&1
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do "$CAIRN" $HC add "chained memory number $i, padded to fill a segment or two" >/dev/null 2>&1; done
run $HC head --format json
check "head --format json prints seq and hash" jq_ok '.seq == 52 and (.hash | test("^[0-9a-f]{64}$"))'
H0=$(jq -r '"\(.seq):\(.hash)"' out 2>/dev/null)
run $HC head
check "head prints SEQ:HASH, the form --head takes" out_is "$H0"
run $HC verify --head "$H0" --format json
check "verify --head proves the head it was given" sh -c "[ $rc -eq 0 ] && jq -e '.head == \"proven\" and .ok and .first_bad_seq == 0' out >/dev/null"
"$CAIRN" $HC export --format json >chain-ids.json 2>/dev/null
for id in $(jq -r '.[0:8][].id' chain-ids.json 2>/dev/null); do "$CAIRN" $HC remove "$id" >/dev/null 2>&1; done
"$CAIRN" $HC checkpoint >/dev/null 2>&1
run $HC compact --format json
check "compaction drops records of the chained store" jq_ok '.dropped_records > 0'
run $HC dump --type log.compacted
check "every hole carries the chain after its records" sh -c "[ $rc -eq 0 ] && [ -s out ] && ! grep -v '\"chain\":\"[0-9a-f]\{64\}\"' out"
run $HC verify --head "$H0"
check "a head taken before the compaction is still proven" sh -c "[ $rc -eq 0 ] && grep -q 'head proven' out"
run $HC head --format json
check "python3 tools/chaincheck.py, written from the spec alone, gives the same head" \
    sh -c "python3 '$HERE/../tools/chaincheck.py' '$T/chain' >cc.out 2>cc.err && [ \"\$(cat cc.out)\" = \"\$(cat out)\" ]"
check "chaincheck proves the head taken before the compaction" python3 "$HERE/../tools/chaincheck.py" "$T/chain" --head "$H0"
BAD=$(echo "$H0" | sed 's/:\(.\)/:f\1/; s/:\(.\{64\}\).*/:\1/')
[ "$BAD" = "$H0" ] && BAD=$(echo "$H0" | sed 's/:./:0/')
run $HC verify --head "$BAD"
check "verify --head of another history exits 2, naming the seq" sh -c "[ $rc -eq 2 ] && grep -q 'not the history that head names' out && grep -q 'not proven' err"
run $HC verify --head 12:abc
check "verify --head that is not SEQ:HASH exits 64" rc_is 64
if command -v openssl >/dev/null 2>&1; then
    openssl genpkey -algorithm ed25519 -out head.key >/dev/null 2>&1
    openssl pkey -in head.key -pubout -out head.pub >/dev/null 2>&1
    run $HC head --sign head.key --format json
    check "head --sign adds an Ed25519 signature and the public key" jq_ok '(.signature | test("^[0-9a-f]{128}$")) and (.public_key | test("^[0-9a-f]{64}$"))'
    SIG=$(jq -r .signature out 2>/dev/null)
    HS=$(jq -r '"\(.seq):\(.hash)"' out 2>/dev/null)
    run $HC verify --head "$HS" --signature "$SIG" --pubkey head.pub
    check "verify --signature --pubkey accepts the head's signature" sh -c "[ $rc -eq 0 ] && grep -q 'head proven' out"
    run $HC verify --head "$H0" --signature "$SIG" --pubkey head.pub
    check "a signature of another head is refused (exit 2)" sh -c "[ $rc -eq 2 ] && grep -q 'signature' err"
    run $HC head --sign head.pub
    check "head --sign with a public key exits 1, naming the key" sh -c "[ $rc -eq 1 ] && grep -q 'Ed25519 private key' err"
else
    notok "openssl is needed for the signed-head checks (sh tools/install-deps.sh)"
fi
# replay: a new store holding the log up to a seq, verified
RS=$("$CAIRN" $HC head 2>/dev/null | cut -d: -f1)
run $HC replay --to "$RS" "$T/replayed" --format json
check "replay --to SEQ writes a store holding the log up to SEQ, its head checked" sh -c "[ $rc -eq 0 ] && jq -e '.seq == $RS and .head.seq == $RS' out >/dev/null"
RH=$(jq -r '"\(.head.seq):\(.head.hash)"' out 2>/dev/null)
run --store "$T/replayed" dump
LASTSEQ=$(tail -n 1 out | jq 'if .type == "log.compacted" then .payload.upto else .seq end' 2>/dev/null)
check "the replayed store ends at SEQ" sh -c "[ $rc -eq 0 ] && [ '$LASTSEQ' = '$RS' ]"
run $HC verify --head "$RH"
check "the replayed store's head is a head of the store it came from" sh -c "[ $rc -eq 0 ] && grep -q 'head proven' out"
run $HC replay --to 3 "$T/replayed-early"
check "replay to a seq before what a compaction dropped exits 1, naming the policy" sh -c "[ $rc -eq 1 ] && grep -q 'cannot be rebuilt' err && grep -q 'live:0' err && [ ! -e '$T/replayed-early' ]"
run $HC replay --to "$RS" "$T/replayed"
check "replay into a directory that is not empty exits 1" sh -c "[ $rc -eq 1 ] && grep -q 'not empty' err"
run $HC replay --to 99999 "$T/replayed2"
check "replay past the log's end exits 1, saying so" sh -c "[ $rc -eq 1 ] && grep -q 'past the end' err"
run $HC replay "$T/replayed3"
check "replay without --to exits 64" rc_is 64
# The last record cut off: only a head kept elsewhere finds it.
"$CAIRN" $HC log '{"last":1}' >/dev/null 2>&1
run $HC head
HL=$(cat out)
last=$(ls "$T/chain"/*.log | tail -n 1)
size=$(wc -c <"$last")
python3 - "$last" <<'PY'
import struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
o, offs = 64, []
while o + 4 <= len(b):
    n = struct.unpack_from("<I", b, o)[0]
    if n < 40 or o + n > len(b):
        break
    offs.append(o)
    o += n
open(p, "wb").write(b[:offs[-1]])
PY
run $HC verify --head "$HL"
check "verify --head finds the last record cut off, naming it" sh -c "[ $rc -eq 2 ] && grep -q 'missing (cut off)' out && grep -q 'first seq that differs: ${HL%%:*}' err"
check "chaincheck finds the cut too" sh -c "! python3 '$HERE/../tools/chaincheck.py' '$T/chain' --head '$HL' >/dev/null 2>cc.err && grep -q 'missing' cc.err"

echo "# $pass passed, $fail failed"
[ "$fail" -eq 0 ]
