# -f codetracer -o DIR: --calls as a CodeTracer trace folder, read back by tests/e2e/ct_check.py
# (python's json, written from the format's description).  The PHP target's exact calls
# (tests/targets/calls.php): main once, Calc::alpha 100 times, Calc::beta 300 times, sleeper once.

CT_PHP=tests/targets/calls.php
CT_CHECK=tests/e2e/ct_check.py

ct_fact() { # FACTS_FILE KEY
	awk -v k="$2" 'index($0, k " ") == 1 { v = substr($0, length(k) + 2) } END { print v }' "$1"
}

ct_run() { # DIR [extra profiler args…]
	local d=$1
	shift
	command -v php >/dev/null || fail "php is not installed"
	USE_ZEND_DTRACE=1 "$PROF" --calls -f codetracer -o "$d" "$@" -- php "$CT_PHP" \
		>"$E2E_TMP/ct.out" 2>"$E2E_TMP/ct.err" || { cat "$E2E_TMP/ct.err"; fail "profiler exit status $?"; }
}

t_codetracer_php_exact() {
	local d=$E2E_TMP/ct facts=$E2E_TMP/ct.facts
	ct_run "$d"
	cat "$E2E_TMP/ct.err"
	expect_eq "script output" 5550 "$(head -1 "$E2E_TMP/ct.out")"
	grep -q '^no drops$' "$E2E_TMP/ct.err" || fail "no drop summary printed"
	grep -q '^sources copied: 1, not copied: 0$' "$E2E_TMP/ct.err" || fail "source copy summary"
	python3 "$CT_CHECK" "$d" >"$facts" || { cat "$facts"; fail "ct_check rejected the trace"; }
	cat "$facts"
	expect_eq "Calc::alpha calls" 100 "$(ct_fact "$facts" "calls Calc::alpha")"
	expect_eq "Calc::beta calls" 300 "$(ct_fact "$facts" "calls Calc::beta")"
	expect_eq "main calls" 1 "$(ct_fact "$facts" "calls main")"
	expect_eq "sleeper calls" 1 "$(ct_fact "$facts" "calls sleeper")"
	# 402 calls of the script's functions and the <toplevel> one, each returned.
	expect_eq "all calls" 403 "$(ct_fact "$facts" "callsall")"
	expect_eq "returns" 403 "$(ct_fact "$facts" "returns")"
	expect_eq "threads started, exited" "1 1" "$(ct_fact "$facts" "threads")"
	local script
	script=$(realpath "$CT_PHP")
	expect_eq "paths" "path $script" "$(grep '^path ' "$facts")"
	cmp "$script" "$d/files$script" || fail "files$script is not the script's bytes"
	expect_eq "metadata" "php $CT_PHP" "$(ct_fact "$facts" metadata)"
	expect_eq "folder mode" 700 "$(stat -c %a "$d")"
	expect_eq "trace.json mode" 600 "$(stat -c %a "$d/trace.json")"
	expect_eq "temporary folders left" "" "$(find "$E2E_TMP" -maxdepth 1 -name '.ct.*')"
}

