# Seeds 003/004: 16.8 M kmalloc(32)/kfree pairs, time and simulated LLC.
echo "== seeds 003/004: kmalloc(32)/kfree pairs (native, then cachegrind)"
: > "$RAW/k32.tsv"
cg() {  # cg LABEL MODE PRELOAD CMD...: append label, mode, LL loads, LL load misses, instructions
  local label=$1 mode=$2 pre=$3; shift 3
  local out; out=$(mktemp)
  if [ -n "$pre" ]; then
    LD_PRELOAD="$pre" valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out" "$@" >/dev/null 2>&1 || true
  else
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out" "$@" >/dev/null 2>&1 || true
  fi
  awk -v l="$label" -v m="$mode" '/^events:/{for(i=2;i<=NF;i++) ev[i]=$i} /^summary:/{for(i=2;i<=NF;i++) v[ev[i]]=$i}
       END{printf "%s\t%s\t%s\t%s\t%s\n", l, m, v["D1mr"], v["DLmr"], v["Ir"]}' "$out" >> "$RAW/k32_cg.tsv"
  rm -f "$out"
}
: > "$RAW/k32_cg.tsv"
for mode in loop random; do
  $B/kmalloc32 $mode "kslab (48-byte struct slab)" >> "$RAW/k32.tsv"
  $B/kmalloc32_desc64 $mode "kslab (64-byte struct slab)" >> "$RAW/k32.tsv"
  cg "kslab (48-byte struct slab)" $mode "" $B/kmalloc32 $mode x
  cg "kslab (64-byte struct slab)" $mode "" $B/kmalloc32_desc64 $mode x
  for p in $PEERS; do
    if peer_ok "$p"; then
      run_peer "$p" $B/malloc32 $mode "$p" >> "$RAW/k32.tsv"
      cg "$p" $mode "${PEER[$p]}" $B/malloc32 $mode x
    else printf '%s\t%s\tmissing\n' "$p" $mode >> "$RAW/k32.tsv"; fi
  done
done
{
  echo "## Seeds 003/004: 16.8 M kmalloc(32)/kfree pairs"
  echo
  echo "*loop*: allocate and free at once, 16.8 M times (the seed's loop).  *random*: 1 M live"
  echo "32-byte objects; each pair frees a random one and allocates a replacement, so every free"
  echo "looks up a random slab descriptor.  LL loads / misses: valgrind cachegrind's simulated"
  echo "last-level cache (D1 read misses = loads reaching LL; LL read misses), whole program"
  echo "(including filling the working set), repeatable unlike timings here.  kslab's slab"
  echo "descriptor is 48 bytes; the 64-byte row is the same code with the descriptor padded to"
  echo "64 bytes, as \`struct page\` was before seeds 003/004."
  echo
  echo "| allocator | mode | ns/pair | cycles/pair | LL loads | LL load misses | instructions |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' 'NR==FNR {cg[$1 SUBSEP $2]=$3 "\t" $4 "\t" $5; next}
    $3=="missing" {printf "| %s | %s | missing | | | | |\n", $1, $2; next}
    { split(cg[$1 SUBSEP $2], c, "\t"); printf "| %s | %s | %.2f | %.1f | %s | %s | %s |\n", $1, $2, $4, $5, c[1], c[2], c[3] }' \
    "$RAW/k32_cg.tsv" "$RAW/k32.tsv"
  echo
} >> "$REPORT"

