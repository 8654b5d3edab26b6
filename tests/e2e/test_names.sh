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