# An old trace folder is replaced whole; links, files and foreign folders are refused.
t_codetracer_replace_and_refuse() {
	local d=$E2E_TMP/ctr out=$E2E_TMP/ctr.err
	ct_run "$d"
	echo stale >"$d/stale"
	ct_run "$d"
	[ ! -e "$d/stale" ] || fail "the old folder's file survived the replacement"
	python3 "$CT_CHECK" "$d" >/dev/null || fail "ct_check rejected the replaced trace"
	mkdir "$E2E_TMP/foreign" && echo mine >"$E2E_TMP/foreign/notes"
	USE_ZEND_DTRACE=1 "$PROF" --calls -f codetracer -o "$E2E_TMP/foreign" -- php "$CT_PHP" \
		>/dev/null 2>"$out"
	expect_eq "foreign folder exit status" 2 "$?"
	grep -q 'other files' "$out" || fail "no message for a foreign folder"
	expect_eq "foreign folder kept" mine "$(cat "$E2E_TMP/foreign/notes")"
	ln -s "$d" "$E2E_TMP/ctlink"
	USE_ZEND_DTRACE=1 "$PROF" --calls -f codetracer -o "$E2E_TMP/ctlink" -- php "$CT_PHP" \
		>/dev/null 2>"$out"
	expect_eq "symlink exit status" 2 "$?"
	grep -q 'symbolic link' "$out" || fail "no symbolic-link message"
	"$PROF" --calls -f codetracer -o - -- /bin/true 2>"$out"
	expect_eq "-o - exit status" 2 "$?"
	grep -q 'directory' "$out" || fail "-o - message does not say a directory is needed"
	"$PROF" --heap -f codetracer -o "$E2E_TMP/x" -- /bin/true 2>"$out"
	expect_eq "--heap -f codetracer exit status" 2 "$?"
	[ ! -e "$E2E_TMP/x" ] || fail "a folder was written"
}

# A source gone before its function runs is counted and listed, not fatal.
t_codetracer_missing_source() {
	command -v php >/dev/null || fail "php is not installed"
	local d=$E2E_TMP/ctm facts=$E2E_TMP/ctm.facts inc=$E2E_TMP/gone.php
	cat >"$E2E_TMP/main.php" <<PHP
<?php
file_put_contents('$inc', '<?php function gone() { return 1; }');
include '$inc';
unlink('$inc');
gone();
gone();
PHP
	USE_ZEND_DTRACE=1 "$PROF" --calls -f codetracer -o "$d" -- php "$E2E_TMP/main.php" \
		>"$E2E_TMP/ctm.out" 2>"$E2E_TMP/ctm.err" || fail "profiler exit status $?"
	cat "$E2E_TMP/ctm.err" "$E2E_TMP/ctm.out"
	grep -q '^sources copied: 1, not copied: 1 (listed above)$' "$E2E_TMP/ctm.err" ||
		fail "the missing source is not counted"
	grep -q "source $inc of pid [0-9]* not copied" "$E2E_TMP/ctm.err" ||
		fail "the missing source is not listed"
	python3 "$CT_CHECK" "$d" >"$facts" || { cat "$facts"; fail "ct_check rejected the trace"; }
	expect_eq "gone calls" 2 "$(ct_fact "$facts" "calls gone")"
	grep -q "^path $inc\$" "$facts" || fail "the missing source's path is not in trace_paths.json"
	[ ! -e "$d/files$inc" ] || fail "a copy of the missing source exists"
}

