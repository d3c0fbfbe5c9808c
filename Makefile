# cairn - one plain Makefile. Targets: all lib tools test demo fuzz bench install clean.
# Variables CC, CFLAGS, PREFIX, SANITIZE (e.g. address,undefined or thread), BUILD.

CC       ?= cc
PREFIX   ?= /usr/local
# The version, from the one place it is written: cairn.h.
VERSION  := $(shell sed -n 's/^\#define CAIRN_VERSION_STRING "\(.*\)"/\1/p' engine/include/cairn.h)
BUILD    ?= build
SANITIZE ?=

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla \
           -Wformat=2 -Wundef -Wpointer-arith -Wwrite-strings -Wcast-qual
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
OPT     ?= -O2 -g
CFLAGS  ?= $(OPT)
INCS    := -Iengine/include -Iengine/common -Iengine/log -Iengine/text -Iengine/memory -Iengine/vec -Iengine/tiers \
           -Iengine/graph -Iengine/reflexion -Iengine/api
SANFLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all,)
ALL_CFLAGS := $(CSTD) $(WARN) $(CFLAGS) $(SANFLAGS) $(INCS) -fPIC -pthread -MMD -MP
LIBS    := -lzstd -lxxhash -lutf8proc -lstemmer -lcjson -lcrypto -lm -pthread
LDFLAGS ?=
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)

