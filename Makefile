# bpftrace-prof — build, test, bench, demo.  `make V=1` shows the commands.
OUTPUT     := build
ARCH       ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CLANG      ?= clang
CC         ?= cc
BPFTOOL    ?= bpftool
PREFIX     ?= /usr/local
VERSION    := 0.1.0

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

INCLUDES   := -Iinclude -I$(OUTPUT) -Iuser
CFLAGS     ?= -g -O2
CPPFLAGS   ?=
LDFLAGS    ?=
WARN       := -Wall -Wextra -Werror -Wno-unused-parameter
USER_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -DPROF_VERSION='"$(VERSION)"' $(INCLUDES) -MMD -MP
LIBS       := $(shell pkg-config --libs libbpf libelf zlib libcurl liblzma libdebuginfod 2>/dev/null || echo -lbpf -lelf -lz -lcurl -llzma -ldebuginfod) -lstdc++ -lm
# The host's system include dirs after our own (libbpf-bootstrap): <bpf/usdt.bpf.h> includes
# <linux/errno.h>, which needs the multiarch <asm/errno.h>.
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -Ivmlinux/$(ARCH) -Ibpf $(WARN) -MMD -MP $(CLANG_BPF_SYS_INCLUDES)

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
USER_DIRS  := util proc sym unwind attach track agg profile export trace cmd
USER_SRCS  := $(wildcard user/*.c $(addsuffix /*.c,$(addprefix user/,$(USER_DIRS))))
USER_OBJS  := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
LIB_OBJS   := $(filter-out $(OUTPUT)/user/main.o,$(USER_OBJS))

# Unit tests: one binary per tests/unit/test_<module>.c, linked with every user/ module
# except main, built with AddressSanitizer.
ASAN       := -fsanitize=address,undefined -fno-omit-frame-pointer
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
ASAN_OBJS  := $(patsubst user/%.c,$(OUTPUT)/asan/%.o,$(filter-out user/main.c,$(USER_SRCS)))
# Fuzzing: one libFuzzer harness per parser of foreign bytes (tests/fuzz/fuzz_<parser>.c), linked
# with every user/ module (main excepted) built with clang's fuzzer, ASan and UBSan (UB is fatal
# there); `make fuzz` runs each for FUZZ_SECONDS over its corpus, tests/fuzz/corpus/<parser>/.
FUZZ_CC    ?= clang
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SECONDS ?= 20
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_OBJS  := $(patsubst user/%.c,$(OUTPUT)/fuzz/obj/%.o,$(filter-out user/main.c,$(USER_SRCS)))
# ELF files the symbolizer tests read (rules below the unit-test rule).
FIX        := $(OUTPUT)/fixtures
FIX_CFLAGS := -g -O1 -fno-omit-frame-pointer -Wl,--build-id=sha1
FIXTURES   := $(addprefix $(FIX)/,symfix-pie symfix-nopie libsymfix.so libsymfix-stripped.so \
		symfix-stripped symfix-pie.debug symfix-debuglink symfix-pie.nm symfix-nopie.nm \
		libsymfix.so.nm symfix-pie.buildid symfix-dwarf4 symfix-dwarf4.nm symfix-pie-z.debug \
		inlfix inlfix.nm inlfix-dwarf4 inlfix-dwarf4.nm inlfix-clang inlfix-clang.nm dwz/done)

# Programs profiled by the end-to-end tests and the benchmarks (frame pointers on, no inlining
# of the functions the tests name).
TARGET_CFLAGS := -g -O1 -Wall -Werror -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread
NOFP_CFLAGS   := -g -O2 -Wall -Werror -fomit-frame-pointer -fno-optimize-sibling-calls -pthread
TARGETS_C  := $(patsubst tests/targets/%.c,$(OUTPUT)/targets/%,$(wildcard tests/targets/*.c))
TARGETS_CC := $(patsubst tests/targets/%.cc,$(OUTPUT)/targets/%,$(wildcard tests/targets/*.cc))
BENCH_C    := $(patsubst bench/%.c,$(OUTPUT)/bench/%,$(filter-out %.bpf.c,$(wildcard bench/*.c)))
BENCH_DATA := $(OUTPUT)/bench/sqlite_bench.sql
PYTHON     ?= /usr/bin/python3
BENCH_CC   := $(patsubst bench/%.cc,$(OUTPUT)/bench/%,$(wildcard bench/*.cc))
# The preloaded heap sampler (user/sampler/): its own shared library, nothing of the profiler
# but include/.  Initial-exec TLS: no __tls_get_addr (which may allocate) on the allocation path;
# -fexceptions: an exception out of the next operator new runs our cleanups; no .cold parts: each
# wrapper, its probe site included, is one symbol.
SAMPLER_SO := $(OUTPUT)/libbpftrace-prof-sampler.so
SAMPLER_SRCS := $(wildcard user/sampler/*.c)
SAMPLER_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -fPIC -shared \
		-fvisibility=hidden -ftls-model=initial-exec -fno-omit-frame-pointer -fexceptions \
		-fno-reorder-blocks-and-partition -MMD -MP

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all deps test unit e2e fuzz bench soak demo clean install lint targets deb

all: bpftrace-prof targets $(SAMPLER_SO)

# `make test`, `demo` and `bench` build in one job per core (the ASan and fuzzer builds of every
# module are most of a fresh clone's build: about 6 minutes in one job on 2 cores, 3 in two).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

deps:
	$(Q)scripts/install-deps.sh test

# The profiler's own allocator, linked in: jemalloc (Debian's libjemalloc-dev).  --heap's probes
# are per file, so with libc's malloc every allocation of ours would trap on the probes we put in
# libc for the targets (half the profiler's CPU on a stack-heavy target).  Whole archive: every
# allocation function is ours, so no block crosses allocators.
JEMALLOC_A := $(shell pkg-config --variable=libdir jemalloc 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)/libjemalloc_pic.a

bpftrace-prof: $(USER_OBJS) $(JEMALLOC_A)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(USER_OBJS) -Wl,--whole-archive $(JEMALLOC_A) \
		-Wl,--no-whole-archive $(LIBS) -lpthread -ldl -o $@

$(SAMPLER_SO): $(SAMPLER_SRCS) | $(OUTPUT)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(SAMPLER_CFLAGS) $(LDFLAGS) $(SAMPLER_SRCS) -Wl,-z,now -lm -o $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# System call names for `dump` (user/proc/syscalls.c), from the C library's <asm/unistd.h>.
$(OUTPUT)/syscall_names.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)echo '#include <asm/unistd.h>' | $(CC) -E -dM - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9]*\)$$/[\2] = "\1",/p' > $@
$(OUTPUT)/user/proc/syscalls.o $(OUTPUT)/asan/proc/syscalls.o \
	$(OUTPUT)/fuzz/obj/proc/syscalls.o: $(OUTPUT)/syscall_names.h

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# User objects may include any skeleton; generate them all first.
$(OUTPUT)/user/%.o: user/%.c $(SKELS)
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(OUTPUT)/asan/%.o: user/%.c $(SKELS)
	$(Q)mkdir -p $(@D)
	$(call msg,CC-ASAN,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(ASAN) -c $< -o $@

$(OUTPUT)/tests/%: tests/unit/%.c $(ASAN_OBJS) | $(OUTPUT)/tests $(FIXTURES)
	$(call msg,TEST,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(ASAN) $< $(ASAN_OBJS) $(LIBS) -lcmocka -o $@

# test_uprobe_multi attaches a tiny BPF object of its own (tests/bpf/) to real processes
# (build/targets/malloc_count).
$(OUTPUT)/tests/uprobe_multi_test.bpf.o: tests/bpf/uprobe_multi_test.bpf.c tests/bpf/uprobe_multi_test.h | $(OUTPUT)/tests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Itests/bpf -c $< -o $@

$(OUTPUT)/tests/uprobe_multi_test.skel.h: $(OUTPUT)/tests/uprobe_multi_test.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/tests/test_uprobe_multi: $(OUTPUT)/tests/uprobe_multi_test.skel.h tests/bpf/uprobe_multi_test.h \
	| $(OUTPUT)/targets/malloc_count

# test_ring feeds the ring buffer's consumer from a BPF program of its own (BPF_PROG_TEST_RUN).
$(OUTPUT)/tests/ring_feed.bpf.o: tests/bpf/ring_feed.bpf.c tests/bpf/ring_feed.h | $(OUTPUT)/tests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Itests/bpf -c $< -o $@

$(OUTPUT)/tests/ring_feed.skel.h: $(OUTPUT)/tests/ring_feed.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/tests/test_ring: $(OUTPUT)/tests/ring_feed.skel.h tests/bpf/ring_feed.h

$(OUTPUT)/fuzz/obj/%.o: user/%.c $(SKELS)
	$(Q)mkdir -p $(@D)
	$(call msg,CC-FUZZ,$@)
	$(Q)$(FUZZ_CC) $(USER_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(OUTPUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJS) | $(OUTPUT)/fuzz
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) $(USER_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer $< $(FUZZ_OBJS) $(LIBS) -o $@

# ELF fixtures for the symbolizer's unit tests, from one source: a PIE, a non-PIE executable, a
# shared library (based at 0x200000, so its p_vaddr and p_offset differ), a stripped copy (.dynsym only: -rdynamic exports the functions), a separate
# debug file and a stripped copy that points to it with .gnu_debuglink, a versioned symbol in the
# library (symfix.map) and a stripped copy of it; plus nm/readelf output
# for the tests to check against (FIXTURES is defined with the unit-test variables above).
$(FIX)/symfix_cxx.o: tests/fixtures/symfix_cxx.cc | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CXX) -g -O1 -fPIC -fno-exceptions -fno-rtti -c $< -o $@

$(FIX)/symfix-pie: tests/fixtures/symfix.c $(FIX)/symfix_cxx.o | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIX_CFLAGS) -fPIE -pie -rdynamic $^ -o $@

$(FIX)/symfix-nopie: tests/fixtures/symfix.c $(FIX)/symfix_cxx.o | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIX_CFLAGS) -fno-pie -no-pie -rdynamic $^ -o $@

$(FIX)/libsymfix.so: tests/fixtures/symfix.c $(FIX)/symfix_cxx.o tests/fixtures/symfix.map | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIX_CFLAGS) -DSYMFIX_LIB -fPIC -shared -Wl,-Ttext-segment=0x200000 \
		-Wl,--version-script=tests/fixtures/symfix.map $(filter %.c %.o,$^) -o $@

$(FIX)/libsymfix-stripped.so: $(FIX)/libsymfix.so
	$(call msg,FIXTURE,$@)
	$(Q)strip --strip-all -o $@ $<

$(FIX)/symfix-stripped: $(FIX)/symfix-pie
	$(call msg,FIXTURE,$@)
	$(Q)strip --strip-all -o $@ $<

$(FIX)/symfix-pie.debug: $(FIX)/symfix-pie
	$(call msg,FIXTURE,$@)
	$(Q)objcopy --only-keep-debug $< $@

# The line reader's other inputs: DWARF 4 (file names relative to directories, the compilation
# directory implied), and a debug file with zlib-compressed sections as Debian ships them.
$(FIX)/symfix-dwarf4: tests/fixtures/symfix.c $(FIX)/symfix_cxx.o | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIX_CFLAGS) -gdwarf-4 -fPIE -pie -rdynamic $^ -o $@

# Inlined calls (DWARF 5 and 4): -O2 inlines and splits off a cold part (DW_AT_ranges).
$(FIX)/inlfix: tests/fixtures/inlfix.c | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) -O2 -g -Wl,--build-id=sha1 $< -o $@

# clang's DWARF 5 names strings, addresses and range lists by index (strx, addrx, rnglistx).
$(FIX)/inlfix-clang: tests/fixtures/inlfix.c | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)clang -O2 -g -Wl,--build-id=sha1 $< -o $@

$(FIX)/inlfix-dwarf4: tests/fixtures/inlfix.c | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) -O2 -gdwarf-4 -Wl,--build-id=sha1 $< -o $@

# dwz's alternate file: two programs inlining one header's functions; their debug files kept as
# they were (*.ref.debug, addr2line's reference) and processed by dwz -m, which moves what they
# share into .dwz/dwzfix-common.debug, found by the link's relative path.  dwz/: built next to
# their sources, the inlined functions' DIEs move (GNU_ref_alt); dwz5/: the same with DWARF 5's
# forms and .debug_sup; dwzs/: built from the top (a directory in the file names), only their
# names' strings move (GNU_strp_alt); dwz4/: DWARF 4, whose compilation directory moves too.  dwz-bid/ holds dwz/'s alternate file under its build id
# only, dwz-bad/ the same file with another build id (its note's bytes changed) under that id.
DWZ_DIRS := dwz dwz5 dwzs dwz4 dwz-bid dwz-bad
$(FIX)/dwz/done: tests/fixtures/dwzfix.c tests/fixtures/dwzfix.h | $(FIX)
	$(call msg,FIXTURE,$@)
	$(Q)cd $(FIX) && rm -rf $(DWZ_DIRS) && mkdir -p dwz/.dwz dwz5/.dwz dwzs/.dwz dwz4/.dwz
	$(Q)for p in a b; do \
		f="-O2 -Wl,--build-id=sha1 -DDWZFIX_FN=dwzfix_$$p"; \
		(cd tests/fixtures && $(CC) $$f -g dwzfix.c -o $(abspath $(FIX))/dwz/dwzfix-$$p) && \
		(cd tests/fixtures && $(CC) $$f -gdwarf-4 dwzfix.c -o $(abspath $(FIX))/dwz4/dwzfix-$$p) && \
		$(CC) $$f -g tests/fixtures/dwzfix.c -o $(FIX)/dwzs/dwzfix-$$p && \
		for d in dwz dwzs dwz4; do \
			nm -S --defined-only $(FIX)/$$d/dwzfix-$$p > $(FIX)/$$d/dwzfix-$$p.nm && \
			objcopy --only-keep-debug $(FIX)/$$d/dwzfix-$$p $(FIX)/$$d/dwzfix-$$p.ref.debug && \
			cp $(FIX)/$$d/dwzfix-$$p.ref.debug $(FIX)/$$d/dwzfix-$$p.debug || exit 1; done && \
		cp $(FIX)/dwz/dwzfix-$$p.ref.debug $(FIX)/dwz5/dwzfix-$$p.debug || exit 1; done
	$(Q)for d in dwz dwz5 dwzs dwz4; do \
		(cd $(FIX)/$$d && dwz $$([ $$d = dwz5 ] && echo --dwarf-5) -m .dwz/dwzfix-common.debug \
			-M .dwz/dwzfix-common.debug dwzfix-a.debug dwzfix-b.debug) || exit 1; done
	$(Q)readelf -wi $(FIX)/dwz/dwzfix-a.debug 2>/dev/null | grep -q 'abstract_origin: <alt'
	$(Q)readelf --debug-dump=abbrev $(FIX)/dwz5/dwzfix-a.debug 2>/dev/null | grep -q ref_sup4
	$(Q)readelf -wi $(FIX)/dwzs/dwzfix-a.debug 2>/dev/null | grep -q 'alt indirect string.*dwz_mid'
	$(Q)readelf -wi $(FIX)/dwz4/dwzfix-a.debug 2>/dev/null | grep -q 'comp_dir.*alt indirect string'
	$(Q)id=$$(readelf -n $(FIX)/dwz/.dwz/dwzfix-common.debug 2>/dev/null | \
			sed -n 's/.*Build ID: *//p'); \
		d=.build-id/$$(echo $$id | cut -c1-2); f=$$d/$$(echo $$id | cut -c3-).debug; \
		mkdir -p $(FIX)/dwz-bid/$$d $(FIX)/dwz-bad/$$d && \
		cp $(FIX)/dwz/.dwz/dwzfix-common.debug $(FIX)/dwz-bid/$$f && \
		xxd -p $(FIX)/dwz/.dwz/dwzfix-common.debug | tr -d '\n' | \
			sed "s/$$id/$$(echo $$id | tr 0-9a-f 1-9a-f0)/" | xxd -r -p > $(FIX)/dwz-bad/$$f && \
		! cmp -s $(FIX)/dwz-bid/$$f $(FIX)/dwz-bad/$$f
	$(Q)touch $@

$(FIX)/symfix-pie-z.debug: $(FIX)/symfix-pie.debug
	$(call msg,FIXTURE,$@)
	$(Q)objcopy --compress-debug-sections=zlib $< $@

$(FIX)/symfix-debuglink: $(FIX)/symfix-pie $(FIX)/symfix-pie.debug
	$(call msg,FIXTURE,$@)
	$(Q)strip --strip-all -o $@ $<
	$(Q)cd $(FIX) && objcopy --add-gnu-debuglink=symfix-pie.debug $(notdir $@)

$(FIX)/%.nm: $(FIX)/%
	$(Q)nm -S --defined-only $< > $@

$(FIX)/%.buildid: $(FIX)/%
	$(Q)readelf -n $< | sed -n 's/.*Build ID: *//p' > $@

$(OUTPUT)/targets/noalloc: tests/targets/noalloc.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) -O1 -static -nostdlib -fno-stack-protector $< -o $@

