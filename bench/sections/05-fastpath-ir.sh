# Fast-path instruction counts: a repeatable figure beside the noisy timings.
# callgrind runs micro_static --quick (3 x 1000 pairs after one warm-up) and
# reports the instructions per call of each front door's fast path, in the
# per-thread mode (valgrind has no rseq) and, with the fake-CPU build
# (bench/run.sh, fakecpu_build), in the per-CPU mode, the default one.
echo "== fast-path instructions (callgrind)"
if command -v valgrind >/dev/null; then
  valgrind --tool=callgrind --callgrind-out-file="$RAW/micro.callgrind" $B/micro_static --quick >/dev/null 2>&1
  callgrind_calls "$RAW/micro.callgrind" > "$RAW/fastpath_ir.tsv"
  fakecpu_build
  : > "$RAW/fastpath_ir_pcpu.tsv"
  if [ -n "$FAKE_B" ]; then
    valgrind --tool=callgrind --callgrind-out-file="$RAW/micro.pcpu.callgrind" $FAKE_B/micro_static --quick >/dev/null 2>&1
    callgrind_calls "$RAW/micro.pcpu.callgrind" > "$RAW/fastpath_ir_pcpu.tsv"
  fi
  {
    echo "## Fast-path instructions per call (callgrind, repeatable)"
    echo
    echo "*per-CPU*: the default mode, counted with the fake-CPU build (valgrind has no rseq; that"
    echo "build runs the per-CPU sections on a fake CPU 0 under it, bench/run.sh); *per-thread*:"
    echo "the fallback mode, which valgrind gives the normal build.  Both modes are timed in the"
    echo "first table."
    echo
    echo "| front door | per-CPU | per-thread |"
    echo "|---|---|---|"
    awk -F'\t' -v pf="$RAW/fastpath_ir_pcpu.tsv" '
      BEGIN { while ((getline l < pf) > 0) { split(l, a, "\t"); p[a[1]] = a[2] } }
      { printf "| `%s` | %s | %s |\n", $1, ($1 in p) ? p[$1] : "-", $2 }' "$RAW/fastpath_ir.tsv"
    echo
  } >> "$REPORT"
  cat "$RAW/fastpath_ir_pcpu.tsv" "$RAW/fastpath_ir.tsv"
fi
