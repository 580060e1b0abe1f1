# Fast-path instruction counts: a repeatable figure beside the noisy timings.
# callgrind runs micro_static --quick (3 x 1000 pairs after one warm-up) and
# reports the instructions per call of each front door's fast path.
echo "== fast-path instructions (callgrind)"
if command -v valgrind >/dev/null; then
  valgrind --tool=callgrind --callgrind-out-file="$RAW/micro.callgrind" $B/micro_static --quick >/dev/null 2>&1
  callgrind_calls "$RAW/micro.callgrind" > "$RAW/fastpath_ir.tsv"
  {
    echo "## Fast-path instructions per call (callgrind, repeatable)"
    echo
    echo "Valgrind has no rseq, so these are the per-thread mode's paths (the per-CPU mode's"
    echo "are timed, in both modes, in the first table)."
    echo
    echo "| front door | instructions per call |"
    echo "|---|---|"
    awk -F'\t' '{printf "| `%s` | %s |\n", $1, $2}' "$RAW/fastpath_ir.tsv"
    echo
  } >> "$REPORT"
  cat "$RAW/fastpath_ir.tsv"
fi
