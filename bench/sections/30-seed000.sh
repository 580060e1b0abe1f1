# Seed 000: slabinfo rows of kmalloc-32 ... kmalloc-512 after the same
# workload (the seed's own active-object counts), for SLAB with 32-bit
# freelist indexes, SLAB with byte indexes, and SLUB.
echo "== seed 000: slabinfo, SLAB int vs byte indexes vs SLUB"
: > "$RAW/seed000.tsv"
KSLAB_ALLOCATOR=slab KSLAB_SLAB_INDEX=int $B/seed000 "SLAB, unsigned int indexes" >> "$RAW/seed000.tsv"
KSLAB_ALLOCATOR=slab $B/seed000 "SLAB, byte indexes" >> "$RAW/seed000.tsv"
KSLAB_ALLOCATOR=slub $B/seed000 "SLUB" >> "$RAW/seed000.tsv"
{
  echo "## Seed 000: SLAB's byte-sized freelist indexes (slabinfo after the same workload)"
  echo
  echo "Workload: the seed's own active-object counts (kmalloc-32: 11200, -64: 2773, -96: 750,"
  echo "-128: 660, -192: 1040, -256: 210, -512: 527), allocated with \`kmalloc\`.  Memory = num_slabs"
  echo "x pagesperslab x 4 KiB; *saved* is against SLAB with unsigned-int indexes."
  echo
  echo "| allocator | cache | active_objs | num_objs | objsize | objperslab | pagesperslab | slabs | memory KiB | saved |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '{ mem=$8*$7*4; if ($1 ~ /int/) base[$2]=mem; m[NR]=mem; line[NR]=$0 }
    END { for (i=1;i<=NR;i++) { split(line[i], f, "\t"); b=base[f[2]];
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %.1f %% |\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], m[i], (b>0 ? 100*(b-m[i])/b : 0) } }' "$RAW/seed000.tsv"
  echo
  awk -F'\t' '{ t[$1]+=$8*$7*4 } END { for (k in t) printf "- total %s: %d KiB\n", k, t[k] }' "$RAW/seed000.tsv" | sort
  echo
} >> "$REPORT"
