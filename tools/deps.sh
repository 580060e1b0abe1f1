#!/bin/sh
# Install the Debian packages `make test` / `make bench` need, when run as
# root and they are missing.  Usage: deps.sh test|bench|python-suite
set -e
need="cmake gcc g++ clang make pkg-config libc6-dev git sqlite3 python3 valgrind zlib1g liburcu-dev tmux"
case "$1" in
  python-suite)   # Debian's python3 and its own regression suite (make soak-python)
    v=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3.11)
    need="$need libpython$v-testsuite" ;;
  bench) need="$need libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 libclang-rt-19-dev valgrind gnuplot-nox redis-server redis-tools time" ;;
esac
missing=""
for p in $need; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "deps: missing Debian packages:$missing (run as root to install them)" >&2
  exit 0
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq $missing >/dev/null
