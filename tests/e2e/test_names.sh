#!/bin/bash
# Where native frames get their names on stock distributions (issue 28; docs/how-it-works.md:
# Where names come from): the file's .symtab, a separate debug file, MiniDebugInfo, .dynsym.

# Fedora and RHEL ship their binaries stripped, the names of functions .dynsym lacks kept in
# MiniDebugInfo (.gnu_debugdata, xz).  heap_target built that way
# (scripts/add-minidebuginfo.sh) is profiled with every name and byte as from its .symtab; the
# same file stripped without the section names none of them.
t_names_minidebuginfo() {
	local f=$E2E_TMP/mini.pb.gz s=$E2E_TMP/stripped.pb.gz
	"$PROF" --heap -o "$f" --top 0 -- build/targets/heap_target_minidebug >/dev/null ||
		fail "profiler exit status $?"
	check_heap_numbers "$f"
	"$PROF" --heap -o "$s" --top 0 -- build/targets/heap_target_stripped >/dev/null ||
		fail "profiler exit status $? (stripped)"
	expect_eq "leak_pages, stripped without MiniDebugInfo" 0 "$(pprof_flat "$s" alloc_objects leak_pages)"
	# There, a function is still one frame: the file offset of its start (its FDE in
	# .eh_frame_hdr), every call site in it under that one name — realloc_chain's four.
	expect_eq "realloc_chain by its file offset" 4 \
		"$(pprof_flat "$s" alloc_objects "heap_target_stripped+0x$(file_offset build/targets/heap_target realloc_chain)")"
	go tool pprof -raw "$s" 2>/dev/null | grep -q '\[unknown\]' && fail "an [unknown] frame in $s"
	return 0
}

# The file offset (hex) of FILE's symbol SYM, from its .symtab and program headers.
file_offset() { # FILE SYM
	python3 - "$1" "$2" <<'PY'
import subprocess, sys
f, sym = sys.argv[1:]
v = next(int(l.split()[0], 16) for l in subprocess.run(["nm", f], capture_output=True,
         text=True).stdout.splitlines() if l.split()[-1] == sym)
for l in subprocess.run(["readelf", "-lW", f], capture_output=True, text=True).stdout.splitlines():
    w = l.split()
    if w and w[0] == "LOAD":
        o, a, n = int(w[1], 16), int(w[2], 16), int(w[4], 16)
        if a <= v < a + n:
            print("%x" % (v - a + o))
PY
}

# A file whose unwind table is not built (here over --unwind-max-rows) is named, with why: on
# stderr with -v and on its counter's line; a bad value is a one-line usage error.
t_names_unwind_table_refused_named() {
	local f=$E2E_TMP/cap.pb.gz rc
	"$PROF" -v --heap --unwind-max-rows 100 -o "$f" --top 0 -- build/targets/heap_target \
		>/dev/null 2>"$E2E_TMP/err" || fail "profiler exit status $?"
	grep -q '^bpftrace-prof: no unwind table for libc.so.6: over the row cap' "$E2E_TMP/err" ||
		fail "not said: $(grep -i 'unwind table' "$E2E_TMP/err" | head -3)"
	go tool pprof -raw "$f" 2>/dev/null | grep '^Comment: unwind_table_build_failed=' |
		grep -q 'libc.so.6 (over the row cap)' || fail "not on the counter's line"
	"$PROF" --heap --unwind-max-rows 0 -- /bin/true >/dev/null 2>"$E2E_TMP/usage"
	rc=$?
	expect_eq "exit status of --unwind-max-rows 0" 2 "$rc"
	expect_eq "lines on stderr" 1 "$(wc -l <"$E2E_TMP/usage")"
}

