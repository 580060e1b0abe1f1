# The security table (issue 12): every attack of bench/attacks.c, one
# process each, against kslab (default, the per-thread mode, KSLAB_DEBUG)
# and the peers, scudo (Debian's libclang-rt-19-dev) among them.
echo "== security: heap attacks against each allocator"
KM=$PWD/build/libkslab-malloc.so
ATT=$PWD/$B/attacks
SCUDO=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so 2>/dev/null | sort -V | tail -1)
# column -> environment for the attack's process (X=1: nothing)
SWHO="kslab kslab-per-thread kslab-debug kslab-kfence glibc jemalloc mimalloc tcmalloc scudo"
declare -A SENV=(
  [kslab]="LD_PRELOAD=$KM"
  [kslab-per-thread]="LD_PRELOAD=$KM KSLAB_PERCPU=0"
  [kslab-debug]="LD_PRELOAD=$KM KSLAB_DEBUG=FZPU KSLAB_DEBUG_PANIC=1"
  [kslab-kfence]="LD_PRELOAD=$KM KSLAB_KFENCE=1"
  [glibc]="X=1"
  [jemalloc]="LD_PRELOAD=${PEER[jemalloc]}" [mimalloc]="LD_PRELOAD=${PEER[mimalloc]}"
  [tcmalloc]="LD_PRELOAD=${PEER[tcmalloc]}" [scudo]="LD_PRELOAD=$SCUDO" )
sec_ok() {
  case $1 in
    kslab*) return 0 ;;
    scudo) [ -n "$SCUDO" ] ;;
    *) peer_ok "$1" ;;
  esac
}
# who attack -> outcome: stopped (a report, then abort or exit), crash (a
# signal with no report), exploited, silent
: > "$RAW/security.tsv"
for who in $SWHO; do
  for at in $($ATT --list | cut -f1); do
    if ! sec_ok "$who"; then printf '%s\t%s\tmissing\t\n' "$who" "$at" >> "$RAW/security.tsv"; continue; fi
    set +e
    out=$(env ${SENV[$who]} timeout 30 "$ATT" "$at" 2> "$RAW/security.err")
    rc=$?
    set -e
    msg=$(grep -m1 -E 'kslab|BUG|Scudo|detected|invalid|corrupt|double|free\(\)|tcmalloc' "$RAW/security.err" | cut -c1-90 | tr '\t|' '  ' || true)
    if [ $rc = 0 ]; then
      case $out in exploited*) o=exploited ;; *) o=silent ;; esac
    elif [ $rc = 124 ]; then o=hang
    elif [ -n "$msg" ]; then o=stopped
    else o="crash"; fi
    printf '%s\t%s\t%s\t%s\n' "$who" "$at" "$o" "$msg" >> "$RAW/security.tsv"
  done
done
rm -f "$RAW/security.err"
{
  echo "## Security: heap attacks (issue 12)"
  echo
  echo "Each attack runs in its own process (bench/attacks.c, 64-byte blocks, after a warm-up that"
  echo "puts every allocator's per-thread or per-CPU front end in use) under each allocator."
  echo "**stopped**: the allocator reported it and stopped the program; crash: a signal with no"
  echo "report (stopped, but by luck of the layout); exploited: the allocator then handed out an"
  echo "address the attacker chose or one block twice; -: nothing stopped it and nothing showed."
  echo "kslab-debug is \`KSLAB_DEBUG=FZPU KSLAB_DEBUG_PANIC=1\` (slub_debug's checks; without"
  echo "PANIC it reports, repairs and goes on, as the kernel does).  kslab-kfence is"
  echo "\`KSLAB_KFENCE=1\` (every slow-path allocation sampled while the pool of 255 has room:"
  echo "KFENCE catches what lands in its pool, so at a production interval it catches an attack"
  echo "only when the block involved was sampled).  scudo: ${SCUDO:-missing}."
  echo
  printf '| attack |'; for w in $SWHO; do printf ' %s |' "$w"; done; echo
  printf '|---|'; for w in $SWHO; do printf -- '---|'; done; echo
  while IFS=$'\t' read -r at what; do
    printf '| %s (`%s`) |' "$what" "$at"
    for w in $SWHO; do
      o=$(awk -F'\t' -v w="$w" -v a="$at" '$1==w && $2==a {print $3}' "$RAW/security.tsv")
      case $o in stopped) o="**stopped**" ;; silent) o="-" ;; esac
      printf ' %s |' "$o"
    done
    echo
  done < <($ATT --list)
  printf '| stopped (of %d) |' "$($ATT --list | wc -l)"
  for w in $SWHO; do printf ' %s |' "$(awk -F'\t' -v w="$w" '$1==w && $3=="stopped"' "$RAW/security.tsv" | wc -l)"; done
  echo
  echo
  echo "kslab's messages:"
  echo
  awk -F'\t' '$1 ~ /^kslab/ && $3=="stopped" {printf "- %s, `%s`: %s\n", $1, $2, $4}' "$RAW/security.tsv"
  echo
} >> "$REPORT"
