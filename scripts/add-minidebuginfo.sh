#!/bin/sh
# Give a copy of ELF file IN MiniDebugInfo the way Fedora builds it (gdb's manual,
# "MiniDebugInfo"): the function symbols its .dynsym lacks, kept in an otherwise empty copy,
# xz-compressed into a .gnu_debugdata section of the stripped file.  OUT: that file;
# STRIPPED (optional): the stripped file without it.
# Usage: scripts/add-minidebuginfo.sh IN OUT [STRIPPED]
set -eu
in=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D "$in" --format=posix --defined-only | awk '{ print $1 }' | sort >"$tmp/dynsyms"
nm "$in" --format=posix --defined-only |
	awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >"$tmp/funcsyms"
comm -13 "$tmp/dynsyms" "$tmp/funcsyms" >"$tmp/keep_symbols"
objcopy --only-keep-debug "$in" "$tmp/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment \
	--keep-symbols="$tmp/keep_symbols" "$tmp/debug" "$tmp/mini_debuginfo"
strip --strip-all -R .comment -o "$tmp/stripped" "$in"
xz "$tmp/mini_debuginfo"
objcopy --add-section .gnu_debugdata="$tmp/mini_debuginfo.xz" "$tmp/stripped" "$out"
[ $# -lt 3 ] || cp "$tmp/stripped" "$3"
