# Seed 002: the hackbench analog, every kslab back-end and every peer, on an
# empty heap and (the seed's condition) on a boot-like resident heap.
echo "== seed 002: messaging (hackbench analog), empty heap and boot heap"
G=${KSLAB_MSG_GROUPS:-4}; L=${KSLAB_MSG_LOOPS:-1000}; R=3
: > "$RAW/messaging.tsv"
msg_row() {  # msg_row MODE LABEL CMD...: one run, "label mode fields..." appended
  local mode=$1 label=$2; shift 2
  "$@" -g $G -l $L "$label" | awk -v m="$mode" -F'\t' 'BEGIN{OFS="\t"} {$1=$1 OFS m; print}' >> "$RAW/messaging.tsv"
}
for r in $(seq $R); do
  for mode in empty boot; do
    flag=; [ $mode = boot ] && flag=-b
    for a in $BACKENDS; do msg_row $mode "kslab-$a" env KSLAB_ALLOCATOR=$a $B/messaging $flag; done
    for p in $PEERS; do
      if peer_ok "$p"; then msg_row $mode "$p" run_peer "$p" $B/messaging_malloc $flag
      else printf '%s\t%s\tmissing\n' "$p" $mode >> "$RAW/messaging.tsv"; fi
    done
  done
done
# how much the boot heap's fragmentation matters: free one object in N after boot
: > "$RAW/messaging_frag.tsv"
for r in $(seq $R); do
  for n in 2 4 8; do
    for a in slob slob-seg slub; do
      KSLAB_ALLOCATOR=$a $B/messaging -b -f $n -g $G -l $L "kslab-$a" | awk -v n=$n -F'\t' '{print $1 "\t" n "\t" $2}' >> "$RAW/messaging_frag.tsv"
    done
  done
done
MED='function med(s,   v, n, i, j, t) { n=split(s, v, " "); for (i=1;i<=n;i++) v[i]+=0; for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) { t=v[i]; v[i]=v[j]; v[j]=t } return v[int((n+1)/2)] }
     function mn(s,   v, n, i, m) { n=split(s, v, " "); m=v[1]+0; for (i=2;i<=n;i++) if (v[i]+0<m) m=v[i]+0; return m }
     function mx(s,   v, n, i, m) { n=split(s, v, " "); m=v[1]+0; for (i=2;i<=n;i++) if (v[i]+0>m) m=v[i]+0; return m }'
{
  echo "## Seed 002: messaging, a hackbench analog (\`-g $G -l $L\`, thread mode)"
  echo
  echo "$G groups of 20 sender and 20 receiver threads; each sender sends $L messages of 100"
  echo "bytes to each receiver of its group: \`kmalloc\` (peers: \`malloc\`) by the sender, the"
  echo "pointer through a pipe (one page of pipe buffer), \`kfree\` by the receiver: $((G*20*20*L))"
  echo "messages.  Median of $R runs (min-max).  Slab kB: pages held by kslab's slabs (the kernel's"
  echo "\"Slab:\" line); RSS from /proc/self/status."
  echo
  echo "**Boot heap** (the seed's condition): before the messages, a resident heap like a booted"
  echo "kernel's - seed 000's kmalloc-32 ... kmalloc-512 active-object counts x5, plus 8000"
  echo "dentry-sized (192 B), 2000 inode-sized (600 B), 4000 buffer_head-sized (104 B) and 3000"
  echo "vm_area_struct-sized (200 B) objects of dedicated caches (peers: malloc), allocated"
  echo "interleaved in a fixed random order, then one in four freed at random (about 9.6 MB"
  echo "allocated, 7.2 MB left live).  *After boot* is measured before the messages, *after run*"
  echo "after them, as the seed's two \"Slab:\" lines.  **Empty heap**: the messages alone.  *vs"
  echo "slob-seg*: seconds against kslab-slob-seg's on the same heap (the seed compares SLOB with"
  echo "its segregated rework: 9-13x slower)."
  echo
  echo "| allocator | seconds, boot heap (min-max) | vs slob-seg | seconds, empty heap (min-max) | vs slob-seg | slab kB after boot | slab kB after run | RSS kB after boot | RSS kB after run | peak RSS kB |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' "$MED"'
    $3=="missing" { miss[$1]=1; if (!($1 in order)) order[$1]=++n; next }
    { if (!($1 in order)) order[$1]=++n; k=$1 SUBSEP $2; t[k]=t[k] " " $3; sa[k]=sa[k] " " $4; ra[k]=ra[k] " " $6; hw[k]=hw[k] " " $7; sb[k]=sb[k] " " $8; rb[k]=rb[k] " " $9 }
    END { for (a in order) idx[order[a]]=a
          bref=med(t["kslab-slob-seg" SUBSEP "boot"]); eref=med(t["kslab-slob-seg" SUBSEP "empty"])
          for (i=1;i<=n;i++) { a=idx[i]
            if (a in miss) { printf "| %s | missing | | | | | | | | |\n", a; continue }
            b=a SUBSEP "boot"; e=a SUBSEP "empty"
            slab_b = (a ~ /^kslab/) ? med(sb[b]) : "-"; slab_a = (a ~ /^kslab/) ? med(sa[b]) : "-"
            printf "| %s | %.3f (%.3f-%.3f) | %.2fx | %.3f (%.3f-%.3f) | %.2fx | %s | %s | %d | %d | %d |\n", a,
              med(t[b]), mn(t[b]), mx(t[b]), med(t[b])/bref, med(t[e]), mn(t[e]), mx(t[e]), med(t[e])/eref,
              slab_b, slab_a, med(rb[b]), med(ra[b]), med(hw[b]) } }' "$RAW/messaging.tsv"
  echo
  echo "How much the boot heap's fragmentation matters: the boot heap with one object in N freed"
  echo "after boot (seconds, median of $R; *SLOB / slob-seg* is the seed's ratio)."
  echo
  echo "| freed after boot | kslab-slob | kslab-slob-seg | kslab-slub | SLOB / slob-seg |"
  echo "|---|---|---|---|---|"
  awk -F'\t' "$MED"'
    { k=$1 SUBSEP $2; t[k]=t[k] " " $3; ns[$2]=1 }
    END { for (n=2;n<=8;n*=2) if (n in ns) { s=med(t["kslab-slob" SUBSEP n]); g=med(t["kslab-slob-seg" SUBSEP n]); u=med(t["kslab-slub" SUBSEP n])
            printf "| 1 in %d | %.3f | %.3f | %.3f | %.2fx |\n", n, s, g, u, s/g } }' "$RAW/messaging_frag.tsv"
  echo
} >> "$REPORT"
if command -v gnuplot >/dev/null; then
  awk -F'\t' '$3!="missing" { k=$1; if ($2=="boot") { b[k]+=$3; nb[k]++ } else { e[k]+=$3; ne[k]++ } }
    END { for (k in b) printf "\"%s\" %.3f %.3f\n", k, b[k]/nb[k], (ne[k] ? e[k]/ne[k] : 0) }' "$RAW/messaging.tsv" | sort > "$RAW/messaging.dat"
  gnuplot <<GP && echo "![messaging seconds](messaging.png)" >> "$REPORT" && echo >> "$REPORT"
set terminal pngcairo size 900,450 noenhanced
set output '$OUT/messaging.png'
set title 'Seed 002 analog: messaging, mean seconds (lower is better)'
set style data histograms; set style histogram clustered gap 1
set style fill solid 0.6; set ylabel 'seconds'; set xtics rotate by -30
plot '$RAW/messaging.dat' using 2:xtic(1) title 'boot heap', '' using 3 title 'empty heap'
GP
fi