# A target names as its sources files it may not read (tests/targets/ct_hostile.py: compile()
# takes any filename): run as uid 65534, it names a root-owned 0600 file and /proc/self/environ
# (through the host's /proc, "self" is whoever opens it: as root, ours, with a secret in it),
# and another user's 0644 file.  The first two are refused and counted, the third is copied,
# and the secret is nowhere in the folder.
t_codetracer_hostile_sources() {
	local py=/usr/bin/python3.11 d=$E2E_TMP/cth facts=$E2E_TMP/cth.facts pub secret rc
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	command -v setpriv >/dev/null || fail "setpriv is not installed (util-linux)"
	# Beside E2E_TMP (0700, root's): uid 65534 must be able to reach the files it names.
	pub=$(mktemp -d /tmp/bpftrace-prof-cth.XXXXXX) || fail "mktemp"
	chmod 755 "$pub"
	secret="ct-secret-$$-$RANDOM$RANDOM"
	printf 'root only: %s\n' "$secret" >"$pub/root-only.py"
	chmod 600 "$pub/root-only.py"
	printf 'def named_1():\n    return 1\n' >"$pub/other.py"
	chown 1:1 "$pub/other.py" && chmod 644 "$pub/other.py"
	CT_TEST_SECRET=$secret "$PROF" --calls -f codetracer -o "$d" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$py" tests/targets/ct_hostile.py "$pub/root-only.py" "$pub/other.py" /proc/self/environ \
		>"$E2E_TMP/cth.out" 2>"$E2E_TMP/cth.err"
	rc=$?
	rm -rf "$pub"
	cat "$E2E_TMP/cth.err" "$E2E_TMP/cth.out"
	expect_eq "profiler exit status" 0 "$rc"
	expect_eq "script output" 3 "$(head -1 "$E2E_TMP/cth.out")"
	python3 "$CT_CHECK" "$d" >"$facts" || { cat "$facts"; fail "ct_check rejected the trace"; }
	for f in named_0 named_1 named_2; do
		expect_eq "$f calls" 1 "$(ct_fact "$facts" "calls $f")"
	done
	for p in "$pub/root-only.py" "$pub/other.py" /proc/self/environ; do
		grep -qxF "path $p" "$facts" || fail "$p is not in trace_paths.json"
	done
	expect_eq "another user's 0644 source" "$(printf 'def named_1():\n    return 1')" \
		"$(cat "$d/files$pub/other.py")"
	[ ! -e "$d/files$pub/root-only.py" ] || fail "root's 0600 file was copied"
	[ ! -e "$d/files/proc/self/environ" ] || fail "/proc/self/environ was copied"
	! grep -rqF "$secret" "$d" || fail "the secret is in the trace folder: $(grep -rlF "$secret" "$d")"
	grep -q '^  ct_source_denied: 1 ' "$E2E_TMP/cth.err" || fail "the 0600 file is not counted"
	grep -q '^  ct_source_kernel_fs: 1 ' "$E2E_TMP/cth.err" ||
		fail "/proc/self/environ is not counted"
	grep -q "source $pub/root-only.py of pid [0-9]* not copied: not readable" "$E2E_TMP/cth.err" ||
		fail "the 0600 file's refusal is not said"
	grep -q "source /proc/self/environ of pid [0-9]* not copied: on /proc" "$E2E_TMP/cth.err" ||
		fail "/proc/self/environ's refusal is not said"
}

# The same path in two mount namespaces (a bind mount over it in the second, as two containers
# would have two files at one path): two Path records, two copies, each with its own bytes.
t_codetracer_two_roots() {
	local py=/usr/bin/python3.11 d=$E2E_TMP/ct2 facts=$E2E_TMP/ct2.facts src=$E2E_TMP/app.py
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	command -v unshare >/dev/null || fail "unshare is not installed (util-linux)"
	echo "where = 'first'" >"$src"
	echo "where = 'second'" >"$E2E_TMP/second.py"
	cat >"$E2E_TMP/two.sh" <<SH
$py tests/targets/ct_hostile.py $src
unshare -m --propagation private sh -c 'mount --bind $E2E_TMP/second.py $src && exec $py tests/targets/ct_hostile.py $src'
SH
	"$PROF" --calls -f codetracer -o "$d" -- sh "$E2E_TMP/two.sh" \
		>"$E2E_TMP/ct2.out" 2>"$E2E_TMP/ct2.err" || { cat "$E2E_TMP/ct2.err"; fail "profiler exit status $?"; }
	cat "$E2E_TMP/ct2.out"
	expect_eq "script output" "1 1" "$(grep -x 1 "$E2E_TMP/ct2.out" | xargs)"
	python3 "$CT_CHECK" "$d" >"$facts" || { cat "$facts"; fail "ct_check rejected the trace"; }
	expect_eq "named_0 calls (one per process)" 2 "$(ct_fact "$facts" "calls named_0")"
	grep -qxF "path $src" "$facts" || fail "the first namespace's path is not in trace_paths.json"
	grep -qxF "path /[root 2]$src" "$facts" ||
		fail "the second namespace's path is not in trace_paths.json as /[root 2]$src"
	expect_eq "first copy" "where = 'first'" "$(cat "$d/files$src")"
	expect_eq "second copy" "where = 'second'" "$(cat "$d/files/[root 2]$src")"
}

