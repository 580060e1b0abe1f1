# Debugging's cost (issue 11): the kmem_cache and kmalloc(32) pairs (micro)
# and python3 (alloc_heavy.py through libkslab-malloc) under each KSLAB_DEBUG
# flag, as ratios to no debugging; beside glibc with MALLOC_CHECK_=3 (its
# libc_malloc_debug) and valgrind memcheck on glibc; kslab built with ASan
# and kslab under valgrind (objects annotated for them).  One run each (the
# micro rows are medians of 7 runs of 20 M pairs without debugging, of 3 runs
# of 1000 with it); valgrind only for the pairs.
echo "== debugging: cost of each KSLAB_DEBUG flag"
KM=$PWD/build/libkslab-malloc.so
MDEBUG=/lib/x86_64-linux-gnu/libc_malloc_debug.so.0
: > "$RAW/debug.tsv"
pair_ns() {  # OUT-ROW-NAME: the ns median of that row of micro's output (stdin)
  awk -F'\t' -v w="$1" '$2 == w { print $3 }'
}
row() {  # LABEL OUT [PY]: a debug.tsv row from micro_static's or malloc_pair's output
  local k='kmem_cache_alloc+free(256)' m='kmalloc(32)+kfree'
  case "$2" in *$'\tmalloc+free(256)\t'*) k='malloc+free(256)' m='malloc(32)+free' ;; esac
  printf '%s\t%s\t%s\t%s\n' "$1" "$(echo "$2" | pair_ns "$k")" "$(echo "$2" | pair_ns "$m")" \
    "${3-}" >> "$RAW/debug.tsv"
}
py_s() {  # ENV...: python3 alloc_heavy.py's wall seconds under libkslab-malloc
  alloc_heavy "$KM" "$@" | cut -f1
}
for f in none F Z P U FZPU; do
  if [ $f = none ]; then out=$($B/micro_static x); py=$(py_s)
  # --quick (3 x 1000 pairs): a debugged pair costs 20-1000x, U a backtrace each
  else out=$(KSLAB_DEBUG=$f $B/micro_static --quick x 2>/dev/null); py=$(py_s KSLAB_DEBUG=$f); fi
  row "kslab $f" "$out" "$py"
done
# An ASan build of kslab (Release, -fsanitize=address), its objects annotated
# for ASan (the default there) and not (KSLAB_ASAN=0): 200 000 pairs a run.
# python3 cannot run on it (ASan's runtime owns malloc).
ASANB=build-bench-asan
if cmake -S . -B $ASANB -DCMAKE_BUILD_TYPE=Release -DKSLAB_SANITIZE=address >/dev/null &&
   cmake --build $ASANB -j"$(nproc)" --target micro_static >/dev/null 2>&1; then
  for a in 1 0; do
    out=$(KSLAB_ASAN=$a BENCH_ITERS=200000 ASAN_OPTIONS=detect_leaks=0 $ASANB/bench/micro_static x)
    [ $a = 1 ] && lab="kslab, ASan build, objects annotated" || lab="kslab, ASan build, KSLAB_ASAN=0"
    row "$lab" "$out"
  done
fi
if command -v valgrind >/dev/null; then
  # valgrind on kslab: every object announced to memcheck (3 x 1000 pairs)
  out=$(valgrind -q --tool=memcheck $B/micro_static --quick x 2>/dev/null)
  row "kslab under valgrind memcheck" "$out"
fi
gl=$($B/malloc_pair x)
glpy=$(alloc_heavy "" | cut -f1)
row glibc "$gl" "$glpy"
if [ -e "$MDEBUG" ]; then
  md=$(LD_PRELOAD=$MDEBUG MALLOC_CHECK_=3 $B/malloc_pair x)
  mdpy=$(alloc_heavy "$MDEBUG" MALLOC_CHECK_=3 | cut -f1)
  row "glibc MALLOC_CHECK_=3" "$md" "$mdpy"
fi
if command -v valgrind >/dev/null; then
  # --quick: 3 x 1000 pairs (valgrind runs every instruction ~50x slower)
  vg=$(valgrind -q --tool=memcheck $B/malloc_pair --quick x 2>/dev/null)
  # python3 is not run under memcheck: alloc_heavy.py would take more than 15
  # minutes there (a one-line python3 -c takes a minute on this machine)
  row "glibc under valgrind memcheck" "$vg"
fi
{
  echo "## Debugging: what each KSLAB_DEBUG flag costs (issue 11)"
  echo
  echo "The pairs (ns) and python3 alloc_heavy.py (s, through libkslab-malloc), each flag applied"
  echo "to every cache (KSLAB_DEBUG=F, Z, ...), and the ratio to kslab without debugging; glibc's"
  echo "rows (its malloc pairs, ratios to plain glibc) beside them.  A debugged cache takes a locked"
  echo "path for every allocation and free (no sheaves), as the kernel's debug caches do; U takes a"
  echo "backtrace at each (glibc's backtrace(), a few microseconds).  One run each: a rough"
  echo "figure.  python3 is not run under valgrind (it would take more than 15 minutes) nor on"
  echo "the ASan build (ASan's runtime replaces malloc, so the drop-in cannot load).  Under ASan"
  echo "and valgrind every cache takes the debug path and tells the tool which bytes are usable."
  echo
  echo "| configuration | kmem_cache pair (256) | kmalloc(32) pair | python3 |"
  echo "|---|---|---|---|"
  awk -F'\t' '
    function cell(v, base) { if (v == "" || base == "" || base + 0 == 0) return (v == "" ? "-" : v)
      return sprintf("%.2f (%.1fx)", v, v / base) }
    $1 == "kslab none" { k1 = $2; k2 = $3; k3 = $4 }
    $1 == "glibc" { g1 = $2; g2 = $3; g3 = $4 }
    { row[NR] = $0 }
    END { for (i = 1; i <= NR; i++) { split(row[i], f, "\t")
            if (f[1] ~ /^kslab/) { b1 = k1; b2 = k2; b3 = k3 } else { b1 = g1; b2 = g2; b3 = g3 }
            printf "| %s | %s | %s | %s |\n", f[1], cell(f[2], b1), cell(f[3], b2), cell(f[4], b3) } }' \
    "$RAW/debug.tsv"
  echo
} >> "$REPORT"