# A distribution's stripped binary, its debug file on a debuginfod server (the Debian package's
# own server, on the loopback): its static functions named with their exact bytes and source
# lines (clang's DWARF 5, no .debug_aranges); the second
# run names them from libdebuginfod's cache with the server gone; --no-debuginfod asks nothing.
t_names_debuginfod() {
	local srv=$E2E_TMP/srv f=$E2E_TMP/fetched.pb.gz c=$E2E_TMP/cached.pb.gz n=$E2E_TMP/no.pb.gz
	local bid url
	trap 'stop_pidfile "$E2E_TMP/debuginfod.pid"' EXIT
	mkdir -p "$srv"
	cp build/targets/static_alloc.debug "$srv/"
	bid=$(build_id build/targets/static_alloc_stripped)
	url=$(start_debuginfod "$srv" "$bid") || fail "debuginfod never served $bid: $(tail -3 "$E2E_TMP/debuginfod.log")"
	export DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$E2E_TMP/cache
	"$PROF" --heap -o "$f" --top 0 -- build/targets/static_alloc_stripped >/dev/null ||
		fail "profiler exit status $?"
	check_static_alloc "$f" hidden_keep hidden_churn
	check_static_alloc_lines "$f"
	expect_eq "debuginfod_fetched" 1 "$(pprof_counter_value "$f" debuginfod_fetched)"
	expect_one_line "hidden_keep's caller" '\|hidden_keep;main;' <(pprof_traces "$f")
	stop_pidfile "$E2E_TMP/debuginfod.pid"
	"$PROF" --heap -o "$c" --top 0 -- build/targets/static_alloc_stripped >/dev/null ||
		fail "profiler exit status $? (cached)"
	check_static_alloc "$c" hidden_keep hidden_churn
	"$PROF" --heap --no-debuginfod -o "$n" --top 0 -- build/targets/static_alloc_stripped \
		>/dev/null || fail "profiler exit status $? (--no-debuginfod)"
	expect_eq "hidden_keep named with --no-debuginfod" 0 "$(pprof_flat "$n" alloc_objects hidden_keep)"
	expect_eq "debuginfod_fetched with --no-debuginfod" 0 "$(pprof_counter_value "$n" debuginfod_fetched)"
}

# A debug file installed where the distribution's -dbg packages put them (the host's
# /usr/lib/debug/.build-id/, for the test only): names, and each frame's source file and line
# from its DWARF (.debug_line) as pprof Lines — hidden_keep's malloc call, main's call of it.
t_names_debug_file_lines() {
	local f=$E2E_TMP/lines.pb.gz bid
	bid=$(build_id build/targets/static_alloc_stripped)
	# Not local: the trap runs after the function, when a failure exits the test.
	LINES_DEBUG=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
	[ ! -e "$LINES_DEBUG" ] || fail "$LINES_DEBUG exists already"
	trap 'rm -f "$LINES_DEBUG"' EXIT
	install -D -m 0644 build/targets/static_alloc.debug "$LINES_DEBUG"
	"$PROF" --heap --no-debuginfod -o "$f" --top 0 -- build/targets/static_alloc_stripped \
		>/dev/null || fail "profiler exit status $?"
	check_static_alloc "$f" hidden_keep hidden_churn
	check_static_alloc_lines "$f"
}

# A file built with -g and not stripped, and no debug file anywhere: its lines from its own
# DWARF.
t_names_own_dwarf_lines() {
	local f=$E2E_TMP/own.pb.gz
	readelf -S build/targets/static_alloc | grep -q '\.debug_line' || fail "static_alloc has no .debug_line"
	"$PROF" --heap --no-debuginfod -o "$f" --top 0 -- build/targets/static_alloc >/dev/null ||
		fail "profiler exit status $?"
	check_static_alloc "$f" hidden_keep hidden_churn
	check_static_alloc_lines "$f"
}

# check_keep_block_inlined FILE: inline_alloc's profile, no drops, keep_block's 200 blocks in one
# Location with two Lines, keep_block at its malloc first, then inl_caller at the call.
check_keep_block_inlined() {
	local src keep call
	src=$(realpath tests/targets/inline_alloc.c)
	keep=$(grep -n 'kept\[i\] = malloc' "$src" | cut -d: -f1)
	call=$(grep -n '	keep_block(i);' "$src" | cut -d: -f1)
	expect_no_drops "$1"
	expect_eq "keep_block alloc_objects" 200 "$(pprof_flat "$1" alloc_objects keep_block)"
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null >"$1.raw"
	grep -A1 -E "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ keep_block $src:$keep " "$1.raw" >"$1.loc" ||
		fail "no Location with keep_block at $src:$keep: $(sed -n '/^Locations/,/^Mappings/p' "$1.raw" | head -5)"
	grep -qE "^ +inl_caller $src:$call " "$1.loc" ||
		fail "keep_block's Location has no inl_caller Line at $call: $(cat "$1.loc")"
}

