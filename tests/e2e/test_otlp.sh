# --push-protocol otlp end to end: the profiler sends each interval's cpu profile to
# tests/e2e/push_receiver.py's OTLP endpoint, which stores every request uncompressed;
# tests/e2e/otlp_check.py decodes them with protoc alone (--decode_raw, and
# tests/otlp/profiles_subset.proto written from opentelemetry-proto v1.11.0) and checks the
# dictionary's rules, the target's pid and functions and the times against the profiles written
# to --output-dir.  Retries as OTLP/HTTP says: 503 with Retry-After retried, 400 and 500 not,
# a partial_success's rejected profiles counted; a receiver that stalls: spooled, sent by the next
# run, nothing lost.

CT=build/targets/cpu_target

. tests/e2e/push_lib.sh

# otlp_run OUT_DIR SECONDS [OPTION…]: the profiler on cpu_target (OTLP_TARGET: another
# command) --cpu (OTLP_MODE: another mode option), its pid in OUT_DIR.pid, pushing OTLP every
# 2 s; its stderr in OUT_DIR.log, the push summary line printed.
otlp_run() {
	local rc=0 out=$1 secs=$2
	shift 2
	"$PROF" -v "${OTLP_MODE:---cpu}" --interval 2 --output-dir "$out" -d "$secs" --top 0 \
		--push-protocol otlp "$@" \
		-- sh -c "echo \$\$ >'$out.pid'; env >'$out.env'; exec ${OTLP_TARGET:-$CT 30}" \
		>/dev/null 2>"$out.log" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$out.log" >&2; fail "exit status $rc"; }
	grep '^bpftrace-prof: .*push: ' "$out.log" | tail -1
}

# otlp_check OUT_DIR [FUNCTION MODE]: otlp_check.py on what the receiver holds (FUNCTION
# hot_three, MODE cpu by default; the executable OTLP_TARGET's first word, as for otlp_run);
# prints the number of requests.
otlp_check() {
	local exe
	exe=$(realpath "$(cut -d' ' -f1 <<<"${OTLP_TARGET:-$CT}")")
	OTLP_EXE=$exe python3 tests/e2e/otlp_check.py "$RECV_DIR" "$1" "$(cat "$1.pid")" "${2:-hot_three}" "${3:-cpu}" ||
		fail "the OTLP requests do not check"
}

# The number of requests of requests.log answered with STATUS.
answered() {
	grep '"path": "/v1development/profiles"' "$RECV_DIR/requests.log" | grep -c "\"status\": $1}"
}

t_otlp_intervals_decode() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	line=$(otlp_run "$out" 7 --push "http://127.0.0.1:$RECV_PORT")
	echo "$line"
	n=$(otlp_check "$out")
	[ "$n" -ge 3 ] || fail "expected at least 3 requests, got $n"
	echo "ok: $n requests decode with protoc, dictionaries valid, pid and hot_three found, times match"
	grep -q "push: $n of $n profiles sent, 0 retries, 0 spooled" <<<"$line" || fail "push summary: $line"
	expect_eq "non-200 answers" 0 "$(grep -vc '"status": 200' "$RECV_DIR/requests.log")"
}

