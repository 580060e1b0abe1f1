#!/bin/sh
# test_valgrind.sh VALGRIND TEST_TOOLS: valgrind's memcheck sees kslab's slab
# objects (slub_debug.c, "sanitizers and valgrind").  A write to a freed
# kmem_cache object is an invalid write inside a freed block, with the
# stacks of the access, the free and the allocation, all in uaf_write; a write one
# past kmalloc(18) is an invalid write just after an 18-byte block; a double
# free is kslab's report and nothing of valgrind's; a program that uses its
# objects correctly gets no error at all.
set -u
vg=$1 prog=$2
out=$(mktemp) && trap 'rm -f "$out"' EXIT
fail=0
run() {     # case, then the strings valgrind's report must contain
    c=$1; shift
    "$vg" -q --error-exitcode=33 --log-file="$out" "$prog" "$c"
    st=$?
    for needle in "$@"; do
        if ! grep -q -- "$needle" "$out"; then
            echo "$c: valgrind's report lacks \"$needle\" (exit $st):"; cat "$out"; fail=1
        fi
    done
    echo "$c: exit $st"
    return $st
}
run uaf "Invalid write of size 1" "inside a block of size 64 free'd" "Block was alloc'd" "uaf_write"
[ $? = 33 ] || { echo "uaf: valgrind found no error"; fail=1; }
[ "$(grep -c uaf_write "$out")" -ge 3 ] || { echo "uaf: not every stack names uaf_write"; fail=1; }
run overflow "Invalid write of size 1" "0 bytes after a block of size 18 alloc'd" "kmalloc_overflow"
[ $? = 33 ] || { echo "overflow: valgrind found no error"; fail=1; }
err=$(mktemp)
"$vg" -q --error-exitcode=33 --log-file="$out" "$prog" double 2> "$err"
st=$?
grep -q "BUG tools_df (kslab): Object already free" "$err" ||
    { echo "double: no kslab report:"; cat "$err"; fail=1; }
[ $st = 0 ] && [ ! -s "$out" ] || { echo "double: exit $st:"; cat "$out"; fail=1; }
rm -f "$err"
echo "double: exit $st"
run clean
st=$?
[ $st = 0 ] || { echo "clean: exit $st:"; cat "$out"; fail=1; }
[ -s "$out" ] && { echo "clean: valgrind reported:"; cat "$out"; fail=1; }
exit $fail