$(OUTPUT)/targets/static_target: tests/targets/static_target.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CLANG) $(TARGET_CFLAGS) -static $< -o $@

# Static too: all of its user frames in one file (tests/e2e/test_container.sh).
$(OUTPUT)/targets/short_spin: tests/targets/short_spin.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CLANG) $(TARGET_CFLAGS) -static $< -o $@

# Targets named *_nofp are built as Debian builds its packages, without frame pointers, so only
# .eh_frame unwinding gives their stacks; sibling calls stay calls so every function the tests
# name keeps a frame of its own.  gcc, as Debian's packages are.
$(OUTPUT)/targets/%_nofp: tests/targets/%_nofp.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) $< -o $@

# One file's functions at the same addresses in both, with frames of other sizes (the file says
# why): no PIE.
$(OUTPUT)/targets/frames_nofp: tests/targets/frames_nofp.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) -no-pie -DFRAME=256 $< -o $@

$(OUTPUT)/targets/frames_wide_nofp: tests/targets/frames_nofp.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) -no-pie -DFRAME=2048 $< -o $@

# deep_nofp with frame pointers, for --unwind fp (tests/e2e/test_deep.sh).
$(OUTPUT)/targets/deep_fp: tests/targets/deep_nofp.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) -fno-optimize-sibling-calls $< -o $@

