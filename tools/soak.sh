#!/bin/sh
# make soak: the threaded stress, thread-exit/fork and race-regression tests,
# per back-end, under ThreadSanitizer, over and over for SOAK_SECONDS per
# back-end (default 120).  Not part of make test.  Stops at the first failure
# and prints the test's output.
# Usage: soak.sh BUILD_DIR [SECONDS]
set -u
B=${1:-build-tsan}/tests
SECS=${2:-120}
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
for be in slub slab slob slob-seg; do
  end=$(( $(date +%s) + SECS )); runs=0
  while [ "$(date +%s)" -lt "$end" ]; do
    for t in test_thread test_stress test_regress; do
      seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
      if ! out=$(KSLAB_ALLOCATOR=$be KSLAB_TEST_SEED=$seed KSLAB_TEST_SECONDS=5 "$B/$t" 2>&1); then
        echo "soak: $t failed on $be (KSLAB_TEST_SEED=$seed)"
        echo "$out" | tail -40
        exit 1
      fi
    done
    runs=$((runs + 1))
  done
  echo "soak: $be: $runs rounds of test_thread, test_stress, test_regress under TSan, no failure"
done
