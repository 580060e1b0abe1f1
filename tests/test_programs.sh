#!/bin/sh
# Real programs from Debian under LD_PRELOAD=libkslab-malloc.so must print
# exactly what they print without it: python3 (an allocation-heavy script),
# sqlite3 (a SQL script), git (a temporary repository), gcc (compiling a
# file).  Usage: test_programs.sh LIBKSLAB_MALLOC BACKEND
set -u
lib="$1"; be="$2"
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
run_both() {  # NAME CMD...: run twice, compare stdout+exit status
  name=$1; shift
  ( cd "$tmp/a" && "$@" ) > "$tmp/plain.out" 2>&1; a=$?
  ( cd "$tmp/b" && env LD_PRELOAD="$lib" KSLAB_ALLOCATOR="$be" "$@" ) > "$tmp/kslab.out" 2>&1; b=$?
  if [ $a = $b ] && cmp -s "$tmp/plain.out" "$tmp/kslab.out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name on $be (exit $a vs $b)"; diff "$tmp/plain.out" "$tmp/kslab.out" | head -20
  fi
}
mkdir -p "$tmp/a" "$tmp/b"
PYTHONMALLOC=malloc run_both python3 python3 "$here/programs/alloc_heavy.py" 20000
run_both sqlite3 sqlite3 :memory: ".read $here/programs/workload.sql"
export GIT_AUTHOR_NAME=k GIT_AUTHOR_EMAIL=k@x GIT_COMMITTER_NAME=k GIT_COMMITTER_EMAIL=k@x
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
run_both git sh "$here/programs/git_work.sh"
run_both gcc sh -c "gcc -O2 -S -o - '$here/programs/compile_me.c' | grep -v '.ident'"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