# --heap: heap_target's allocations, its four sample types a Profile each.
t_otlp_heap_decodes() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	line=$(OTLP_MODE=--heap OTLP_TARGET=build/targets/heap_target \
		otlp_run "$out" 10 --push "http://127.0.0.1:$RECV_PORT")
	echo "$line"
	n=$(OTLP_TARGET=build/targets/heap_target otlp_check "$out" leak_pages heap)
	[ "$n" -ge 1 ] || fail "expected a request, got $n"
	grep -q "push: $n of $n profiles sent, 0 retries" <<<"$line" || fail "push summary: $line"
	local f
	for f in "$RECV_DIR"/*.otlp.pb; do
		protoc --decode_raw <"$f" | grep -q '"alloc_space"' || fail "no alloc_space in $f"
	done
	echo "ok: $n heap requests, leak_pages of the target's pid found"
}

# 503 with Retry-After: 1 twice: retried (the first retry waits the second, not our 0.5 s),
# then delivered.
t_otlp_503_retry_after_retried() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	recv_cmd retry_after 1
	recv_cmd fail 503 2
	# A URL that already ends with the signal's path is taken as it is.
	line=$(otlp_run "$out" 5 --push "http://127.0.0.1:$RECV_PORT/v1development/profiles")
	echo "$line"
	n=$(otlp_check "$out")
	expect_eq "503 answers" 2 "$(answered 503)"
	grep -q "push: $n of $n profiles sent, 2 retries, 0 spooled" <<<"$line" || fail "push summary: $line"
	python3 - "$RECV_DIR/requests.log" <<'PY' || fail "the retry came before Retry-After's second"
import json, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1])]
sys.exit(0 if t[1] - t[0] >= 0.95 else "first retry after %.3f s" % (t[1] - t[0]))
PY
	echo "ok: two 503s retried after Retry-After, all $n delivered"
}

# 400 and 500 are final under OTLP/HTTP: not retried, counted as failed, nothing spooled.
t_otlp_400_500_not_retried() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	recv_cmd fail 400 1
	recv_cmd fail 500 1
	line=$(otlp_run "$out" 7 --push "http://127.0.0.1:$RECV_PORT")
	echo "$line"
	n=$(OTLP_MISSING=2 otlp_check "$out")
	expect_eq "400 answers" 1 "$(answered 400)"
	expect_eq "500 answers" 1 "$(answered 500)"
	grep -q "push: $n of $((n + 2)) profiles sent, 0 retries, 0 spooled, .* 2 failed, 0 dropped" <<<"$line" ||
		fail "push summary: $line"
	grep -q 'refused a profile (HTTP 400); not retried' "$out.log" || fail "no refusal message"
	expect_eq "spool files" 0 "$(find "$out/spool" -name '*.spool' | wc -l)"
}

# The first two requests are read and never answered: still in flight at the end, they go to
# the spool; the next run (into the same --output-dir, the receiver answering) sends them before
# its own.  Every interval of both runs arrives once and decodes.
t_otlp_stalled_spooled_sent_next_run() {
	local out=$E2E_TMP/out line n
	start_receiver "$E2E_TMP/recv"
	recv_cmd stall 2
	line=$(otlp_run "$out" 5 --push "http://127.0.0.1:$RECV_PORT")
	echo "$line"
	expect_eq "spooled files after the stalled run" 2 "$(find "$out/spool" -name '*.spool' | wc -l)"
	grep -q "push: [0-9]* of [0-9]* profiles sent, 0 retries, 2 spooled, .* 0 failed, 0 dropped" <<<"$line" ||
		fail "push summary: $line"
	line=$(otlp_run "$out" 3 --push "http://127.0.0.1:$RECV_PORT")
	echo "$line"
	grep -q "2 sent from the spool, 0 aged out, 0 failed, 0 dropped" <<<"$line" || fail "push summary: $line"
	expect_eq "spool files after the second run" 0 "$(find "$out/spool" -name '*.spool' | wc -l)"
	n=$(otlp_check "$out")
	echo "ok: all $n profiles of both runs arrived once, the two stalled ones from the spool"
}

# An accepted request whose partial_success rejects a profile: a loss, counted and said.
t_otlp_partial_success_counted() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	recv_cmd partial 1 1
	line=$(otlp_run "$out" 5 --push "http://127.0.0.1:$RECV_PORT")
	echo "$line"
	n=$(otlp_check "$out")
	grep -q "push: $n of $n profiles sent, 0 retries, .*, 1 rejected in a partial success" <<<"$line" ||
		fail "push summary: $line"
	grep -q '^bpftrace-prof: warning: push: 127.0.0.1:[0-9]* rejected 1 profiles of a request (receiver told to reject 1)' \
		"$out.log" || fail "no partial success warning: $(grep push "$out.log")"
}

# No --push: the endpoint and the headers from OTEL_EXPORTER_OTLP_*; CMD gets none of them
# (others of the target's OTel variables stay).
t_otlp_env_endpoint_headers_not_in_cmd() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	line=$(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RECV_PORT/" \
		OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20otel-e2e-secret,x-a=b" \
		OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://traces.invalid \
		otlp_run "$out" 5)
	echo "$line"
	n=$(otlp_check "$out")
	[ "$n" -ge 2 ] || fail "expected at least 2 requests, got $n"
	for f in "$RECV_DIR"/*.json; do
		grep -q '"authorization": "Bearer otel-e2e-secret"' "$f" || fail "no header in $(cat "$f")"
	done
	grep -q '^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://traces.invalid$' "$out.env" ||
		fail "CMD lost a variable it owns"
	if grep -E '^OTEL_EXPORTER_OTLP_(ENDPOINT|HEADERS)=|otel-e2e-secret' "$out.env"; then
		fail "CMD's environment holds the OTLP push variables"
	fi
	echo "ok: $n requests to the environment's endpoint with its headers; CMD saw neither"
}

# The headers' values are wiped from our own /proc/PID/environ once read, and still reach the
# receiver.
t_otlp_headers_not_in_our_environ() {
	local out=$E2E_TMP/out
	start_receiver "$E2E_TMP/recv"
	OTEL_EXPORTER_OTLP_PROFILES_HEADERS="authorization=Bearer%20otel-e2e-environ" \
		environ_at_first_profile "$out" --push-protocol otlp --push "http://127.0.0.1:$RECV_PORT"
	if grep -a 'otel-e2e-environ' "$out.environ"; then fail "the header is in /proc/PID/environ"; fi
	grep -q '"authorization": "Bearer otel-e2e-environ"' "$RECV_DIR/000001.json" ||
		fail "the header did not reach the receiver"
	echo "ok: the header reaches the receiver and is gone from our /proc/PID/environ"
}
