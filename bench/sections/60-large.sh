# The page allocator (issue 9): malloc+free pairs of large and huge blocks,
# realloc growth, and a mixed-size workload with its peak RSS, kslab (through
# libkslab-malloc) beside glibc and the peers in the same run.  A pair row is
# the fastest of 7 runs of 200 000 pairs (1 ms each: one preemption or a
# neighbour's burst on this shared machine doubles a run, so the median of
# so few moved by up to 2x between reports while the minimum held), realloc
# the median of 3 runs, mixed one run; the whole set is repeated
# LARGE_ROUNDS times, interleaved, and the minimum (pairs) or median kept.
echo "== page allocator: large pairs, realloc growth, mixed sizes"
KM=$PWD/build/libkslab-malloc.so
ROUNDS=${LARGE_ROUNDS:-3}
: > "$RAW/large.tsv"
large_run() {  # WHO PROGRAM ARGS...
  local who=$1 prog=$2; shift 2
  case $who in
    kslab) LD_PRELOAD=$KM $B/$prog "$who" "$@" ;;
    *) run_peer "$who" $B/$prog "$who" "$@" ;;
  esac
}
for r in $(seq "$ROUNDS"); do
  for who in $(rotated "$r" kslab $PEERS); do
    [ "$who" = kslab ] || peer_ok "$who" || continue
    for s in 16384 131072 1048576 4194304 16777216; do large_run "$who" malloc_large pair $s >> "$RAW/large.tsv"; done
    large_run "$who" malloc_large realloc >> "$RAW/large.tsv"
    large_run "$who" malloc_large mixed >> "$RAW/large.tsv"
    large_run "$who" malloc_regrow >> "$RAW/large.tsv"
  done
done
{
  echo "## Page allocator: large blocks, realloc, mixed sizes (issue 9)"
  echo
  echo "malloc(SIZE), write its first byte, free: ns per pair.  realloc: one buffer grown from"
  echo "4 KiB to 32 MB in 4 KiB steps, the last byte of each step written: ms in all.  mixed:"
  echo "10 000 live blocks of log-uniform random sizes from 8 B to 512 KiB, 2 M replacements,"
  echo "first and last byte written: ns per replacement and the process's peak RSS.  regrow"
  echo "(bench/regrow.c): 400 000 blocks of 64 B, each written, all freed in the order they came,"
  echo "ten times: ns per block, malloc + write (the mean of rounds 2-10) and free (the fastest"
  echo "round); what giving freed memory back at once costs a program that builds it up again"
  echo "(README, \"The hot reserve\"; no target).  Pairs: the"
  echo "fastest of 7 runs in each of $ROUNDS interleaved rounds (a 1 ms run is doubled by one"
  echo "preemption on this shared machine); realloc and mixed: the median of the rounds.  *vs best peer* is kslab's figure over the best peer's (the"
  echo "targets: pairs within 1.2x, realloc within 2x of glibc)."
  echo
  echo "| row | kslab | glibc | jemalloc | mimalloc | tcmalloc | kslab vs best peer |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' -v peers="$PEERS" '
    function med(k,   n, i, j, t, v) { n = cnt[k]; for (i = 1; i <= n; i++) v[i] = val[k, i] + 0
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return v[int((n + 1) / 2)] }
    function lo(k,   i, m) { m = val[k, 1] + 0; for (i = 2; i <= cnt[k]; i++) if (val[k, i] + 0 < m) m = val[k, i] + 0; return m }
    { k = $2 SUBSEP $1; if (!($2 in seen)) { seen[$2] = 1; rows[++nr] = $2 }
      cnt[k]++; val[k, cnt[k]] = ($2 ~ /^malloc\(/ ? $4 : $3); if (NF >= 6) { rc[k]++; rss[k, rc[k]] = $6 } }
    END { np = split("kslab " peers, who, " ")
      for (i = 1; i <= nr; i++) { row = rows[i]; line = "| " row; best = -1
        for (w = 1; w <= np; w++) { k = row SUBSEP who[w]
          if (!(k in cnt)) { line = line " | missing"; continue }
          m = (row ~ /^malloc\(/ ? lo(k) : med(k)); cell = sprintf("%.1f", m)
          if (k in rc) { n = rc[k]; for (a = 1; a <= n; a++) vv[a] = rss[k, a] + 0
            for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++) if (vv[b] < vv[a]) { t = vv[a]; vv[a] = vv[b]; vv[b] = t }
            cell = cell sprintf(" ns, %d MiB", vv[int((n + 1) / 2)] / 1024) }
          line = line " | " cell
          if (w == 1) mine = m; else if (best < 0 || m < best) best = m }
        printf "%s | %.2fx |\n", line, (best > 0 ? mine / best : 0) } }' "$RAW/large.tsv"
  echo
} >> "$REPORT"
