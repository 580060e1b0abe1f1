#!/usr/bin/env bash
# make bench: run every benchmark, side by side with the peers, and write
# results/report.md (+ PNG plots).  Peers are Debian's libjemalloc2,
# libmimalloc2.0 and libtcmalloc-minimal4, loaded with LD_PRELOAD; a peer that
# is not installed is reported as missing, not dropped.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/bench
OUT=${KSLAB_RESULTS:-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)     # absolute: sections run programs from other directories
RAW="$OUT/raw"
mkdir -p "$RAW"
LIBDIR=/usr/lib/x86_64-linux-gnu
declare -A PEER=( [glibc]="" [jemalloc]="$LIBDIR/libjemalloc.so.2"
                  [mimalloc]="$LIBDIR/libmimalloc.so.2" [tcmalloc]="$LIBDIR/libtcmalloc_minimal.so.4" )
PEERS="glibc jemalloc mimalloc tcmalloc"
BACKENDS="slub slab slob slob-seg"   # kslab back-ends (KSLAB_ALLOCATOR values) to compare
peer_ok() { [ -z "${PEER[$1]}" ] || [ -e "${PEER[$1]}" ]; }
run_peer() {  # run_peer NAME CMD...: CMD under the peer's malloc
  local p=$1; shift
  if [ -z "${PEER[$p]}" ]; then "$@"; else LD_PRELOAD="${PEER[$p]}" "$@"; fi
}

# rotated R WORD...: the words, the list rotated left by R.  The interleaved
# rounds run their configurations in this order (round r starts r along), so
# no configuration always runs first or right after the same one: a fixed
# order put norandom, which runs the same instructions as off, at 1.029 of
# off in 40 paired python3 rounds, and at 1.013 with the order rotated.
rotated() {
  local r=$1; shift
  local a=("$@") n=$# i
  for ((i = 0; i < n; i++)); do printf '%s\n' "${a[$(( (i + r) % n ))]}"; done
}

# PYTHON3: the python3 interpreter itself, which every python3 row runs.
# `python3` on PATH may be a wrapper: pyenv's shims are bash scripts that run
# more bash before they exec the interpreter, and under LD_PRELOAD all of it
# runs on the allocator measured.  On the development machine `python3 -c
# pass` took 0.10 s through the shim and 0.037 s run directly (kslab 0.103,
# mimalloc 0.096, glibc 0.086: medians of 7), so each alloc_heavy.py row
# (about 1.4 s) was 7 % bash start-up, and its rounds' spread (q1-q3) about
# +-2.5 % where the interpreter alone gives +-1.5 %.
PYTHON3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
[ -x "$PYTHON3" ] || PYTHON3=python3

# alloc_heavy PRELOAD [VAR=VALUE...]: one run of python3's alloc_heavy.py
# under PRELOAD (empty: glibc) with the variables given, PYTHONMALLOC=malloc
# so every object goes through malloc, timed by runcmd: its line (wall s,
# peak RSS KiB, CPU s), empty if the run failed.  Sections 80 and 86.
# (ALLOC_HEAVY_PYMALLOC=pymalloc: python3's own small-object allocator, as
# shipped, in place of every object through malloc)
# (ALLOC_HEAVY_N: the script's object count, its own default 200 000 if unset)
alloc_heavy() {
  local pre=$1 rc=$PWD/$B/runcmd py=$PWD/tests/programs/alloc_heavy.py
  shift
  (cd /tmp && env "$@" ${pre:+LD_PRELOAD="$pre"} PYTHONMALLOC=${ALLOC_HEAVY_PYMALLOC:-malloc} timeout 600 "$rc" \
     "$PYTHON3" "$py" ${ALLOC_HEAVY_N:-} 2>/dev/null | tail -1)
}

# more_rounds N BASE: N, or BASE if that is more -- the extended round count
# of a section's noisiest rows (python3, the server rows), never below the
# count its other rows run.
more_rounds() { if [ "$1" -lt "$2" ]; then echo "$2"; else echo "$1"; fi; }

# callgrind_calls OUT: from micro_static --quick under callgrind (file OUT),
# "NAME<TAB>instructions per call" for each front door's fast path.
callgrind_calls() {
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    sed -nE 's/^ *([0-9,]+) .*=> .*:(kmem_cache_alloc|kmem_cache_free|kmalloc|kfree) \(3,000x\).*/\2 \1/p' |
    awk '{gsub(",", "", $2); printf "%s\t%.1f\n", $1, $2 / 3000}'
}