$(OUTPUT)/targets/%_nofp: tests/targets/%_nofp.cc | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CXX) $(NOFP_CFLAGS) $< -o $@

# The sampler's checks (tests/unit/test_sampler.c): the check program reads prof_sampler.h; the
# allocator it is also run over is a shared library preloaded after the sampler.  -fno-builtin:
# clang folds malloc(SIZE_MAX - 8) to NULL and realloc(NULL, n) to malloc, skipping the calls.
$(OUTPUT)/targets/sampler_check: tests/targets/sampler_check.c include/prof_sampler.h | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CLANG) $(TARGET_CFLAGS) -fno-builtin -Iinclude $< -lm -o $@

# The same program non-PIE: its calls of the malloc family go through canonical PLT entries.
$(OUTPUT)/targets/sampler_check_nopie: tests/targets/sampler_check.c include/prof_sampler.h | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CLANG) $(TARGET_CFLAGS) -fno-builtin -fno-pie -no-pie -Iinclude $< -lm -o $@

$(OUTPUT)/targets/sampler_full: tests/targets/sampler_full.c include/prof_sampler.h | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CLANG) $(TARGET_CFLAGS) -fno-builtin -Iinclude $< -o $@

$(OUTPUT)/targets/libinterpose_alloc.so: tests/targets/lib/interpose_alloc.c include/prof_sampler.h | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) -g -O2 -Wall -Werror -fPIC -shared -Iinclude $< -o $@

