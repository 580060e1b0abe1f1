# The slab lab: record python3's and sqlite3's allocations once with
# kslab-record, replay the traces on every kslab back-end and every peer.
echo "== replay: python3 and sqlite3 traces on every allocator"
RT=$PWD/build/utils
PROG=$PWD/tests/programs
tmpr=$(mktemp -d)
(cd "$tmpr" && PYTHONMALLOC=malloc "$RT/kslab-record" -o "$RAW/python3.kst" "$PYTHON3" "$PROG/alloc_heavy.py" 50000 >/dev/null 2> "$RAW/python3.rec")
(cd "$tmpr" && "$RT/kslab-record" -o "$RAW/sqlite3.kst" sqlite3 :memory: ".read $PROG/workload.sql" >/dev/null 2> "$RAW/sqlite3.rec")
rm -rf "$tmpr"
for w in python3 sqlite3; do
  "$RT/kslab-replay" -m -n 3 -t 60 -p "$OUT/replay-$w.png" "$RAW/$w.kst" > "$RAW/replay-$w.md" 2>&1 || true
  cat "$RAW/replay-$w.md"
done
{
  echo "## Replay: one recorded trace, every allocator"
  echo
  echo "\`kslab-record\` ran each program once under glibc and wrote every allocation and free"
  echo "(size, alignment, thread, order) to a trace; \`kslab-replay\` replays the trace through each"
  echo "allocator in its own process (kslab's back-ends through libkslab-malloc, the peers by"
  echo "LD_PRELOAD), the records in their recorded order, each object written as it is allocated."
  echo "*ms in calls*: time inside the allocator calls and the first write to each new object (a"
  echo "page fault costs the same whichever side takes it; median of 3 runs); *held*: kslab's page"
  echo "layer count (slabs, large blocks, reserves), the peers' RSS; *slab*: kslab's slabs alone (the"
  echo "kernel's \"Slab:\" line); RSS counted from the start of"
  echo "the replay; *held/live*: memory held over the bytes the program had live, at the peak of"
  echo "live bytes and averaged over the trace (fragmentation).  The held and slab columns repeat"
  echo "exactly from run to run (a row says so if they did not: jemalloc and mimalloc give memory"
  echo "back on timers); kslab's RSS can differ by a few pages (its freelists' random order).  A run"
  echo "that takes over 60 s is stopped."
  echo
  for w in python3 sqlite3; do
    echo "### $w"
    echo
    sed -n 's/^kslab-record: [^:]*: /Trace: /p' "$RAW/$w.rec"
    echo
    cat "$RAW/replay-$w.md"
    echo
    [ -s "$OUT/replay-$w.png" ] && echo "![replay $w](replay-$w.png)" && echo
  done
} >> "$REPORT"