# cachegrind_run OUT [VAR=VALUE...] -- CMD...: CMD under cachegrind
# (simulated caches), in /tmp, with the variables set (LD_PRELOAD too: valgrind
# passes it on), writing OUT; prints "Ir<TAB>L1 misses<TAB>LL misses", the
# instruction and data misses summed, or nothing if the run failed.
cachegrind_run() {
  local out=$1 vars=()
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  (cd /tmp && env "${vars[@]}" timeout 900 valgrind --tool=cachegrind --cache-sim=yes \
     --cachegrind-out-file="$out" "$@" >/dev/null 2>&1) || return 0
  # summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
  sed -nE 's/^summary: //p' "$out" | awk '{ printf "%.0f\t%.0f\t%.0f\n", $1, $2 + $5 + $8, $3 + $6 + $9 }'
}
# AWK_CG_EST: awk source for cg_est(ir, l1, ll), KCachegrind's estimate of
# cycles from cachegrind's counts: Ir + 10 x L1 misses + 100 x LL misses.
AWK_CG_EST='function cg_est(ir, l1, ll) { return ir + 10 * l1 + 100 * ll }
'

# AWK_MEDIAN: awk source for median(v, n), the median of v[1..n] (sorted in
# place), 0 when n is 0.  The sections' tables put it before their programs
# (awk "$AWK_MEDIAN"'...'), so a median is computed one way everywhere.
AWK_MEDIAN='function median(v, n,   i, j, t) {
  for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
  return n ? v[int((n + 1) / 2)] : 0 }
'

# notag_build: a second build without the per-CPU free tag (cmake
# -DKSLAB_FREE_TAG=OFF; src/percpu.h, rule 8), for the rows that show what
# the double-free defence costs (sections 70 and 86).  Sets NOTAG_KM (its
# libkslab-malloc) and NOTAG_B (its bench programs), both empty if it does
# not build.  Built once per run.
NOTAG_DIR=build-notag      # the same build make test-notag makes and tests
NOTAG_KM=
NOTAG_B=
notag_build() {
  [ -n "$NOTAG_KM" ] && return 0
  if cmake -S . -B $NOTAG_DIR -DCMAKE_BUILD_TYPE=Release -DKSLAB_FREE_TAG=OFF >/dev/null &&
     cmake --build $NOTAG_DIR -j"$(nproc)" --target kslab-malloc micro_static bulk_static >/dev/null 2>&1; then
    NOTAG_KM=$PWD/$NOTAG_DIR/libkslab-malloc.so
    NOTAG_B=$NOTAG_DIR/bench
  else
    echo "notag build failed: the no-tag rows are left out" >&2
  fi
}

# fakecpu_build: the valgrind measurement builds (cmake -DKSLAB_FAKE_CPU=ON,
# src/prim_linux.c): under valgrind, which has no rseq, they run the per-CPU
# mode on a fake CPU 0, so callgrind and cachegrind count the default mode's
# paths (one-thread programs only).  Two: the default and, for what the free
# tag costs, one without the tag.  Sets FAKE_KM / FAKE_B and FAKE_NOTAG_KM /
# FAKE_NOTAG_B, empty if they do not build or if valgrind is missing.  Built
# once per run.
FAKE_DIR=build-fakecpu
FAKE_KM=
FAKE_B=
FAKE_NOTAG_KM=
FAKE_NOTAG_B=
fakecpu_build() {
  [ -n "$FAKE_KM" ] && return 0
  command -v valgrind >/dev/null || return 0
  local d
  for d in $FAKE_DIR $FAKE_DIR-notag; do
    local tag=ON
    [ $d = $FAKE_DIR ] || tag=OFF
    if ! cmake -S . -B $d -DCMAKE_BUILD_TYPE=Release -DKSLAB_FAKE_CPU=ON -DKSLAB_FREE_TAG=$tag >/dev/null ||
       ! cmake --build $d -j"$(nproc)" --target kslab-malloc micro_static >/dev/null 2>&1; then
      echo "fake-CPU build $d failed: its rows are left out" >&2
      continue
    fi
    # the build's point: under valgrind it runs the per-CPU mode (KSLAB_PERCPU=1
    # warns when it cannot)
    if KSLAB_PERCPU=1 valgrind -q $d/bench/micro_static --quick 2>&1 >/dev/null | grep -q 'per-thread mode'; then
      echo "fake-CPU build $d runs the per-thread mode under valgrind: its rows are left out" >&2
      continue
    fi
    if [ $d = $FAKE_DIR ]; then
      FAKE_KM=$PWD/$d/libkslab-malloc.so; FAKE_B=$d/bench
    else
      FAKE_NOTAG_KM=$PWD/$d/libkslab-malloc.so; FAKE_NOTAG_B=$d/bench
    fi
  done
}