# -fno-allocation-dce: new/delete pairs stay calls.
$(OUTPUT)/targets/sampler_new: tests/targets/sampler_new.cc include/prof_sampler.h | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CXX) $(TARGET_CFLAGS) -fno-builtin -fno-allocation-dce -Iinclude $< -o $@

# heap_target as Fedora ships a binary: stripped, its function names in MiniDebugInfo
# (.gnu_debugdata); heap_target_stripped: the same without them.
$(OUTPUT)/targets/heap_target_minidebug: $(OUTPUT)/targets/heap_target scripts/add-minidebuginfo.sh
	$(call msg,TARGET,$@)
	$(Q)scripts/add-minidebuginfo.sh $< $@ $(OUTPUT)/targets/heap_target_stripped

# An inlined allocating function, named from the target's own DWARF (gcc -O2 -g, not stripped).
$(OUTPUT)/targets/inline_alloc: tests/targets/inline_alloc.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) -g -O2 -Wall -Werror $< -o $@

# static_alloc as most distributions ship a binary: stripped, its debug file apart (served by
# debuginfod in tests/e2e/test_names.sh).
$(OUTPUT)/targets/static_alloc_stripped: $(OUTPUT)/targets/static_alloc
	$(call msg,TARGET,$@)
	$(Q)objcopy --only-keep-debug $< $(OUTPUT)/targets/static_alloc.debug
	$(Q)strip --strip-all -o $@ $<

