# Threads (issue 10): a larson-style server with cross-thread frees, a
# producer/consumer pipeline, and the RSS of 1000 idle threads, kslab
# (through libkslab-malloc) beside glibc and the peers in the same run.  The
# whole set is repeated THREADS_ROUNDS times (9: the 4-thread server row is
# bimodal for every allocator, 2x between runs, and with 5 rounds a row's
# ratio of medians and its paired ratio disagreed by up to 0.3 in one
# report; that was while each thread ran a fixed number of steps and the
# row timed the last to finish, the early ones spinning in sched_yield:
# the server rows now run a fixed time, bench/threads.c), interleaved;
# medians kept.  The server rows run SERVER_ROUNDS
# (21): at 9 rounds their paired ratios moved by 0.1-0.2 from report to
# report (2 threads 1.01 then 0.85 against tcmalloc), more than the
# target's margin; a round of them is about 6 s of the section's time.
echo "== threads: server, pipeline, idle threads"
KM=$PWD/build/libkslab-malloc.so
ROUNDS=${THREADS_ROUNDS:-9}
SROUNDS=$(more_rounds "${SERVER_ROUNDS:-21}" "$ROUNDS")
: > "$RAW/threads.tsv"
RUNCMD=$PWD/$B/runcmd
notag_build
threads_run() {  # WHO ARGS...: the program's row, then runcmd's peak RSS (KiB)
  local who=$1 out; shift
  case $who in
    kslab) out=$(LD_PRELOAD=$KM $RUNCMD $B/malloc_threads "$who" "$@") ;;
    kslab-thread) out=$(KSLAB_PERCPU=0 LD_PRELOAD=$KM $RUNCMD $B/malloc_threads "$who" "$@") ;;
    kslab-notag) out=$(LD_PRELOAD=$NOTAG_KM $RUNCMD $B/malloc_threads "$who" "$@") ;;
    *) out=$(run_peer "$who" $RUNCMD $B/malloc_threads "$who" "$@") ;;
  esac
  printf '%s\t%s\n' "$(echo "$out" | head -1)" "$(echo "$out" | tail -1 | cut -f2)"
}
for r in $(seq "$SROUNDS"); do
  for who in $(rotated "$r" kslab kslab-thread kslab-notag $PEERS); do
    case $who in kslab-notag) [ -n "$NOTAG_KM" ] || continue ;; kslab*) ;; *) peer_ok "$who" || continue ;; esac
    for n in 2 4 16; do threads_run "$who" server $n >> "$RAW/threads.tsv"; done
    [ $who = kslab-notag ] && continue    # the tag's cost: the server rows only
    [ "$r" -le "$ROUNDS" ] || continue    # the other rows: ROUNDS
    for n in 2 4 16; do threads_run "$who" pipeline $n >> "$RAW/threads.tsv"; done
    threads_run "$who" idle 1000 >> "$RAW/threads.tsv"
  done
done
{
  echo "## Threads: server, pipeline, 1000 idle threads (issue 10)"
  echo
  echo "server N: N threads each keep 2048 live objects of random sizes 8-1000 B and replace a"
  echo "random one per step; one new object in four is handed to the next thread, which frees it"
  echo "(M allocations/s over a fixed 0.3 s in which every thread runs, as larson's; higher is better).  pipeline N: one producer allocates 64-byte objects,"
  echo "N-1 consumers free them (M objects/s).  idle 1000: RSS with 1000 threads alive that each"
  echo "allocated and freed one object in 8 size classes (KiB, lower is better; 64 KiB stacks)."
  echo "Median of $ROUNDS interleaved rounds ($SROUNDS for the server rows), peak RSS in MiB beside the rates; *kslab vs best*"
  echo "is kslab's figure over the best peer's (above 1 is better for rates, below 1 for RSS)."
  echo
  echo "*paired* is the same comparison made round by round: for each peer, the median over the"
  echo "rounds of kslab's figure over the peer's in that round, and of those the peer kslab does"
  echo "worst against.  Each round runs every allocator back to back, so its ratio cancels the"
  echo "machine's swings in load, which move a row's medians by up to 2x here."
  echo
  echo "*kslab* is the default per-CPU mode; *per-thread* the same library with KSLAB_PERCPU=0."
  echo "*no tag* (server rows only) is a measurement build without the per-CPU free tag"
  echo "(\`cmake -DKSLAB_FREE_TAG=OFF\`), the defence that stops a double free across CPUs (issue"
  echo "12): never installed, it shows what that defence costs; *no tag, paired* is its paired"
  echo "ratio against the peer it does worst against."
  echo
  echo "| row | kslab | kslab per-thread | kslab no tag | glibc | jemalloc | mimalloc | tcmalloc | kslab vs best peer | paired | no tag, paired |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' -v peers="$PEERS" "$AWK_MEDIAN"'
    function med(k, arr, c,   n, i, v) { n = c[k]; for (i = 1; i <= n; i++) v[i] = arr[k, i] + 0
      return median(v, n) }
    function paired(a, b,   n, i, v) { n = 0   # round by round, a over b
      for (i = 1; i <= cnt[a] && i <= cnt[b]; i++) if (val[b, i] > 0) v[++n] = val[a, i] / val[b, i]
      return n ? median(v, n) : -1 }
    { k = $2 SUBSEP $1; if (!($2 in seen)) { seen[$2] = 1; rows[++nr] = $2; unit[$2] = $4 }
      cnt[k]++; val[k, cnt[k]] = $3; rss[k, cnt[k]] = $5 }
    END { np = split("kslab kslab-thread kslab-notag " peers, who, " ")
      for (i = 1; i <= nr; i++) { row = rows[i]; line = "| " row " (" unit[row] ")"; best = -1
        lower = (unit[row] ~ /RSS/)
        for (w = 1; w <= np; w++) { k = row SUBSEP who[w]
          if (!(k in cnt)) { line = line (w == 3 ? " | -" : " | missing"); continue }
          m = med(k, val, cnt)
          if (lower) cell = sprintf("%d", m); else cell = sprintf("%.2f, %d MiB", m, med(k, rss, cnt) / 1024)
          line = line " | " cell
          if (w == 1) mine = m
          else if (w > 3 && (best < 0 || (lower && m < best) || (!lower && m > best))) best = m }
        worst = -1; ntw = -1
        for (w = 4; w <= np; w++) { r = paired(row SUBSEP who[1], row SUBSEP who[w])
          if (r > 0 && (worst < 0 || (lower && r > worst) || (!lower && r < worst))) worst = r
          r = paired(row SUBSEP who[3], row SUBSEP who[w])
          if (r > 0 && (ntw < 0 || (lower && r > ntw) || (!lower && r < ntw))) ntw = r }
        printf "%s | %.2fx | %.2fx | %s |\n", line, (best > 0 ? mine / best : 0), (worst > 0 ? worst : 0),
               (ntw > 0 ? sprintf("%.2fx", ntw) : "-") } }' "$RAW/threads.tsv"
  echo
} >> "$REPORT"
