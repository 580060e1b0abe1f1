#!/bin/sh
# test_options.sh LIBKSLAB_MALLOC: a KSLAB_ option given a value it does not
# take is reported (one line naming the variable and what is used instead),
# never ignored in silence; the values options take print nothing.
set -u
KM=$1
fail() { echo "FAIL: $*"; exit 1; }
# run ENV...: true(1) under the drop-in; its stderr
run() { env "$@" LD_PRELOAD="$KM" true 2>&1 >/dev/null; }
# bad MESSAGE VAR=VALUE [ENV...]: "kslab: VAR=VALUE: MESSAGE" on stderr
bad() {
  want="kslab: $2: $1"; shift
  out=$(run "$@")
  echo "$out" | grep -qF "$want" || fail "$*: stderr '$out', not '$want'"
}
good() { out=$(run "$@"); [ -z "$out" ] || fail "$*: printed '$out'"; }

bad "not N or Nms; KFENCE off" KSLAB_KFENCE=abc
bad "not N or Nms; KFENCE off" KSLAB_KFENCE=-5        # strtoul: 2^64 - 5, KFENCE on in name only
bad "not N or Nms; KFENCE off" KSLAB_KFENCE=100us
bad "not a number (decimal digits, below 2^64); using 8" KSLAB_RANDOM_WINDOW=eight
bad "not a number (decimal digits, below 2^64); using 8" KSLAB_RANDOM_WINDOW=99999999999999999999999
bad "not a number (decimal digits, below 2^64); using 100" KSLAB_PUBLISH_MS=1s
bad "not a number (decimal digits, below 2^64); using 1000" KSLAB_DECAY_MS=1s
bad "not a number (decimal digits, below 2^64); using 0" KSLAB_RANDOM_KMALLOC=" 4"
bad "takes 0 or 2 to 8; using 0" KSLAB_RANDOM_PAGES=1
bad "takes 0 or 2 to 8; using 8" KSLAB_RANDOM_PAGES=9
bad "takes 0 or 1; taken as 1" KSLAB_HARDENED=off
bad "takes 0 or 1; taken as 1" KSLAB_PERCPU=2
bad "takes 0 or 1; taken as 1" KSLAB_NOMERGE=yes
bad 'takes only "int"; ignored' KSLAB_SLAB_INDEX=short KSLAB_ALLOCATOR=slab
# "taken as 1" is what runs: KSLAB_SLABINFO=yes still prints slabinfo at exit
run KSLAB_SLABINFO=yes | grep -q "slabinfo - version" || fail "KSLAB_SLABINFO=yes: no slabinfo at exit"

for ok in KSLAB_KFENCE=0 KSLAB_KFENCE=100 KSLAB_KFENCE=100ms KSLAB_RANDOM_WINDOW=4 KSLAB_RANDOM_SMALL_SPAN=0 KSLAB_HARDENED=0 \
          KSLAB_HARDENED=1 KSLAB_PERCPU=0 KSLAB_PUBLISH=0 KSLAB_PUBLISH_MS=50 KSLAB_NOMERGE=1 \
          KSLAB_RANDOM_KMALLOC=4 KSLAB_HARDENED= KSLAB_DECAY_MS=0 KSLAB_DECAY_MS=250 KSLAB_DECAY_MS=18446744073709551615 KSLAB_RANDOM_PAGES=0 KSLAB_RANDOM_PAGES=8 ; do
  good $ok
done
good KSLAB_ALLOCATOR=slab KSLAB_SLAB_INDEX=int
echo "test_options: ok"
