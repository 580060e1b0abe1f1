#!/bin/sh
# make install PREFIX=DIR, then build a program against it with pkg-config
# and with CMake's find_package(kslab); both must run.
set -e
src="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$src" install PREFIX="$tmp/prefix" BUILD="$tmp/build" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
for f in include/kslab.h include/kslab-publish.h bin/kslabtop bin/kslabinfo bin/kslab-record bin/kslab-replay lib/libkslab-record.so lib/libkslab.so lib/libkslab.a lib/pkgconfig/kslab.pc lib/cmake/kslab/kslabConfig.cmake; do
  [ -e "$tmp/prefix/$f" ] || { echo "missing $f"; exit 1; }
done
cat >"$tmp/app.c" <<'C'
#include <kslab.h>
#include <string.h>
struct item { long id; char name[24]; };
int main(void)
{
    struct kmem_cache *c = KMEM_CACHE(item, 0);
    struct item *it = kmem_cache_zalloc(c, GFP_KERNEL);
    char *s = kstrdup("slab", GFP_KERNEL);
    int ok = it && it->id == 0 && strcmp(s, "slab") == 0;
    kfree(s);
    kmem_cache_free(c, it);
    kmem_cache_destroy(c);
    return ok ? 0 : 1;
}
C
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" cc "$tmp/app.c" -o "$tmp/app_pc" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs kslab)
"$tmp/app_pc"
mkdir "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(kslab REQUIRED)
add_executable(app ../app.c)
target_link_libraries(app kslab::kslab)
C
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm/build" >/dev/null
"$tmp/cm/build/app"
echo "1 passed, 0 failed"