REPORT="$OUT/report.md"
{
  echo "# kslab benchmark report"
  echo
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)."
  echo "Date: $(date -u +%Y-%m-%dT%H:%MZ).  Timings are medians of 7 runs (spread: min-max);"
  echo "cycles are rdtsc ticks.  The machine is shared and noisy: compare rows, not absolutes."
  echo "Slab descriptor (struct slab): $(grep -o 'sizeof(struct slab) == [0-9]*' src/pages.h | awk '{print $4}') bytes."
  echo
} > "$REPORT"

# KSLAB_BENCH_SECTIONS="40 55": only the sections whose file names start
# with those numbers (the fast-path table is section 00), for working on
# one part; make bench runs everything.
want_section() {
  [ -z "${KSLAB_BENCH_SECTIONS:-}" ] && return 0
  local n
  for n in $KSLAB_BENCH_SECTIONS; do case $1 in "$n"*) return 0 ;; esac; done
  return 1
}

if want_section 00; then
# ---- 1. micro: one alloc+free pair ------------------------------------------
echo "== micro: alloc+free pairs"
: > "$RAW/micro.tsv"
# both cpu modes, interleaved: the per-CPU (rseq) default, the same on
# kslab's own rseq registration (glibc told to make none, as glibc before
# 2.35 makes none) and KSLAB_PERCPU=0
for r in 1 2; do
  $B/micro_static "kslab (static, per-CPU) #$r" >> "$RAW/micro.tsv"
  GLIBC_TUNABLES=glibc.pthread.rseq=0 $B/micro_static "kslab (static, per-CPU, own rseq) #$r" >> "$RAW/micro.tsv"
  KSLAB_PERCPU=0 $B/micro_static "kslab (static, per-thread) #$r" >> "$RAW/micro.tsv"
done
$B/micro_shared "kslab (libkslab.so, per-CPU)" >> "$RAW/micro.tsv"
KSLAB_PERCPU=0 $B/micro_shared "kslab (libkslab.so, per-thread)" >> "$RAW/micro.tsv"
for p in $PEERS; do
  if peer_ok "$p"; then run_peer "$p" $B/malloc_pair "$p" >> "$RAW/micro.tsv"
  else printf '%s\tmissing\n' "$p" >> "$RAW/micro.tsv"; fi
done
{
  echo "## Fast path: one allocation + free pair"
  echo
  echo "kslab: \`kmem_cache_alloc\`+\`kmem_cache_free\` of a 256-byte object (SLAB_HWCACHE_ALIGN),"
  echo "\`kmalloc(32)\`+\`kfree\`, and the first pair again for a cache with a constructor (its"
  echo "free tag after the object, so its pops and pushes leave the inline paths: README, \"The tag"
  echo "at offset 0 on the inline paths\").  Peers: \`malloc\`+\`free\` of the same sizes."
  echo "*own rseq*: the per-CPU mode on kslab's own rseq registration, where glibc made none"
  echo "(here \`GLIBC_TUNABLES=glibc.pthread.rseq=0\`; glibc before 2.35 makes none)."
  echo
  echo "| allocator | pair | ns/pair (min-max) | cycles/pair |"
  echo "|---|---|---|---|"
  awk -F'\t' '$2=="missing"{printf "| %s | missing (package not installed) | | |\n",$1; next}
              {printf "| %s | %s | %.2f (%.2f-%.2f) | %.1f |\n",$1,$2,$3,$4,$5,$6}' "$RAW/micro.tsv"
  echo
} >> "$REPORT"
cat "$RAW/micro.tsv" | column -t -s $'\t'
fi

for s in bench/sections/*.sh; do
  [ -e "$s" ] || continue
  want_section "$(basename "$s")" || continue
  # shellcheck source=/dev/null
  . "$s"
done

echo
echo "report: $REPORT"