# keep_block, an allocating static function inlined (always_inline, gcc -O2 -g) into inl_caller,
# from the target's own DWARF: its own frame between inl_caller and the allocation in folded
# output; in pprof one Location with two Lines, keep_block at its malloc first, then inl_caller
# at the call (go tool pprof shows "keep_block (inline)").
t_names_inlined_frames() {
	local f=$E2E_TMP/inl.pb.gz d=$E2E_TMP/inl.folded
	"$PROF" --heap --no-debuginfod -o "$f" --top 0 -- build/targets/inline_alloc >/dev/null ||
		fail "profiler exit status $?"
	check_keep_block_inlined "$f"
	expect_eq "keep_block inuse_space" 102400 "$(pprof_flat "$f" inuse_space keep_block)"
	expect_eq "inl_caller flat alloc_objects" 0 "$(pprof_flat "$f" alloc_objects inl_caller)"
	expect_one_line "keep_block inlined" '\|keep_block \(inline\);inl_caller;main;' <(pprof_traces_inline "$f")
	"$PROF" --heap --no-debuginfod -f folded -o "$d" --top 0 -- build/targets/inline_alloc \
		>/dev/null || fail "profiler exit status $? (folded)"
	expect_one_line "folded keep_block" '^inline_alloc;.*;main;inl_caller;keep_block 102400$' "$d"
	# --no-inline: the symbol's function alone, at the line of the call inlined there.
	"$PROF" --heap --no-debuginfod --no-inline -f folded -o "$d" --top 0 -- \
		build/targets/inline_alloc >/dev/null || fail "profiler exit status $? (--no-inline)"
	expect_one_line "folded --no-inline" '^inline_alloc;.*;main;inl_caller 102400$' "$d"
}

# keep_block's name in dwz's alternate file: inline_alloc's debug file as Debian's and Fedora's
# debug packages ship it, processed by dwz -m with another build's (what both hold moves to a
# shared file: keep_block's DIE, or at least its name), the target stripped of its DWARF, and both
# files installed under /usr/lib/debug/.build-id/ for the test only: the inlined frame named as
# from the target's own DWARF (without the alternate file it is left out, counted).
t_names_inlined_dwz() {
	local f=$E2E_TMP/dwz.pb.gz w=$E2E_TMP/dwz bid abid
	command -v dwz >/dev/null || fail "dwz is not installed (scripts/install-deps.sh test)"
	mkdir -p "$w"
	cp build/targets/inline_alloc "$w/inline_alloc"
	# Another build of the same source (another producer string, so another build id).
	cc -g -O2 -fno-omit-frame-pointer tests/targets/inline_alloc.c -o "$w/other" ||
		fail "cannot build the second program"
	objcopy --only-keep-debug "$w/inline_alloc" "$w/a.debug"
	objcopy --only-keep-debug "$w/other" "$w/b.debug"
	strip --strip-all "$w/inline_alloc"
	(cd "$w" && dwz -m common.debug -M /usr/lib/debug/.dwz/bpftrace-prof-e2e.debug \
		a.debug b.debug) || fail "dwz failed"
	# keep_block's name in the shared file's strings, no longer in the target's debug file's.
	if ! readelf -p .debug_str "$w/common.debug" 2>/dev/null | grep -q keep_block ||
		readelf -p .debug_str "$w/a.debug" 2>/dev/null | grep -q keep_block; then
		fail "dwz did not move keep_block's name"
	fi
	bid=$(build_id "$w/inline_alloc")
	abid=$(build_id "$w/common.debug")
	# Not local: the trap runs after the function, when a failure exits the test.
	DWZ_DEBUG=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
	DWZ_ALT=/usr/lib/debug/.build-id/${abid:0:2}/${abid:2}.debug
	if [ -e "$DWZ_DEBUG" ] || [ -e "$DWZ_ALT" ]; then
		fail "$DWZ_DEBUG or $DWZ_ALT exists already"
	fi
	trap 'rm -f "$DWZ_DEBUG" "$DWZ_ALT"' EXIT
	install -D -m 0644 "$w/a.debug" "$DWZ_DEBUG"
	install -D -m 0644 "$w/common.debug" "$DWZ_ALT"
	"$PROF" --heap --no-debuginfod -o "$f" --top 0 -- "$w/inline_alloc" >/dev/null ||
		fail "profiler exit status $?"
	check_keep_block_inlined "$f"
	expect_eq "inline_unnamed" 0 "$(pprof_counter_value "$f" inline_unnamed)"
	# The same without the alternate file: the level left out, counted.
	rm -f "$DWZ_ALT"
	"$PROF" --heap --no-debuginfod -o "$f" --top 0 -- "$w/inline_alloc" >/dev/null ||
		fail "profiler exit status $? (no alternate file)"
	expect_eq "keep_block without the alternate file" 0 "$(pprof_flat "$f" alloc_objects keep_block)"
	[ "$(pprof_counter_value "$f" inline_unnamed)" -gt 0 ] ||
		fail "inline_unnamed is not counted without the alternate file"
}

