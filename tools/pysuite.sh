#!/bin/bash
# make soak-python: CPython's own regression suite (Debian's python3 and its
# libpython3.X-testsuite, which tools/deps.sh installs) run on kslab through
# libkslab-malloc.so with PYTHONMALLOC=malloc, so that every object of the
# interpreter comes from kslab: about 450 test files and 37 000 tests that
# use threads, fork, signals, subprocesses, sockets, mmap, ctypes and
# sqlite3.  The suite runs first on glibc, then once per configuration; a
# test file that passes on glibc must pass on kslab.  A test file that fails
# on glibc as well (the machine's setup: no tty, no network, a missing
# module) is listed, not held against kslab.
#
# Usage: pysuite.sh LIBKSLAB_MALLOC [CONFIG ...]
#   CONFIG: `default`, or VAR=VALUE[,VAR=VALUE...] set for that run
#   (default: default KSLAB_PERCPU=0 KSLAB_ALLOCATOR=slab
#   KSLAB_ALLOCATOR=slob-seg).  About 9 minutes each on two CPUs.  Classic
#   SLOB is left out: its first-fit walk made 6 files outrun the 300 s
#   timeout (42 minutes in all; every other file passed as on glibc); give
#   it KSLAB_ALLOCATOR=slob and PYSUITE_TIMEOUT=1500.
# Environment: PYSUITE_TESTS (test names; default: the whole suite but
#   PYSUITE_EXCLUDE's files, which it then replaces), PYSUITE_TIMEOUT (s a file, 300),
#   JOBS (2), PYSUITE_OUT (where the logs go; default a temporary directory).
set -u
lib=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift
[ -f "$lib" ] || { echo "pysuite: no $lib (run make first)" >&2; exit 2; }
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(default KSLAB_PERCPU=0 KSLAB_ALLOCATOR=slab
                                     KSLAB_ALLOCATOR=slob-seg)
PY=/usr/bin/python3
out=${PYSUITE_OUT:-$(mktemp -d)}
mkdir -p "$out"
# Left out by default: the two subinterpreter files hang on this kind of
# machine under glibc too (each costs the whole timeout), and the VSOCK
# tests of test_socket wait forever in accept() where the VM has no vsock
# peer, whatever the allocator.
exclude=${PYSUITE_EXCLUDE-test__xxsubinterpreters test_interpreters}
args=(-m test -j"${JOBS:-2}" --timeout "${PYSUITE_TIMEOUT:-300}" -i '*VSOCK*')
if [ -n "${PYSUITE_TESTS:-}" ]; then
  args+=($PYSUITE_TESTS)
elif [ -n "$exclude" ]; then
  args+=(-x $exclude)               # with -x, the names are the files left out
fi

# One run: LABEL and the environment; its per-file results into LABEL.status
# (name, then passed / skipped / anything else as the suite printed it).
run() {
  local label=$1; shift
  local t0=$SECONDS
  (cd "$out" && env "$@" PYTHONMALLOC=malloc "$PY" "${args[@]}") > "$out/$label.log" 2>&1   # "$@": VAR=VALUE...
  # lines such as "0:01:07 load avg: 0.74 [ 85/462/1] test_cmd_line failed (1 failure)"
  sed -n 's/^.*\] \(test[A-Za-z0-9_.]*\) \([a-z][a-z-]*\).*$/\1 \2/p' "$out/$label.log" |
    LC_ALL=C sort -u -k1,1 > "$out/$label.status"
  printf 'pysuite: %-34s %4d files: %4d passed, %3d skipped, %3d other  (%d s)\n' "$label" \
    "$(wc -l < "$out/$label.status")" "$(grep -c ' passed$' "$out/$label.status")" \
    "$(grep -c ' skipped$' "$out/$label.status")" \
    "$(grep -vc ' passed$\| skipped$' "$out/$label.status")" $((SECONDS - t0))
}

run glibc
if ! [ -s "$out/glibc.status" ]; then
  echo "pysuite: the suite did not run on glibc; its log:" >&2
  tail -20 "$out/glibc.log" >&2
  exit 2
fi
echo "pysuite: failing on glibc too (not counted):" \
  $(grep -v ' passed$\| skipped$' "$out/glibc.status" | cut -d' ' -f1)
bad=0
for c in "${configs[@]}"; do
  envs=()
  [ "$c" = default ] || IFS=, read -ra envs <<< "$c"
  [[ "$c" == *KSLAB_DEBUG=* ]] && envs+=(KSLAB_DEBUG_PANIC=1)  # a report must stop the test
  label=kslab-$(echo "$c" | tr '=,/' '-+_')
  run "$label" "${envs[@]}" LD_PRELOAD="$lib"
  # files that passed on glibc and did not pass here
  lost=$(LC_ALL=C join <(grep ' passed$' "$out/glibc.status") "$out/$label.status" |
         awk '$3 != "passed" { print $1 " (" $3 ")" }')
  missing=$(LC_ALL=C join -v1 <(grep ' passed$' "$out/glibc.status") "$out/$label.status" | cut -d' ' -f1 | tr '\n' ' ')
  if [ -n "$lost$missing" ]; then
    bad=1
    echo "pysuite: $label: passed on glibc, not on kslab: $lost $missing"
    [ -s "$out/$label.status" ] || tail -20 "$out/$label.log"   # it did not run at all
    grep -q '^Timeout' "$out/$label.log" && echo "pysuite: $label: some ran past the timeout"
    for f in $(echo "$lost" | tr ' ' '\n' | grep '^test'); do
      grep -n -A25 "] $f " "$out/$label.log" | head -40
    done
  fi
done
echo "pysuite: logs in $out"
[ $bad = 0 ] && echo "pysuite: every file that passes on glibc passes on kslab in ${#configs[@]} configurations"
exit $bad
