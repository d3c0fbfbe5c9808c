#!/bin/sh
# demo.sh - a short tour of the `cairn` tool on a fresh store ./demo.cairn:
# init, log a file of agent events, dump, verify; then import a sample of
# memories, recall with explanations, a context block for a prompt, a
# search, forget (dry run); then reflexion: episodes extracted from two
# session logs, the causal graph built from them, a path across the two
# sessions, the patterns; the cognitive tiers of an agent team (core
# memory, the stream by cycle, their statistics); write the memory index
# and graph files, verify, stats. Every step says what it runs; the script stops with a non-zero
# exit at the first failure.
#
# usage: sh tools/demo.sh PATH/TO/cairn      (what `make demo` runs)
set -u

CAIRN=${1:-}
HERE=$(cd "$(dirname "$0")" && pwd)
EVENTS=$HERE/demo/sample-events.jsonl
MEMORIES=$HERE/demo/sample-memories.json
SESSIONS=$HERE/demo/sessions
STORE=./demo.cairn

fail() {
    echo "demo: FAILED: $*" >&2
    exit 1
}
step() {
    printf '\n== %s\n' "$*"
}

[ -n "$CAIRN" ] || fail "usage: sh tools/demo.sh PATH/TO/cairn"
[ -x "$CAIRN" ] || fail "$CAIRN is not an executable (run make first)"
[ -r "$EVENTS" ] || fail "cannot read $EVENTS"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cairn-demo.XXXXXX") || fail "mktemp"
trap 'rm -rf "$TMP"' EXIT

step "rm -rf $STORE"
rm -rf "$STORE" || fail "could not remove $STORE"

# 4 KiB segments, so the demo also rolls and seals (zstd blocks) a few.
step "cairn --store $STORE init --durability batch --segment-size 4K"
"$CAIRN" --store "$STORE" init --durability batch --segment-size 4K || fail "init"

step "cairn --store $STORE log --quiet < tools/demo/sample-events.jsonl"
n=$("$CAIRN" --store "$STORE" log --quiet <"$EVENTS") || fail "log"
echo "appended $n records"

step "cairn --store $STORE log --namespace notes '{\"agent\":\"demo\",...}'"
"$CAIRN" --store "$STORE" log --namespace notes \
    '{"agent":"demo","kind":"memory_note","text":"logged from an argument, in namespace notes"}' ||
    fail "log an argument"

step "cairn --store $STORE dump | head -n 5"
"$CAIRN" --store "$STORE" dump >"$TMP/dump" || fail "dump"
head -n 5 "$TMP/dump"
echo "... $(wc -l <"$TMP/dump" | tr -d ' ') lines in all"

step "cairn --store $STORE dump --from-seq 21 --to-seq 22 --since 1h"
"$CAIRN" --store "$STORE" dump --from-seq 21 --to-seq 22 --since 1h || fail "dump a range"

step "cairn --store $STORE verify"
"$CAIRN" --store "$STORE" verify || fail "verify"

step "cairn --store $STORE import --format json tools/demo/sample-memories.json"
"$CAIRN" --store "$STORE" import --format json "$MEMORIES" || fail "import memories"

step "cairn --store $STORE add 'Staging deploys freeze on Fridays after 15:00.' --category fact --importance 0.7"
"$CAIRN" --store "$STORE" add "Staging deploys freeze on Fridays after 15:00." --category fact \
    --importance 0.7 || fail "add"

step "cairn --store $STORE recall 'how do I deploy to production' --k 3 --explain"
"$CAIRN" --store "$STORE" recall "how do I deploy to production" --k 3 --explain || fail "recall"

step "cairn --store $STORE context 'deploying and rolling back' --format xml --max-tokens 120"
"$CAIRN" --store "$STORE" context "deploying and rolling back" --format xml --max-tokens 120 ||
    fail "context"

step "cairn --store $STORE search 'staging deploy' --max-results 3 --format table"
"$CAIRN" --store "$STORE" search "staging deploy" --max-results 3 --format table || fail "search"

step "cairn --store $STORE forget --mode aggressive --dry-run"
"$CAIRN" --store "$STORE" forget --mode aggressive --dry-run || fail "forget"

for log in "$SESSIONS"/*.md; do
    step "cairn --store $STORE episode extract tools/demo/sessions/$(basename "$log")"
    "$CAIRN" --store "$STORE" episode extract "$log" >"$TMP/episode" || fail "episode extract"
    grep -E '^(id|task|outcome|events|decisions|lessons):' "$TMP/episode"
done

step "cairn --store $STORE episode list"
"$CAIRN" --store "$STORE" episode list || fail "episode list"

step "cairn --store $STORE causal update   # episodes -> nodes, edges, patterns"
"$CAIRN" --store "$STORE" causal update || fail "causal update"

step "cairn --store $STORE causal path --from-label 'flaky parser test' --to-label 'tagged v1.4' --max-depth 10"
"$CAIRN" --store "$STORE" causal path --from-label "flaky parser test" --to-label "tagged v1.4" \
    --max-depth 10 || fail "causal path"

step "cairn --store $STORE pattern list"
"$CAIRN" --store "$STORE" pattern list || fail "pattern list"

ADA=$(dirname "$0")/../tests/data/ada
step "cairn --store $STORE import --from ada $ADA   # an agent team's core memory, stream, reflections"
"$CAIRN" --store "$STORE" import --from ada "$ADA" || fail "import --from ada"

step "cairn --store $STORE core show blockers"
"$CAIRN" --store "$STORE" core show blockers || fail "core show"

step "cairn --store $STORE stream add 'Demo run: the tiers answer' --cycle 285 --role ops --importance 7"
"$CAIRN" --store "$STORE" stream add "Demo run: the tiers answer" --cycle 285 --role ops \
    --importance 7 || fail "stream add"

step "cairn --store $STORE stream list --cycles 283..285"
"$CAIRN" --store "$STORE" stream list --cycles 283..285 || fail "stream list"

step "cairn --store $STORE tiers stats"
"$CAIRN" --store "$STORE" tiers stats || fail "tiers stats"

step "cairn --store $STORE checkpoint   # memory index and graph files: later opens replay nothing"
"$CAIRN" --store "$STORE" checkpoint || fail "checkpoint"

step "cairn --store $STORE verify"
"$CAIRN" --store "$STORE" verify || fail "verify after the memories"

step "cairn --store $STORE stats"
"$CAIRN" --store "$STORE" stats || fail "stats"

printf '\ndemo: all steps succeeded; the store is in %s\n' "$STORE"
