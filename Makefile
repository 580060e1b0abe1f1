# kslab: `make` builds, `make test` runs the whole suite (plain, ASan+UBSan, TSan, no-tag, clang),
# `make bench` writes the benchmark report, `make install PREFIX=DIR`.
PREFIX ?= /usr/local
BUILD  ?= build
JOBS   ?= 2
CMAKE  ?= cmake

SOAK_SECONDS ?= 120

.PHONY: all test test-plain test-asan test-tsan test-notag test-clang bench install deps clean soak soak-python

all: build/Makefile
	$(CMAKE) --build build -j$(JOBS)

build/Makefile:
	$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release

deps:
	@sh tools/deps.sh test

test: deps test-plain test-asan test-tsan test-notag test-clang

test-plain: all
	cd build && ctest --output-on-failure -j$(JOBS)

test-asan:
	$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKSLAB_SANITIZE=address,undefined
	$(CMAKE) --build build-asan -j$(JOBS)
	cd build-asan && KSLAB_ASAN=0 ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j$(JOBS) -E install

test-tsan:
	$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DKSLAB_SANITIZE=thread
	$(CMAKE) --build build-tsan -j$(JOBS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j$(JOBS) -E install

# The measurement build without the per-CPU free tag (make bench's no-tag
# rows; src/percpu.h, rule 8): everything but the double frees that only
# the tag stops (test_death on slub and slab) must pass on it too.  The tag
# is the per-CPU mode's alone, so the per-thread variants (.thread) are
# not run again, nor .glibc-norseq (the per-CPU sections of the plain
# tests, on kslab's own rseq registration: the tag plays no part in it);
# nor is test_maplimit's full size (its RSS rules do not depend on the tag:
# 10 000 blocks, as the sanitizers run it).  On the Zen 5 host of stop 59,
# whose page faults take 15 us each, the whole of make test took 41 min.
test-notag:
	$(CMAKE) -S . -B build-notag -DCMAKE_BUILD_TYPE=Release -DKSLAB_FREE_TAG=OFF
	$(CMAKE) --build build-notag -j$(JOBS)
	cd build-notag && KSLAB_MAPLIMIT_BLOCKS=10000 ctest --output-on-failure -j$(JOBS) \
	  -E 'install|^test_death\.(slub|slab)$$|\.thread$$|\.glibc-norseq$$'

# The library and the suite built by clang 14, the other compiler a user may
# pick: what it folds or lays out differently from GCC (asm goto outputs,
# calls to malloc whose results the tests check) is caught here.
test-clang:
	$(CMAKE) -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	$(CMAKE) --build build-clang -j$(JOBS)
	cd build-clang && KSLAB_MAPLIMIT_BLOCKS=10000 ctest --output-on-failure -j$(JOBS) -E install

soak: deps
	$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DKSLAB_SANITIZE=thread
	$(CMAKE) --build build-tsan -j$(JOBS)
	sh tools/soak.sh build-tsan $(SOAK_SECONDS)

# CPython's own regression suite (Debian's python3) on libkslab-malloc.so in
# each of PYSUITE_CONFIGS (tools/pysuite.sh: default, per-thread, SLAB,
# slob-seg; about 9 minutes each): every test file that passes on
# glibc must pass on kslab.  Not part of make test.
PYSUITE_CONFIGS ?=
soak-python: all
	@sh tools/deps.sh python-suite
	bash tools/pysuite.sh build/libkslab-malloc.so $(PYSUITE_CONFIGS)

bench: all
	@sh tools/deps.sh bench
	bash bench/run.sh

install:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	$(CMAKE) --build $(BUILD) -j$(JOBS)
	$(CMAKE) --install $(BUILD)

clean:
	rm -rf build build-asan build-tsan build-notag build-clang build-bench-asan build-fakecpu build-fakecpu-notag