# A file with about 5 M unwind rows, past the old 4 M cap: the big library's stand-in (issue 28).
$(OUTPUT)/targets/big_cfi.elf: tests/targets/gen_big_cfi.py | $(OUTPUT)/targets
	$(call msg,GEN,$@)
	$(Q)$(PYTHON) $< $@

$(OUTPUT)/tests/test_bpf_code: | $(BPF_OBJS)

$(OUTPUT)/tests/test_sampler: | $(SAMPLER_SO) $(OUTPUT)/targets/sampler_check \
	$(OUTPUT)/targets/sampler_check_nopie \
	$(OUTPUT)/targets/sampler_new $(OUTPUT)/targets/libinterpose_alloc.so

# clang: gcc 12 drops the frame pointer of leaf functions despite -mno-omit-leaf-frame-pointer.
$(OUTPUT)/targets/%: tests/targets/%.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CLANG) $(TARGET_CFLAGS) $< -o $@

$(OUTPUT)/targets/%: tests/targets/%.cc | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CXX) $(TARGET_CFLAGS) $< -o $@

# Benchmarks of our own code link the user objects (main excepted); the rest are workloads.
$(OUTPUT)/bench/pprof_write: bench/pprof_write.c $(LIB_OBJS) | $(OUTPUT)/bench
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< $(LIB_OBJS) $(LIBS) -o $@

