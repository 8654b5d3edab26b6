# Helpers of the --push tests (test_push.sh, test_otlp.sh): tests/e2e/push_receiver.py driven
# through a fifo.  RECV (the script) is set here.
# shellcheck disable=SC2034

RECV=tests/e2e/push_receiver.py

# start_receiver DIR [--refuse]: sets RECV_DIR, RECV_PORT and RECV_IN (a fd for its commands).
start_receiver() {
	RECV_DIR=$1
	shift
	local fifo="$E2E_TMP/recv.fifo.$RANDOM"
	mkfifo "$fifo"
	python3 "$RECV" "$RECV_DIR" "$@" <"$fifo" >"$RECV_DIR.out" 2>"$RECV_DIR.err" &
	exec {RECV_IN}>"$fifo"
	rm -f "$fifo"
	wait_for_line "$RECV_DIR.out" '^[0-9]' 10 || fail "receiver did not start: $(cat "$RECV_DIR.err")"
	RECV_PORT=$(head -1 "$RECV_DIR.out")
	RECV_ACKS=0
}

# recv_cmd WORDS…: a command (push_receiver.py's docstring), waited for until acknowledged.
recv_cmd() {
	local i
	echo "$*" >&"$RECV_IN"
	RECV_ACKS=$((RECV_ACKS + 1))
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -c '^done' "$RECV_DIR.out")" -ge "$RECV_ACKS" ] && return 0
		sleep 0.05
	done
	fail "receiver did not take '$*'"
}

# environ_at_first_profile OUT_DIR OPTION…: the profiler on $CT, pushing every second; its
# /proc/PID/environ, read once the receiver has the first profile (the push credentials long
# read by then), in OUT_DIR.environ.
environ_at_first_profile() {
	local out=$1 pid i rc=0
	shift
	"$PROF" --cpu --interval 1 --output-dir "$out" -d 4 --top 0 "$@" -- "$CT" 30 \
		>/dev/null 2>"$out.log" &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		[ -e "$RECV_DIR/000001.json" ] && break
		sleep 0.05
	done
	[ -e "$RECV_DIR/000001.json" ] || fail "nothing received"
	tr '\0' '\n' <"/proc/$pid/environ" >"$out.environ" || fail "cannot read our environ"
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$out.log"; fail "exit status $rc"; }
	grep -q '^PATH=' "$out.environ" || fail "our environ unread"
}
