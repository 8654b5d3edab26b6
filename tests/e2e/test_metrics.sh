# --metrics: our own counters served to Prometheus while a run goes on.  A continuous --heap
# --cpu run of churn_server pushing to the test receiver, scraped twice a couple of seconds
# apart with curl; both scrapes read by python3-prometheus-client's parser
# (tests/e2e/metrics_check.py, Debian's python3): every family typed and described, no per-pid series, counters
# never going back, events and push_sent moving, the gauges set.  Bad addresses are usage errors
# (status 2), a port in use a one-line failure at start (status 1).

# shellcheck source=tests/e2e/push_lib.sh
. tests/e2e/push_lib.sh

# A port of the loopback nobody listens on (the kernel's choice, released at once).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

t_metrics_scraped_during_a_run() {
	local out=$E2E_TMP/out port pid rc=0 i
	/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
		fail "python3-prometheus-client is missing (scripts/install-deps.sh test installs it)"
	start_receiver "$E2E_TMP/recv"
	port=$(free_port)
	"$PROF" --heap --cpu --interval 1 --output-dir "$out" --push "http://127.0.0.1:$RECV_PORT" \
		--metrics "127.0.0.1:$port" --top 0 -- build/targets/churn_server 6 >/dev/null 2>"$out.log" &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		curl -sf "http://127.0.0.1:$port/metrics" -o "$E2E_TMP/a.txt" && grep -q '^bpftrace_prof_push_sent_total [1-9]' "$E2E_TMP/a.txt" && break
		sleep 0.1
	done
	grep -q '^bpftrace_prof_push_sent_total [1-9]' "$E2E_TMP/a.txt" || fail "no scrape after the first push: $(cat "$out.log")"
	sleep 2.2
	curl -sf "http://127.0.0.1:$port/metrics" -o "$E2E_TMP/b.txt" || fail "second scrape failed"
	expect_eq "status of another path" 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")"
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$out.log"; fail "profiler exit status $rc"; }
	/usr/bin/python3 tests/e2e/metrics_check.py "$E2E_TMP/a.txt" "$E2E_TMP/b.txt" || fail "the scrapes do not check"
	# served on the loopback only by default
	grep -q 'secret\|token\|password' "$E2E_TMP/b.txt" && fail "a secret-looking word in the metrics"
	true
}

t_metrics_bad_address_and_port_in_use() {
	local rc=0 port
	"$PROF" --cpu --metrics localhost:80 -- /bin/true 2>"$E2E_TMP/bad.err" || rc=$?
	expect_eq "exit status of a bad --metrics" 2 "$rc"
	expect_eq "lines" 1 "$(wc -l <"$E2E_TMP/bad.err")"
	grep -q "invalid --metrics 'localhost:80'" "$E2E_TMP/bad.err" || fail "message: $(cat "$E2E_TMP/bad.err")"
	port=$(free_port)
	python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); print("up", flush=True); time.sleep(30)' "$port" >"$E2E_TMP/busy.out" &
	wait_for_line "$E2E_TMP/busy.out" up 10 || fail "no listener"
	rc=0
	"$PROF" --cpu --metrics "$port" -- /bin/true 2>"$E2E_TMP/busy.err" || rc=$?
	expect_eq "exit status with the port in use" 1 "$rc"
	grep -q -- "--metrics $port: Address already in use" "$E2E_TMP/busy.err" || fail "message: $(cat "$E2E_TMP/busy.err")"
}
