# Seeds 003/004, continued: the descriptor table where it lives, larger than the
# (simulated) LL, and the seeds' memory arithmetic.
echo "== seeds 003/004: descriptor table beyond the LL (cachegrind, smaller LL)"
K32_LIVE=$((1 << 20)); K32_PAIRS=4000000
: > "$RAW/k32_desc.tsv"
for ll in 262144 524288 1048576; do
  for v in "48:kmalloc32" "64:kmalloc32_desc64"; do
    d=${v%%:*}; exe=${v#*:}
    for pairs in 0 $K32_PAIRS; do
      out=$(mktemp)
      KSLAB_K32_LIVE=$K32_LIVE KSLAB_K32_PAIRS=$pairs valgrind --tool=cachegrind --cache-sim=yes \
        --LL=$ll,16,64 --cachegrind-out-file="$out" $B/$exe random x >/dev/null 2>&1 || true
      awk -v d=$d -v ll=$ll -v p=$pairs '/^events:/{for(i=2;i<=NF;i++) ev[i]=$i} /^summary:/{for(i=2;i<=NF;i++) v[ev[i]]=$i}
           END{printf "%s\t%s\t%s\t%s\t%s\n", d, ll, p, v["D1mr"], v["DLmr"]}' "$out" >> "$RAW/k32_desc.tsv"
      rm -f "$out"
    done
  done
done
{
  echo "### The descriptor table larger than the last-level cache"
  echo
  echo "The table above keeps every descriptor in cachegrind's default simulated LL (this machine's"
  echo "own LL size), so the descriptor's size cannot show.  Here the simulated LL is made smaller"
  echo "(\`--LL=SIZE,16,64\`) while the heap stays at $K32_LIVE live 32-byte objects: $((K32_LIVE * 32 / 4096)) slab pages,"
  echo "so a descriptor table of $((K32_LIVE * 32 / 4096 * 48 / 1024)) KiB (48-byte) or $((K32_LIVE * 32 / 4096 * 64 / 1024)) KiB (64-byte), and the random mode's"
  echo "$K32_PAIRS pairs each free a random object (its descriptor looked up) and allocate one."
  echo "Misses per pair are the run's minus a run with no pairs (the same fill), over the pairs."
  echo "*vs 64-byte*: LL read misses of the 48-byte descriptor against the 64-byte one.  What to"
  echo "expect: a 48-byte stride puts one descriptor in four across two cache lines (its first 16"
  echo "bytes, which kfree reads, and the freelist pair the slab frees update), so it costs more D1"
  echo "misses; where both tables overflow the LL that can cost LL misses too, and where the smaller"
  echo "table fits beside the rest of the working set and the larger one does not, it saves them."
  echo
  echo "| simulated LL | descriptor | table KiB | D1 read misses / pair | LL read misses / pair | vs 64-byte |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' -v pairs=$K32_PAIRS -v pages=$((K32_LIVE * 32 / 4096)) '
    $3==0 { d1z[$1,$2]=$4; llz[$1,$2]=$5; next }
    { d1[$1,$2]=($4-d1z[$1,$2])/pairs; llm[$1,$2]=($5-llz[$1,$2])/pairs; if (!($2 in seen)) { seen[$2]=1; order[++n]=$2 } }
    END { for (i=1;i<=n;i++) { ll=order[i]
            for (j=0;j<2;j++) { d=(j==0)?48:64
              vs = (d==48 && llm[64,ll]>0) ? sprintf("%+.1f %%", 100*(llm[48,ll]-llm[64,ll])/llm[64,ll]) : ""
              printf "| %d KiB | %d bytes | %d | %.3f | %.3f | %s |\n", ll/1024, d, pages*d/1024, d1[d,ll], llm[d,ll], vs } } }' "$RAW/k32_desc.tsv"
  echo
  echo "The seeds' memory arithmetic: one descriptor per 4 KiB page of slab memory."
  echo
  echo "| descriptor | bytes per GiB of slab memory | per TiB | against 64 bytes, per TiB |"
  echo "|---|---|---|---|"
  for d in 48 56 64; do
    awk -v d=$d 'BEGIN { per_gib=262144*d; printf "| %d bytes | %.0f MiB (%d x 262144 pages) | %.0f GiB | %s |\n", d, per_gib/1048576, d, per_gib*1024/1073741824, (d==64) ? "-" : sprintf("%.0f GiB saved", (64-d)*262144*1024/1073741824) }'
  done
  echo
} >> "$REPORT"