# The pprof Lines of static_alloc's frames: hidden_keep at its malloc, main at its call.
check_static_alloc_lines() { # FILE
	local src keep call
	src=$(realpath tests/targets/static_alloc.c)
	keep=$(grep -n 'kept\[i\] = malloc' "$src" | cut -d: -f1)
	call=$(grep -n 'hidden_keep(i);' "$src" | cut -d: -f1)
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null >"$1.raw"
	grep -qE "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ hidden_keep $src:$keep " "$1.raw" ||
		fail "hidden_keep is not at $src:$keep: $(grep hidden_keep "$1.raw" | head -2)"
	grep -qE "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ main $src:$call " "$1.raw" ||
		fail "main is not at $src:$call: $(grep ' main ' "$1.raw" | head -3)"
	echo "ok: hidden_keep at line $keep, main at $call"
}

# A server that accepts and never answers: the run ends once --debuginfod-timeout has passed,
# said on stderr, every allocation there under its file offset, the cut fetch counted.
t_names_debuginfod_stalled() {
	local f=$E2E_TMP/stalled.pb.gz port keep churn
	python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])' >"$E2E_TMP/stall.port" &
	echo $! >"$E2E_TMP/stall.pid"
	trap 'stop_pidfile "$E2E_TMP/stall.pid"' EXIT
	for _ in $(seq 50); do [ -s "$E2E_TMP/stall.port" ] && break; sleep 0.1; done
	port=$(cat "$E2E_TMP/stall.port")
	DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$E2E_TMP/cache \
		"$PROF" --heap --debuginfod-timeout 2 -o "$f" --top 0 -- \
		build/targets/static_alloc_stripped >/dev/null 2>"$E2E_TMP/err" ||
		fail "profiler exit status $?"
	grep -q '^bpftrace-prof: waiting up to 2 s for [0-9]* debug files\? from debuginfod' "$E2E_TMP/err" ||
		fail "the wait not said: $(head -5 "$E2E_TMP/err")"
	keep=static_alloc_stripped+0x$(file_offset build/targets/static_alloc hidden_keep)
	churn=static_alloc_stripped+0x$(file_offset build/targets/static_alloc hidden_churn)
	check_static_alloc "$f" "$keep" "$churn"
	expect_range "debuginfod_timeouts" 1 2 "$(pprof_counter_value "$f" debuginfod_timeouts)"
	# No negative entry left behind: the next run with a server that has the file names it.
	[ -z "$(find "$E2E_TMP/cache" -type f -name debuginfo -size 0)" ] ||
		fail "a negative cache entry left: $(find "$E2E_TMP/cache" -type f -name debuginfo)"
}

# The allocations of tests/targets/static_alloc.c, exact, under the names given for its two
# functions; nothing dropped (debuginfod's own counters aside).
check_static_alloc() { # FILE KEEP CHURN
	expect_no_drops "$1"
	expect_eq "$2 alloc_objects" 300 "$(pprof_flat "$1" alloc_objects "$2")"
	expect_eq "$2 inuse_space" 300000 "$(pprof_flat "$1" inuse_space "$2")"
	expect_eq "$3 alloc_objects" 2000 "$(pprof_flat "$1" alloc_objects "$3")"
	expect_eq "$3 alloc_space" 128000 "$(pprof_flat "$1" alloc_space "$3")"
	expect_eq "$3 inuse_objects" 0 "$(pprof_flat "$1" inuse_objects "$3")"
}

# Stop the process whose pid FILE holds, and wait until it is gone.
stop_pidfile() { # FILE
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

build_id() { # FILE
	readelf -n "$1" | awk '/Build ID/ { print $3; exit }'
}

# start_debuginfod DIR BID: Debian's debuginfod indexing DIR on a free loopback port; its URL once
# it serves build id BID (its pid in $E2E_TMP/debuginfod.pid).
start_debuginfod() {
	local port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	debuginfod -F "$1" -p "$port" -d "$E2E_TMP/debuginfod.sqlite" >"$E2E_TMP/debuginfod.log" 2>&1 &
	echo $! >"$E2E_TMP/debuginfod.pid"
	for _ in $(seq 150); do
		if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
			"http://127.0.0.1:$port/buildid/$2/debuginfo" 2>/dev/null; then
			echo "http://127.0.0.1:$port"
			return 0
		fi
		sleep 0.2
	done
	return 1
}
