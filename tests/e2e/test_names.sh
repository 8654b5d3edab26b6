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
}
