# Names a target chose, on the operator's terminal: tests/targets/evil_comm.c names its main
# thread ESC "]0;pwn" BEL ESC "[31m" "é" (an OSC title change, red, UTF-8) and a thread
# "nap" U+009B "2J" 0xff (the C1 CSI, a byte that is not UTF-8).  No raw ESC or C1 CSI may reach
# stdout, stderr or a text file; the escaped form (\x1b) shows, the é stays.

EC=build/targets/evil_comm
# How the escaper shows the two names (grep -F patterns).
EC_MAIN='\x1b]0;pwn\x07\x1b[31mé'
EC_NAP='nap\xc2\x9b2J\xff'

# Start evil_comm; sets EC_PID once both names are set.
start_evil() {
	local out=$E2E_TMP/evil.out
	"$EC" 60 >"$out" 2>&1 &
	EC_PID=$!
	wait_for_line "$out" READY 10 || fail "evil_comm never became ready"
}

# no_raw_controls FILE…: no ESC (0x1b), BEL (0x07) or C1 CSI (0xc2 0x9b) in any of them.
no_raw_controls() {
	local f
	for f in "$@"; do
		if LC_ALL=C grep -q $'[\x1b\x07]\|\xc2\x9b' "$f"; then
			cat -v "$f" | head -40
			fail "a raw control byte of the target's name reached $f"
		fi
	done
}

t_escape_comm_in_summary_and_text_report() {
	local t=$E2E_TMP/cpu.txt
	start_evil
	timeout -k 5 60 "$PROF" --cpu -p "$EC_PID" -d 2 -f text -o "$t" >"$E2E_TMP/out" \
		2>"$E2E_TMP/err"
	expect_eq "exit status" 0 "$?"
	cat -v "$t" "$E2E_TMP/out" "$E2E_TMP/err"
	no_raw_controls "$t" "$E2E_TMP/out" "$E2E_TMP/err"
	grep -qF "pid $EC_PID ($EC_MAIN): " "$t" || fail "no escaped process name in the text report"
	# -f text writes its report once, to the file: no summary on stdout or stderr.
	! grep -qF "pid $EC_PID ($EC_MAIN): " "$E2E_TMP/out" "$E2E_TMP/err" ||
		fail "the report is also on stdout or stderr"
	# The start line names the process, escaped too.
	grep -qF "of pid $EC_PID ($EC_MAIN) for 2 s" "$E2E_TMP/err" || fail "no escaped process name in the start line"
	grep -q '  spin_here$' "$t" || fail "spin_here not in the report"
}

# With -o - the profile takes stdout (folded here, escaped too: a name must not break a line or
# the terminal it is cat to) and the summary goes to stderr.
t_escape_comm_in_folded_and_summary_on_stderr() {
	start_evil
	timeout -k 5 60 "$PROF" --cpu -p "$EC_PID" -d 2 -f folded -o - >"$E2E_TMP/out" \
		2>"$E2E_TMP/err"
	expect_eq "exit status" 0 "$?"
	cat -v "$E2E_TMP/out" "$E2E_TMP/err"
	no_raw_controls "$E2E_TMP/out" "$E2E_TMP/err"
	grep -qF "pid $EC_PID ($EC_MAIN): " "$E2E_TMP/err" || fail "no escaped process name on stderr"
	# ';' separates frames in folded: the one of the OSC becomes '_'.
	P='\x1b]0_pwn\x07\x1b[31mé;' awk 'index($0, ENVIRON["P"]) == 1 && / [0-9]+$/ &&
		/;spin_here / { ok = 1 } END { exit !ok }' "$E2E_TMP/out" ||
		fail "no folded line of the escaped process ending in spin_here"
}

t_escape_comm_in_dump() {
	local f=$E2E_TMP/dump.txt
	start_evil
	timeout -k 5 60 "$PROF" dump -p "$EC_PID" >"$f" 2>"$E2E_TMP/err"
	expect_eq "exit status" 0 "$?"
	cat -v "$f" "$E2E_TMP/err"
	no_raw_controls "$f" "$E2E_TMP/err"
	grep -qF "Process $EC_PID ($EC_MAIN): " "$f" || fail "no escaped process line"
	grep -qF "  Thread $EC_PID \"$EC_MAIN\" (" "$f" || fail "no escaped main thread line"
	grep -qF "\"$EC_NAP\" (sleeping in clock_nanosleep)" "$f" || fail "no escaped thread line"
	grep -Eq '^    nap_here( \([^)]*\))? \[evil_comm\]$' "$f" || fail "no nap_here"
	# -o FILE: the same text, through the same escaper.
	timeout -k 5 60 "$PROF" dump -p "$EC_PID" -o "$f.o" 2>"$E2E_TMP/err" || fail "dump -o: $?"
	no_raw_controls "$f.o"
	grep -qF "Process $EC_PID ($EC_MAIN): " "$f.o" || fail "no escaped process line in -o FILE"
}

# A warning or message naming a path the target chose: Debian's python3.11 run from a directory
# whose name holds ESC "[31m"; -v says which file its probes went to.
t_escape_path_in_messages() {
	local py=/usr/bin/python3.11 d
	[ -x "$py" ] || skip "no $py"
	d=$E2E_TMP/$'d\x1b[31m'
	mkdir -p "$d"
	cp "$py" "$d/python3.11"
	"$d/python3.11" -c 'import time
def f(): time.sleep(0.01)
print("READY", flush=True)
while True: f()' >"$E2E_TMP/py.out" 2>&1 &
	wait_for_line "$E2E_TMP/py.out" READY 10 || fail "python never became ready"
	timeout -k 5 60 "$PROF" --calls -v -p $! -d 1 -o "$E2E_TMP/calls.pb.gz" >"$E2E_TMP/out" \
		2>"$E2E_TMP/err"
	expect_eq "exit status" 0 "$?"
	cat -v "$E2E_TMP/err"
	no_raw_controls "$E2E_TMP/out" "$E2E_TMP/err"
	grep -qF -- "--calls: attached 1 python probes to $E2E_TMP/d\\x1b[31m/python3.11" \
		"$E2E_TMP/err" || fail "no escaped path in the message"
}
