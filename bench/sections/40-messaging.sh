# Seed 002: the hackbench analog, every kslab back-end and every peer.
echo "== seed 002: messaging (hackbench analog)"
G=${KSLAB_MSG_GROUPS:-4}; L=${KSLAB_MSG_LOOPS:-1000}; R=5
: > "$RAW/messaging.tsv"
for r in $(seq $R); do
  for a in $BACKENDS; do KSLAB_ALLOCATOR=$a $B/messaging -g $G -l $L "kslab-$a" >> "$RAW/messaging.tsv"; done
  for p in $PEERS; do
    if peer_ok "$p"; then run_peer "$p" $B/messaging_malloc -g $G -l $L "$p" >> "$RAW/messaging.tsv"
    else printf '%s\tmissing\n' "$p" >> "$RAW/messaging.tsv"; fi
  done
done
{
  echo "## Seed 002: messaging, a hackbench analog (\`-g $G -l $L\`, thread mode)"
  echo
  echo "$G groups of 20 sender and 20 receiver threads; each sender sends $L messages of 100"
  echo "bytes to each receiver of its group: \`kmalloc\` (peers: \`malloc\`) by the sender, the"
  echo "pointer through a pipe (one page of pipe buffer), \`kfree\` by the receiver: $((G*20*20*L))"
  echo "messages.  Median of $R runs (min-max).  Slab kB: pages held by kslab's slabs after the run"
  echo "and at the peak (the kernel's \"Slab:\" line); RSS from /proc/self/status."
  echo
  echo "| allocator | seconds (min-max) | slab kB after | slab kB peak | RSS kB after | peak RSS kB |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' '$2=="missing" { miss[$1]=1; order[$1]=++n; next }
    { if (!($1 in order)) order[$1]=++n; k=$1; c[k]++; t[k, c[k]]=$2; sa[k, c[k]]=$3; sp[k, c[k]]=$4; ra[k, c[k]]=$5; rp[k, c[k]]=$6 }
    function med(arr, k, n,   i, j, v, tmp) { for (i=1;i<=n;i++) v[i]=arr[k, i]+0; for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) { tmp=v[i]; v[i]=v[j]; v[j]=tmp } return v[int((n+1)/2)] }
    function mn(arr, k, n,   i, m) { m=arr[k,1]+0; for (i=2;i<=n;i++) if (arr[k,i]+0<m) m=arr[k,i]+0; return m }
    function mx(arr, k, n,   i, m) { m=arr[k,1]+0; for (i=2;i<=n;i++) if (arr[k,i]+0>m) m=arr[k,i]+0; return m }
    END { for (k in order) idx[order[k]]=k
          for (i=1;i<=n;i++) { k=idx[i]
            if (k in miss) { printf "| %s | missing | | | | |\n", k; continue }
            slab_after = (sa[k,1]=="-") ? "-" : med(sa, k, c[k]); slab_peak = (sp[k,1]=="-") ? "-" : med(sp, k, c[k])
            printf "| %s | %.3f (%.3f-%.3f) | %s | %s | %d | %d |\n", k, med(t, k, c[k]), mn(t, k, c[k]), mx(t, k, c[k]), slab_after, slab_peak, med(ra, k, c[k]), med(rp, k, c[k]) } }' "$RAW/messaging.tsv"
  echo
} >> "$REPORT"
if command -v gnuplot >/dev/null; then
  awk -F'\t' '$2!="missing" { k=$1; s[k]+=$2; n[k]++ } END { for (k in s) printf "\"%s\" %.3f\n", k, s[k]/n[k] }' "$RAW/messaging.tsv" | sort > "$RAW/messaging.dat"
  gnuplot <<GP && echo "![messaging seconds](messaging.png)" >> "$REPORT" && echo >> "$REPORT"
set terminal pngcairo size 900,450 noenhanced
set output '$OUT/messaging.png'
set title 'Seed 002 analog: messaging, mean seconds (lower is better)'
set style fill solid 0.6; set boxwidth 0.6; set ylabel 'seconds'; set xtics rotate by -30
plot '$RAW/messaging.dat' using 0:2:xtic(1) with boxes notitle
GP
fi
