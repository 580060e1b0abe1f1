# Seed 001: bulk alloc/free per object, one table per kslab back-end, peers'
# malloc/free one by one in the fallback column; and the plot.
echo "== seed 001: bulk sizes"
: > "$RAW/bulk.tsv"
for a in $BACKENDS; do
  KSLAB_ALLOCATOR=$a $B/bulk_static "kslab-$a" >> "$RAW/bulk.tsv"
done
for p in $PEERS; do
  if peer_ok "$p"; then run_peer "$p" $B/malloc_bulk "$p" >> "$RAW/bulk.tsv"
  else printf '%s\t0\tmissing\n' "$p" >> "$RAW/bulk.tsv"; fi
done
{
  echo "## Seed 001: bulk alloc/free (256-byte objects, SLAB_HWCACHE_ALIGN)"
  echo
  echo "Per object, median of 7 runs: *fallback* = N \`kmem_cache_alloc\` then N \`kmem_cache_free\`;"
  echo "*kmem_cache_free_bulk* = \`kmem_cache_alloc_bulk\` + \`kmem_cache_free_bulk\`; *kfree_bulk* ="
  echo "\`kmem_cache_alloc_bulk\` + \`kfree_bulk\`.  Peers: N \`malloc(256)\` then N \`free\` (their fallback)."
  echo "*ratio* = kmem_cache_free_bulk / fallback (the seed's SLUB: 0.41 at 16-64)."
  echo
  awk -F'\t' -v peers="$PEERS" '
    { key=$1 SUBSEP $2 SUBSEP $3; cyc[key]=$7; ns[key]=$4; who[$1]=1; if ($3=="missing") miss[$1]=1 }
    END {
      n=split("1 2 3 4 8 16 30 32 34 48 64 128 158 250", sz, " ")
      for (w in who) if (w ~ /^kslab-/) {
        printf "### %s\n\nfastpath (alloc+free of one object): %s cycles, %s ns\n\n", w, cyc[w SUBSEP 0 SUBSEP "fastpath"], ns[w SUBSEP 0 SUBSEP "fastpath"]
        printf "| bulk | fallback | kmem_cache_free_bulk | kfree_bulk | ratio |"
        np=split(peers, pr, " "); for (i=1;i<=np;i++) printf " %s fallback |", pr[i]
        printf "\n|---|---|---|---|---|"; for (i=1;i<=np;i++) printf "---|"; printf "\n"
        for (i=1;i<=n;i++) { s=sz[i]
          f=w SUBSEP s SUBSEP "fallback"; b=w SUBSEP s SUBSEP "kmem_cache_free_bulk"; k=w SUBSEP s SUBSEP "kfree_bulk"
          printf "| %d | %s cycles %s ns | %s cycles %s ns | %s cycles %s ns | %.2f |", s, cyc[f], ns[f], cyc[b], ns[b], cyc[k], ns[k], (ns[f]>0? ns[b]/ns[f] : 0)
          for (j=1;j<=np;j++) { pk=pr[j] SUBSEP s SUBSEP "fallback"; if (pr[j] in miss) printf " missing |"; else printf " %s cycles %s ns |", cyc[pk], ns[pk] }
          printf "\n"
        }
        printf "\n"
      }
    }' "$RAW/bulk.tsv"
} >> "$REPORT"
if command -v gnuplot >/dev/null; then
  awk -F'\t' '$2>0 && $3!="missing" {print > ("'"$RAW"'/plot_" $1 "_" $3 ".dat")}' "$RAW/bulk.tsv"
  {
    echo "set terminal pngcairo size 1100,650 noenhanced"
    echo "set output '$OUT/bulk.png'"
    echo "set title 'Seed 001: cycles per object vs bulk size (256-byte objects)'"
    echo "set xlabel 'bulk size'; set ylabel 'cycles per object (rdtsc)'; set logscale x 2; set key outside right"
    printf "plot "
    first=1
    for f in "$RAW"/plot_*.dat; do
      t=$(basename "$f" .dat | sed 's/^plot_//')
      [ $first = 1 ] || printf ", "
      printf "'%s' using 2:7 with linespoints title '%s'" "$f" "$t"
      first=0
    done
    echo
  } > "$RAW/bulk.gp"
  gnuplot "$RAW/bulk.gp" && echo "![cycles per object vs bulk size](bulk.png)" >> "$REPORT" && echo >> "$REPORT"
fi
