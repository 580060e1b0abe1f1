#!/bin/sh
# test_replay.sh RECORD REPLAY TRACEPROG: kslab-record a program (threads,
# cross-thread frees, realloc, calloc, posix_memalign, fork, system), check
# the trace's records, replay it on every allocator twice and check the
# memory figures repeat, and the plot.
set -u
REC=$1 REP=$2 PROG=$3
T=$(mktemp -d)
fail() { echo "FAIL: $*"; tail -30 "$T"/out* 2>/dev/null; rm -rf "$T"; exit 1; }
"$REC" --help | grep -q "usage: kslab-record" || fail "kslab-record --help"
"$REP" --help | grep -q "usage: kslab-replay" || fail "kslab-replay --help"
"$REC" -o "$T/t.kst" "$PROG" > "$T/out.prog" 2> "$T/out.rec" || fail "recording failed"
grep -q "traceprog done" "$T/out.prog" || fail "the program's output"
test -e "$T/t.kst.raw" && fail "the raw file was left behind"
grep -q "4 thread(s)" "$T/out.rec" || fail "not 4 threads: $(cat "$T/out.rec")"
"$REP" -D "$T/t.kst" > "$T/out.dump" || fail "dump"
# the known sequence, in order, with the ids the LIFO rule gives
grep -A5 "^malloc 123451 " "$T/out.dump" > "$T/seq"
id=$(sed -n 's/^malloc 123451 -> //p' "$T/seq")
[ -n "$id" ] || fail "malloc 123451 missing"
sed -n 2p "$T/seq" | grep -qx "realloc $id 123452" || fail "realloc: $(sed -n 2p "$T/seq")"
sed -n 3p "$T/seq" | grep -q "^calloc 123453 -> " || fail "calloc"
sed -n 4p "$T/seq" | grep -q "^memalign 256 123454 -> " || fail "memalign"
sed -n 5p "$T/seq" | grep -qx "free $id" || fail "free of the realloc'd object"
[ "$(grep -c '^malloc 5555 ' "$T/out.dump")" = 3000 ] || fail "not 3000 handed objects"
[ "$(grep -c '^malloc 6666 ' "$T/out.dump")" = 3 ] || fail "not 3 objects for the threads"
[ "$(grep -c '^exit$' "$T/out.dump")" = 3 ] || fail "not 3 thread exits"
grep -q "^malloc 7777 " "$T/out.dump" && fail "the fork child was recorded"
tail -1 "$T/out.dump" | grep -qx end || fail "no end"
# every free is of a live id, in the order given (the dump's ids)
awk '/^(malloc|calloc|memalign)/ { live[$NF]=1 } /^free/ { if (!($2 in live)) { print "free of dead id " $2; exit 1 } delete live[$2] }
     /^realloc/ { if (!($2 in live)) { print "realloc of dead id " $2; exit 1 } }' "$T/out.dump" || fail "ids"
# an unknown allocator: a clear error, exit 2, no temporary directory left
before=$(ls -d /tmp/kslab-replay.* 2>/dev/null | wc -l)
"$REP" -a slub,nosuch "$T/t.kst" > "$T/out.bad" 2>&1; rc=$?
[ $rc = 2 ] || fail "unknown allocator: exit $rc"
grep -q "unknown allocator nosuch" "$T/out.bad" || fail "unknown allocator: $(cat "$T/out.bad")"
[ "$(ls -d /tmp/kslab-replay.* 2>/dev/null | wc -l)" = "$before" ] || fail "unknown allocator: a directory left in /tmp"
# replay twice (runs agree within an invocation, and across invocations)
for r in 1 2; do
  "$REP" -n 2 -t 120 -p "$T/plot$r.png" "$T/t.kst" > "$T/out.rep$r" 2>&1 || fail "replay $r"
done
for a in kslab-slub kslab-slab kslab-slob kslab-slob-seg glibc; do
  grep -Eq "^$a +[0-9.]+ +[0-9]+ " "$T/out.rep1" || fail "no row for $a"
done
# kslab's and glibc's figures never depend on time; jemalloc and mimalloc
# purge on timers, so their RSS may vary under load (the report says so)
v=$(grep -E "^(kslab-|glibc).*varied" "$T/out.rep1" "$T/out.rep2") && fail "memory figures varied between runs: $v"
# the kslab rows' memory columns are the same in both invocations
for a in kslab-slub kslab-slab kslab-slob kslab-slob-seg; do
  m1=$(grep "^$a " "$T/out.rep1" | awk '{print $3, $4, $5}')
  m2=$(grep "^$a " "$T/out.rep2" | awk '{print $3, $4, $5}')
  [ "$m1" = "$m2" ] || fail "$a: '$m1' then '$m2'"
done
calls=$(awk '/^kslab-slub /{print $3}' "$T/out.rep1")
[ "$(awk -v c="$calls" '$3 ~ /^[0-9]+$/ && $3 != c' "$T/out.rep1" | wc -l)" = 0 ] || fail "allocators made different numbers of calls"
if command -v gnuplot >/dev/null; then
  head -c 4 "$T/plot1.png" | od -c | grep -q "P   N   G" || fail "plot is not a PNG"
fi
rm -rf "$T"
echo "replay: all checks passed"