# -o DIR replaced by someone else's folder during the run: the folder seen at the start is the
# only one we may replace, so theirs stays (with its file) and ours is kept beside it as DIR.1,
# said in one line, exit status 1.  (It was swapped out and deleted with everything in it.)
t_codetracer_dir_replaced_during_run() {
	local d=$E2E_TMP/ct py=/usr/bin/python3.11 pid rc i
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	mkdir "$d"
	"$PROF" --calls -f codetracer -o "$d" -- "$py" -c 'import time; time.sleep(4)' \
		>"$E2E_TMP/ct.out" 2>"$E2E_TMP/ct.err" &
	pid=$!
	# Our folder is being built beside it (.ct.XXXXXX): the run has looked at DIR.
	for ((i = 0; i < 200; i++)); do
		compgen -G "$E2E_TMP/.ct.*" >/dev/null && break
		sleep 0.05
	done
	compgen -G "$E2E_TMP/.ct.*" >/dev/null || fail "no temporary trace folder beside $d"
	mv "$d" "$E2E_TMP/ct.moved"
	mkdir "$d"
	echo theirs >"$d/theirs.txt"
	wait "$pid"
	rc=$?
	cat "$E2E_TMP/ct.err"
	expect_eq "exit status" 1 "$rc"
	expect_eq "their file" theirs "$(cat "$d/theirs.txt")"
	[ ! -e "$d/trace_metadata.json" ] || fail "our trace went into their folder"
	{ [ -s "$d.1/trace_metadata.json" ] && [ -s "$d.1/trace.json" ]; } || fail "no trace kept in $d.1"
	grep -q "$d was replaced during the run (not deleted): the trace is in $d.1" "$E2E_TMP/ct.err" ||
		fail "no line saying where the trace is"
	expect_eq "temporary folders left" 0 "$(compgen -G "$E2E_TMP/.ct.*" | wc -l)"
}

# The trace folder is durable once in place: every file and folder in it was fsynced before the
# rename, and the parent after it (strace of our main thread; only the folder was, before).
t_codetracer_folder_synced() {
	local d=$E2E_TMP/ct py=/usr/bin/python3.11 rel missing=""
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	command -v strace >/dev/null || fail "strace missing (apt-get install strace)"
	strace -y -e trace=fsync,rename,renameat2 -o "$E2E_TMP/strace.log" \
		"$PROF" --calls -f codetracer -o "$d" -- "$py" -c 'import json' >/dev/null 2>"$E2E_TMP/ct.err" ||
		{ cat "$E2E_TMP/ct.err"; fail "profiler exit status $?"; }
	# fsync(N</…/.ct.XXXXXX/REL>) = 0: the paths synced, relative to the folder ("." itself).
	sed -n "s|^fsync([0-9]*<$E2E_TMP/\.ct\.[A-Za-z0-9]\{6\}\(/[^>]*\)\{0,1\}>) = 0$|.\1|p" "$E2E_TMP/strace.log" |
		sort -u >"$E2E_TMP/synced"
	[ "$(find "$d" -type f | wc -l)" -ge 4 ] || fail "expected trace.json, two more files and copied sources"
	for rel in $(cd "$d" && find . | sort); do
		grep -qxF "$rel" "$E2E_TMP/synced" || missing="$missing $rel"
	done
	[ -z "$missing" ] || { cat "$E2E_TMP/strace.log"; fail "not fsynced:$missing"; }
	# The parent, after the rename put the folder in place.
	awk -v p="$E2E_TMP" '/^rename/ && index($0, "\"" p "/ct\"") { r = NR } r && NR > r && index($0, "fsync(") && index($0, "<" p ">) = 0") { ok = 1 } END { exit !ok }' \
		"$E2E_TMP/strace.log" || { cat "$E2E_TMP/strace.log"; fail "the parent was not fsynced after the rename"; }
	echo "ok: $(wc -l <"$E2E_TMP/synced") paths of the folder fsynced, the parent after the rename"
}
