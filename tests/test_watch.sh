#!/bin/sh
# test_watch.sh KSLABINFO KSLABTOP PUBCHILD: kslabinfo and kslabtop against a
# live child process (pubchild.c): the rows it publishes, a live change, the
# screen kslabtop draws under tmux and its keys, fork, KSLAB_PUBLISH=0, and a
# dead process's region.
set -u
INFO=$1 TOP=$2 CHILD=$3
T=$(mktemp -d)
fail() { echo "FAIL: $*"; cat "$T"/* 2>/dev/null | tail -40; kill_all; exit 1; }
kill_all() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; [ -n "${sess:-}" ] && tmux kill-session -t "$sess" 2>/dev/null; rm -rf "$T"; }
# wait_for SECONDS CMD...: until CMD succeeds
wait_for() { n=$(($1 * 20)); shift; while [ $n -gt 0 ]; do "$@" && return 0; sleep 0.05; n=$((n - 1)); done; return 1; }
row() { "$INFO" -p "$pid" > "$T/info" 2>&1 && grep -Eq "^watched_cache +$1 +200 " "$T/info"; }

"$INFO" --help | grep -q "usage: kslabinfo" || fail "kslabinfo --help"
"$TOP" --help | grep -q "usage: kslabtop" || fail "kslabtop --help"

"$CHILD" > "$T/pids" &
pid=$!
wait_for 10 test -e /dev/shm/kslab.$pid || fail "no region /dev/shm/kslab.$pid"
wait_for 10 row 1000 || fail "kslabinfo: watched_cache 1000 objects"
"$INFO" -l | grep -q "^$pid	pubchild" || fail "kslabinfo -l lists the child"
"$INFO" -p $pid -i > "$T/slabinfo" || fail "kslabinfo -i"
head -1 "$T/slabinfo" | grep -q "slabinfo - version: 2.1" || fail "slabinfo header"
grep -Eq "^watched_cache +1000 +1000 +200 +20 +1 :" "$T/slabinfo" || fail "slabinfo row"
"$INFO" -p $pid -r watched_cache > "$T/report" || fail "kslabinfo -r"
grep -q "Slabcache: watched_cache .*Objects: 1000" "$T/report" || fail "report header"
grep -Eq "^  alloc_slab +50$" "$T/report" || fail "report: 50 slabs allocated"
"$INFO" -p $pid -r no_such_cache 2> "$T/err" && fail "-r of a missing cache succeeded"
grep -q "has no cache named no_such_cache" "$T/err" || fail "-r missing cache message"
"$INFO" -p $pid -T > "$T/totals" || fail "kslabinfo -T"
grep -Eq "^Objects +[0-9]+ +of" "$T/totals" && grep -q "^  slabs " "$T/totals" || fail "totals"
"$TOP" -p $pid -o > "$T/once" || fail "kslabtop -o"
grep -Eq "^ +1000 +1000 100% +0.20K +50 +20 +200K watched_cache$" "$T/once" || fail "kslabtop row"
grep -q "Active / Total Objects" "$T/once" || fail "kslabtop summary"

# a live change: the child frees 500 objects; the region follows by itself
kill -USR1 $pid
wait_for 10 row 500 || fail "kslabinfo did not see the 500 frees"

# kslabtop's screen under tmux, its sort keys and q
if command -v tmux >/dev/null; then
  sess=kslabtop$$
  tmux new-session -d -s $sess -x 110 -y 30 "$TOP -p $pid -d 0.2" || fail "tmux"
  screen() { tmux capture-pane -p -t $sess > "$T/screen" && grep -q "$1" "$T/screen"; }
  wait_for 10 screen "kslabtop - pid $pid (pubchild)" || fail "tmux: kslabtop header"
  wait_for 5 screen " 500 .* watched_cache" || fail "tmux: watched_cache row"
  grep -q "OBJS   ACTIVE  USE OBJ SIZE" "$T/screen" || fail "tmux: column header"
  [ "$(wc -l < "$T/screen")" -le 30 ] || fail "tmux: more lines than the window"
  tmux send-keys -t $sess n
  wait_for 5 screen "sort n" || fail "tmux: key n"
  by_name() {
    screen "sort n" && sed -n '/OBJS   ACTIVE/,$p' "$T/screen" | awk 'NR>1 && NF>=8 {print $NF}' > "$T/names" &&
      [ -s "$T/names" ] && LC_ALL=C sort -c "$T/names" 2>/dev/null
  }
  wait_for 5 by_name || fail "tmux: rows not sorted by name"
  tmux send-keys -t $sess c
  wait_for 5 screen "sort c" || fail "tmux: key c"
  # the first row under the header, once a frame sorted by c is on screen
  # and the CACHE SIZE column (7th, "200K") never grows down the rows
  first_big() {
    screen "sort c" && sed -n '/OBJS   ACTIVE/{n;p;}' "$T/screen" | grep -q "churn_cache\|watched_cache" &&
      sed -n '/OBJS   ACTIVE/,$p' "$T/screen" | awk 'NR>1 && NF>=8 {print $7+0}' > "$T/sizes" &&
      sort -n -r -c "$T/sizes" 2>/dev/null
  }
  wait_for 5 first_big || fail "tmux: sort c puts a big cache first"
  tmux send-keys -t $sess q
  wait_for 5 sh -c "! tmux has-session -t $sess 2>/dev/null" || fail "tmux: q did not quit"
  sess=
else
  echo "tmux not installed: screen checks skipped"
fi

# fork: the child publishes its own region; the parent's is untouched
kill -USR2 $pid
wait_for 10 sh -c "[ \$(wc -l < $T/pids) -ge 2 ]" || fail "no forked pid"
kid=$(sed -n 2p "$T/pids")
wait_for 10 sh -c "'$INFO' -p $kid 2>/dev/null | grep -Eq '^forked_cache +300 +100 '" || fail "forked child's region"
"$INFO" -p $pid | grep -q forked_cache && fail "the parent's region shows the child's cache"
wait_for 10 sh -c "! test -e /dev/shm/kslab.$kid" || fail "the forked child's region outlived it"
row 500 || fail "the parent's region after the child exited"

# a process killed without exiting leaves its region; -l removes it
kill -KILL $pid; wait $pid 2>/dev/null
test -e /dev/shm/kslab.$pid || fail "SIGKILL: region already gone?"
"$INFO" -l 2> "$T/err" > /dev/null
# gone (not "removed ..." in -l's output: a second suite's kslabinfo -l at
# the same moment removes every dead region, this one too, as happened once
# when two `make test`s ran side by side)
test -e /dev/shm/kslab.$pid && fail "kslabinfo -l did not remove the dead region"
"$INFO" -p $pid 2> "$T/err" && fail "kslabinfo of a dead pid succeeded"
grep -q "no process $pid" "$T/err" || fail "dead pid message"

# a new publishing process removes dead processes' regions
"$CHILD" > "$T/pidsC" &
pid=$!
wait_for 10 test -e /dev/shm/kslab.$pid || fail "no region for the second child"
kill -KILL $pid; wait $pid 2>/dev/null
test -e /dev/shm/kslab.$pid || fail "SIGKILL: region already gone?"
"$CHILD" > "$T/pidsD" &
pid2=$!
wait_for 10 sh -c "! test -e /dev/shm/kslab.$pid" || fail "a new process did not sweep the dead region"
kill $pid2

# the first snapshot waits one interval (a process that lives less never
# makes a region): none yet after 0.5 s of a 3 s interval, one after it
KSLAB_PUBLISH_MS=3000 "$CHILD" > "$T/pidsI" &
pid=$!
wait_for 10 test -s "$T/pidsI" || fail "child with KSLAB_PUBLISH_MS=3000 did not start"
sleep 0.5
test -e /dev/shm/kslab.$pid && fail "published before its first interval had passed"
wait_for 10 test -e /dev/shm/kslab.$pid || fail "no region after the first interval"
kill $pid; wait $pid 2>/dev/null

# KSLAB_PUBLISH=0: nothing published
KSLAB_PUBLISH=0 "$CHILD" > "$T/pids0" &
pid=$!
wait_for 10 test -s "$T/pids0" || fail "child with KSLAB_PUBLISH=0 did not start"
sleep 0.5
test -e /dev/shm/kslab.$pid && fail "KSLAB_PUBLISH=0 published"
"$INFO" -p $pid 2> "$T/err" && fail "kslabinfo of an unpublished process succeeded"
grep -q "publishes no kslab slabinfo" "$T/err" || fail "unpublished message"
kill_all
echo "watch: all checks passed"