ENGINE_SRC := $(sort $(wildcard engine/*/*.c))
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_SRC   := $(sort $(wildcard tools/*.c))
TOOL_OBJ   := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TESTUTIL_OBJ := $(BUILD)/obj/tests/testutil.o
FUZZ_SRC   := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/replay_%)
FUZZ_BIN   := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all lib tools test check demo fuzz fuzz-replay bench install install-strip uninstall docs clean deps

all: lib tools

lib: $(BUILD)/libcairn.a $(BUILD)/libcairn.so
tools: $(BUILD)/cairn

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libcairn.a: $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libcairn.so: $(ENGINE_OBJ)
	$(CC) -shared -Wl,-soname,libcairn.so.1 $(ALL_LDFLAGS) -o $@ $^ -lcjson $(LIBS)

$(BUILD)/cairn: $(TOOL_OBJ) $(BUILD)/libcairn.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(TOOL_OBJ) $(BUILD)/libcairn.a -lcjson $(LIBS)

# Tests may use engine internals (they link the static library).
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTUTIL_OBJ) $(BUILD)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTUTIL_OBJ) $(BUILD)/libcairn.a -lcmocka -lcjson $(LIBS)

# Corpus replay: each fuzz target linked with a plain main() that runs every file.
$(BUILD)/fuzz/replay_%: $(BUILD)/obj/fuzz/%.o $(BUILD)/obj/fuzz/replay_main.o $(BUILD)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/obj/fuzz/replay_main.o $(BUILD)/libcairn.a -lcjson $(LIBS)

deps:
	@sh tools/install-deps.sh

# The suite: unit tests, corpus replay, crash tests; then all of it again under
# ASan+UBSan in a separate build directory, and the threaded suites under TSan.
# The sanitizer builds compile while the plain suites run, and the sanitizer
# runs go side by side (the ASan suites, the ASan replays and tool tests, the
# TSan suites): most suites wait on fsync or on child processes more than
# they use a core.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SAN_VARS := BUILD=build/san SANITIZE=address,undefined OPT="-O1 -g"
TSAN_VARS := BUILD=build/tsan SANITIZE=thread OPT="-O1 -g"
TSAN_TESTS := test_concurrency test_memory test_memindex test_memvec test_store test_reflex \
              test_compact test_session test_tiers test_memkeys
SAN_BINS := all $(TEST_BIN:$(BUILD)/%=build/san/%) $(FUZZ_REPLAY:$(BUILD)/%=build/san/%)
test: deps
	@mkdir -p build && date +%s >build/.test-start
	$(MAKE) -j$(JOBS) all $(TEST_BIN) $(FUZZ_REPLAY)
	@( $(MAKE) $(SAN_BINS) $(SAN_VARS) && $(MAKE) $(TSAN_TESTS:%=build/tsan/tests/%) $(TSAN_VARS); \
	   echo $$? >build/sanitizer-build.rc ) >build/sanitizer-build.log 2>&1 & \
	$(MAKE) check; rc=$$?; wait; \
	echo "make test: plain build and suites, sanitizer builds: $$(($$(date +%s) - $$(cat build/.test-start))) s"; \
	if [ "$$(cat build/sanitizer-build.rc 2>/dev/null)" != 0 ]; then \
	  cat build/sanitizer-build.log; echo "make test: the sanitizer builds failed"; exit 1; fi; \
	exit $$rc
	@( echo "thread sanitizer:"; sh tests/run-tests.sh build/tsan units; echo $$? >build/tsan-run.rc ) \
	   >build/tsan-run.log 2>&1 & \
	( echo "address+undefined sanitizers, replays and the tool:"; sh tests/run-tests.sh build/san rest; \
	  echo $$? >build/san-rest.rc ) >build/san-rest.log 2>&1 & \
	echo "address+undefined sanitizers:"; sh tests/run-tests.sh build/san units; rc=$$?; wait; \
	cat build/san-rest.log build/tsan-run.log; \
	echo "make test: $$(($$(date +%s) - $$(cat build/.test-start))) s in all"; \
	[ $$rc = 0 ] && [ "$$(cat build/san-rest.rc)" = 0 ] && [ "$$(cat build/tsan-run.rc)" = 0 ]
	@echo "make test: all suites passed (plain, address+undefined, thread)"

check: all $(TEST_BIN) $(FUZZ_REPLAY)
	@sh tests/run-tests.sh $(BUILD)
	$(if $(SANITIZE),,@sh tests/packaging-tests.sh $(BUILD))
	$(if $(SANITIZE),,@sh python/run-tests.sh $(BUILD)/libcairn.so)
	$(if $(SANITIZE),,@sh tests/mcp/run-tests.sh $(BUILD)/cairn)

demo: deps all
	@sh tools/demo.sh $(BUILD)/cairn

# libFuzzer builds: make fuzz CC=clang
fuzz: $(BUILD)/libcairn.a
	@mkdir -p $(BUILD)/fuzz
	for f in $(FUZZ_SRC); do \
	  n=$$(basename $$f .c); \
	  $(CC) $(CSTD) $(INCS) -g -O1 -fsanitize=fuzzer,address,undefined -o $(BUILD)/fuzz/$$n $$f \
	    $(ENGINE_SRC) -lcjson $(LIBS) || exit 1; \
	done

bench: all
	$(MAKE) -C bench BUILD=$(abspath $(BUILD))

# The manual page and the bash completion are made from the tool's own
# help texts, so they say what --help says.
$(BUILD)/cairn.1: $(BUILD)/cairn tools/man/gen-cairn1.sh
	sh tools/man/gen-cairn1.sh $(BUILD)/cairn > $@.tmp && mv $@.tmp $@

$(BUILD)/cairn.bash: $(BUILD)/cairn tools/man/gen-completion.sh
	sh tools/man/gen-completion.sh $(BUILD)/cairn > $@.tmp && mv $@.tmp $@

docs: $(BUILD)/cairn.1 $(BUILD)/cairn.bash

# make install [PREFIX=/usr/local] [DESTDIR=...] [STRIP=1]; install-strip is
# install with STRIP=1 (the tool and the shared library without symbols).
INSTALLED := lib/libcairn.a lib/libcairn.so.1 lib/libcairn.so include/cairn.h \
             include/cairn_sys.h bin/cairn lib/pkgconfig/cairn.pc share/man/man1/cairn.1 \
             share/man/man3/libcairn.3 share/bash-completion/completions/cairn

install: all docs
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man3 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 $(BUILD)/libcairn.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(if $(STRIP),-s) $(BUILD)/libcairn.so \
	  $(DESTDIR)$(PREFIX)/lib/libcairn.so.1
	ln -sf libcairn.so.1 $(DESTDIR)$(PREFIX)/lib/libcairn.so
	install -m 644 engine/include/cairn.h engine/include/cairn_sys.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(if $(STRIP),-s) $(BUILD)/cairn $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' tools/cairn.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cairn.pc
	install -m 644 $(BUILD)/cairn.1 $(DESTDIR)$(PREFIX)/share/man/man1/cairn.1
	install -m 644 tools/man/libcairn.3 $(DESTDIR)$(PREFIX)/share/man/man3/libcairn.3
	install -m 644 $(BUILD)/cairn.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/cairn

install-strip:
	$(MAKE) install STRIP=1

uninstall:
	for f in $(INSTALLED); do rm -f $(DESTDIR)$(PREFIX)/$$f; done

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