$(OUTPUT)/bench/unwind_tables: bench/unwind_tables.c $(LIB_OBJS) | $(OUTPUT)/bench
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< $(LIB_OBJS) $(LIBS) -o $@

# The floor of `make bench`: the same probes as bpftrace-prof --heap with empty programs (or one
# piece of its work each), beside the real shared maps; the loader reuses the ELF, maps and
# prologue code of user/ to put the probes exactly where bpftrace-prof does.
$(OUTPUT)/bench/floor.bpf.o: bench/floor.bpf.c bench/floor.h bpf/common.bpf.h $(wildcard include/*.h) | $(OUTPUT)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/bench/floor.skel.h: $(OUTPUT)/bench/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/bench/floor: bench/floor.c bench/floor.h $(OUTPUT)/bench/floor.skel.h $(LIB_OBJS) | $(OUTPUT)/bench
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(USER_CFLAGS) -I$(OUTPUT)/bench -Ibench $< $(LIB_OBJS) $(LIBS) -o $@

$(OUTPUT)/bench/sqlite_bench.sql: bench/gen_sqlite.py | $(OUTPUT)/bench
	$(call msg,GEN,$@)
	$(Q)$(PYTHON) $< > $@

$(OUTPUT)/bench/%: bench/%.c | $(OUTPUT)/bench
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) -O2 $< -o $@ -lm

$(OUTPUT)/bench/%: bench/%.cc | $(OUTPUT)/bench
	$(call msg,BENCH,$@)
	$(Q)$(CXX) $(TARGET_CFLAGS) -O2 $< -o $@

targets: $(TARGETS_C) $(TARGETS_CC) $(OUTPUT)/targets/libinterpose_alloc.so \
	$(OUTPUT)/targets/frames_wide_nofp $(OUTPUT)/targets/heap_target_minidebug \
	$(OUTPUT)/targets/static_alloc_stripped $(OUTPUT)/targets/big_cfi.elf \
	$(OUTPUT)/targets/deep_fp

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/asan $(OUTPUT)/tests $(OUTPUT)/targets $(OUTPUT)/bench $(FIX) \
$(OUTPUT)/fuzz $(OUTPUT)/fuzz/obj:
	$(Q)mkdir -p $@

unit: $(UNIT_BINS)
	$(Q)tests/run-unit.sh $(UNIT_BINS)

e2e: bpftrace-prof targets
	$(Q)tests/e2e/run.sh

# A crash, leak, timeout (10 s an input) or 2 GB of RSS in any harness fails.
fuzz: $(FUZZ_BINS) $(FIX)/symfix-stripped
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run-fuzz.sh $(FUZZ_BINS)

# `sudo make test`: install what is missing, build, run unit and end-to-end tests.  The bench's
# programs are built too (not run): a change that breaks `make bench` fails here, not on the day
# someone measures.
test: deps
	$(Q)$(MAKE) -j$(JOBS) --no-print-directory all $(UNIT_BINS) $(FUZZ_BINS) $(BENCH_C) $(BENCH_CC)
	$(Q)FUZZ_BINS="$(FUZZ_BINS)" FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run-all.sh $(UNIT_BINS)

bench:
	$(Q)scripts/install-deps.sh bench
	$(Q)$(MAKE) -j$(JOBS) --no-print-directory all $(BENCH_C) $(BENCH_CC) $(BENCH_DATA)
	$(Q)bench/run.sh
	$(Q)bench/heapcost_bench.sh
	$(Q)bench/python_bench.sh
	$(Q)bench/calls_bench.sh
	$(Q)bench/holds_bench.sh
	$(Q)bench/dlopen_bench.sh
	$(Q)bench/names_bench.sh

# `sudo make soak` (not in CI): ten minutes of host-wide continuous profiling of a cgroup that
# starts short processes; RSS, BPF map memory and fds sampled, slopes reported.
soak: all
	$(Q)bench/soak.sh

# `sudo make demo`: install, build, profile the bundled demo program and print its heap report.
demo: deps
	$(Q)$(MAKE) -j$(JOBS) --no-print-directory all
	$(Q)./bpftrace-prof --heap -f text -o - -- $(OUTPUT)/targets/demo

# `make install [PREFIX=/usr/local] [DESTDIR=]`: sbin, as Debian's bcc tools (root only).
install: bpftrace-prof $(SAMPLER_SO)
	install -D -m 0755 bpftrace-prof $(DESTDIR)$(PREFIX)/sbin/bpftrace-prof
	install -D -m 0644 $(SAMPLER_SO) $(DESTDIR)$(PREFIX)/lib/bpftrace-prof/libbpftrace-prof-sampler.so
	install -D -m 0644 docs/man/bpftrace-prof.8 $(DESTDIR)$(PREFIX)/share/man/man8/bpftrace-prof.8
	install -D -m 0644 scripts/bpftrace-prof.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/bpftrace-prof

# Shell scripts we own are shellcheck-clean at its default severity (the e2e files are sourced
# by tests/e2e/run.sh: bash, no shebang).
SHELL_SCRIPTS := $(wildcard scripts/*.sh bench/*.sh tests/run-*.sh) .ci/run debian/agent
E2E_SHELLCHECK := -s bash
CPPCHECK   := cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		-D__x86_64__ "-DLIBBPF_OPTS(t,n,...)=struct t n = { __VA_ARGS__ }" -Iinclude -Iuser

# `make deb`: the Debian package (debian/: the binary, the sampler, the man page, completion and
# the bpftrace-prof-agent systemd unit), built by dpkg-buildpackage in a copy of the tracked
# files under build/deb/ and checked by lintian (its output in build/deb/lintian.txt).
DEB_DIR := $(OUTPUT)/deb
deb:
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	$(Q)git ls-files -z | tar --null -cf - -T - | tar -xf - -C $(DEB_DIR)/src
	$(Q)cd $(DEB_DIR)/src && DEB_BUILD_OPTIONS=parallel=$$(nproc) dpkg-buildpackage -b -us -uc >../build.log 2>&1 || \
		{ tail -30 ../build.log; exit 1; }
	$(Q)lintian --fail-on error,warning $(DEB_DIR)/*.changes >$(DEB_DIR)/lintian.txt 2>&1 || \
		{ cat $(DEB_DIR)/lintian.txt; exit 1; }
	$(Q)cat $(DEB_DIR)/lintian.txt
	$(Q)ls $(DEB_DIR)/*.deb

lint:
	$(Q)clang-format --dry-run -Werror $(USER_SRCS) $(wildcard user/*.h user/*/*.h) include/*.h bpf/*.c bpf/*.h tests/unit/*.c tests/unit/*.h \
		tests/fuzz/*.c tests/bpf/*.c tests/bpf/*.h bench/*.c bench/*.h bench/*.cc
	$(Q)clang-format --dry-run -Werror $(SAMPLER_SRCS)
	$(Q)$(CPPCHECK) user/
	$(Q)scripts/check-layers.sh
	$(Q)scripts/check-size.sh
	$(Q)$(CPPCHECK) -Ibench $(filter-out %.bpf.c,$(wildcard bench/*.c)) tests/fuzz/*.c
	$(Q)shellcheck $(SHELL_SCRIPTS)
	$(Q)shellcheck $(E2E_SHELLCHECK) tests/e2e/*.sh

clean:
	$(Q)rm -rf $(OUTPUT) bpftrace-prof

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/user/*.d $(OUTPUT)/user/*/*.d $(OUTPUT)/asan/*.d $(OUTPUT)/asan/*/*.d $(OUTPUT)/tests/*.d \
	$(OUTPUT)/bench/*.d $(OUTPUT)/fuzz/*.d $(OUTPUT)/fuzz/obj/*.d $(OUTPUT)/fuzz/obj/*/*.d)
