# --push end to end: the profiler sends each interval's profile to tests/e2e/push_receiver.py
# (a Pyroscope / Parca stand-in written from the protocol descriptions), which stores every body
# with its labels and time range.  The bodies are decoded by go tool pprof; the time ranges are
# matched one for one against the profiles written to --output-dir, so nothing is lost or sent
# twice, whatever the receiver did (refuse, 500, stall).

CT=build/targets/cpu_target

. tests/e2e/push_lib.sh

# push_run OUT_DIR SECONDS [OPTION…]: the profiler on cpu_target, pushing every 2 s; its stderr
# in OUT.log.
push_run() {
	local rc=0 out=$1 secs=$2
	shift 2
	"$PROF" -v --cpu --interval 2 --output-dir "$out" -d "$secs" --top 0 \
		--push "http://127.0.0.1:$RECV_PORT" "$@" -- "$CT" 30 >/dev/null 2>"$out.log" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$out.log" >&2; fail "exit status $rc"; }
	grep '^bpftrace-prof: .*push: ' "$out.log" | tail -1
}

# check_received OUT_DIR CONSECUTIVE(0|1): every profile written to OUT_DIR arrived exactly
# once (matched by its time range), with the labels of its series; with CONSECUTIVE, the ranges
# tile (each until is the next from).  Prints the number received.
check_received() {
	python3 - "$RECV_DIR" "$1" "$2" "${ENDPOINT:-push}" <<'EOF' || fail "received profiles do not match the written ones"
import glob, gzip, json, os, sys
sys.path.insert(0, "tests/e2e")
import push_receiver as pr
recv, out, consecutive, endpoint = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
got = []
for f in sorted(glob.glob(os.path.join(recv, "*.json"))):
    m = json.load(open(f))
    lab = m["labels"]
    assert m["endpoint"] == endpoint, m
    assert lab.get("service_name") == "cpu_target", lab
    # /ingest carries no __name__ (the server derives it from the sample types)
    assert lab.get("__name__") == (None if endpoint == "ingest" else "process_cpu"), lab
    assert m["from"] < m["until"], m
    body = open(f[:-5] + ".pb.gz", "rb").read()
    t, d = pr.pprof_times(body)
    assert (t, t + d) == (m["from"], m["until"]), (t, d, m)
    got.append((m["from"], m["until"]))
want = []
for f in glob.glob(os.path.join(out, "*.cpu.pb.gz")):
    t, d = pr.pprof_times(open(f, "rb").read())
    want.append((t, t + d))
if sorted(got) != sorted(want):
    sys.exit("received %s\nwritten  %s" % (sorted(got), sorted(want)))
if consecutive:
    s = sorted(got)
    for a, b in zip(s, s[1:]):
        assert a[1] == b[0], "not consecutive: %s then %s" % (a, b)
print(len(got))
EOF
}

# Every received body is a pprof go tool pprof reads, with the target's functions.
check_bodies() {
	local f
	for f in "$RECV_DIR"/*.pb.gz; do
		go tool pprof -raw -symbolize=none "$f" >"$f.raw" 2>&1 || fail "go tool pprof cannot read $f"
		grep -q 'hot_three' "$f.raw" || fail "no hot_three in $f"
		grep -q 'spin_other' "$f.raw" || fail "no spin_other in $f"
	done
	echo "ok: every body decodes, with the target's functions"
}

spool_files() {
	find "$1/spool" -name '*.spool' | wc -l
}

t_push_intervals_arrive() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	line=$(push_run "$out" 7)
	echo "$line"
	n=$(check_received "$out" 1)
	[ "$n" -ge 3 ] || fail "expected at least 3 profiles, got $n"
	echo "ok: $n profiles, one per interval, consecutive"
	check_bodies
	grep -q "push: $n of $n profiles sent, 0 retries, 0 spooled" <<<"$line" || fail "push summary: $line"
	grep -q "0 dropped; [1-9][0-9]* bytes accepted$" <<<"$line" || fail "push summary without the bytes: $line"
	expect_eq "spool files" 0 "$(spool_files "$out")"
}

t_push_500_retried() {
	local out=$E2E_TMP/out n line
	start_receiver "$E2E_TMP/recv"
	recv_cmd fail 500 3
	line=$(push_run "$out" 5)
	echo "$line"
	n=$(check_received "$out" 1)
	expect_eq "500 answers" 3 "$(grep -c '"status": 500' "$RECV_DIR/requests.log")"
	grep -q "push: $n of $n profiles sent, 3 retries, 0 spooled" <<<"$line" || fail "push summary: $line"
	check_bodies
}

# Nobody listens for a whole run: its profiles go to the spool (retried first, then kept at exit);
# the next run, with the backend up, sends them before its own.
t_push_refused_spooled_sent_next_run() {
	local out=$E2E_TMP/out n line written
	start_receiver "$E2E_TMP/recv" --refuse
	line=$(push_run "$out" 5)
	echo "$line"
	written=$(find "$out" -maxdepth 1 -name '*.cpu.pb.gz' | wc -l)
	expect_eq "spooled files after the refused run" "$written" "$(spool_files "$out")"
	grep -q "push: 0 of $written profiles sent, [0-9]* retries, $written spooled, .* 0 failed, 0 dropped" <<<"$line" ||
		fail "push summary: $line"

	recv_cmd listen
	line=$(push_run "$out" 5)
	echo "$line"
	grep -q "$written sent from the spool, 0 aged out, 0 failed, 0 dropped" <<<"$line" || fail "push summary: $line"
	expect_eq "spool files after the second run" 0 "$(spool_files "$out")"
	n=$(check_received "$out" 0)
	echo "ok: all $n profiles of both runs arrived once"
	check_bodies
}

# The first two requests are accepted and never answered: at exit, still in flight, they go to
# the spool; the next run sends them.
t_push_stalled_spooled_sent_next_run() {
	local out=$E2E_TMP/out line
	start_receiver "$E2E_TMP/recv"
	recv_cmd stall 2
	line=$(push_run "$out" 5)
	echo "$line"
	expect_eq "spooled files after the stalled run" 2 "$(spool_files "$out")"
	grep -q "push: [0-9]* of [0-9]* profiles sent, 0 retries, 2 spooled, .* 0 failed, 0 dropped" <<<"$line" ||
		fail "push summary: $line"
	line=$(push_run "$out" 3)
	echo "$line"
	grep -q "2 sent from the spool, 0 aged out, 0 failed, 0 dropped" <<<"$line" || fail "push summary: $line"
	expect_eq "spool files after the second run" 0 "$(spool_files "$out")"
	check_received "$out" 0 >/dev/null
	echo "ok: every profile of both runs arrived once"
	check_bodies
}

t_push_needs_interval() {
	local err
	err=$("$PROF" --cpu --push http://127.0.0.1:9 -d 1 -- "$CT" 1 2>&1 >/dev/null)
	expect_eq "exit status" 2 "$?"
	expect_eq "error lines" 1 "$(wc -l <<<"$err")"
	grep -q -- '--push needs --interval' <<<"$err" || fail "message: $err"
}

# The other two protocols, through the CLI: the same profiles, the same labels.
t_push_protocols_ingest_parca() {
	local proto endpoint n
	for proto in pyroscope-ingest parca; do
		endpoint=${proto#pyroscope-}
		start_receiver "$E2E_TMP/recv-$endpoint"
		push_run "$E2E_TMP/out-$endpoint" 3 --push-protocol "$proto"
		n=$(ENDPOINT=$endpoint check_received "$E2E_TMP/out-$endpoint" 1)
		[ "$n" -ge 2 ] || fail "$proto: expected at least 2 profiles, got $n"
		check_bodies
		echo "ok: $proto: $n profiles"
	done
}

# `-- CMD` gets none of the --push credentials from our environment (and every other variable).
t_push_secrets_not_in_cmd_env() {
	local rc=0
	BPFTRACE_PROF_PUSH_TOKEN=tok-e2e-secret BPFTRACE_PROF_PUSH_USER=alice-e2e \
		BPFTRACE_PROF_PUSH_PASSWORD=pw-e2e-secret BPFTRACE_PROF_PUSH_TENANT=tenant-e2e \
		E2E_KEEP_ME=kept "$PROF" --cpu -d 5 --top 0 -o "$E2E_TMP/out.pb.gz" \
		-- sh -c "env >'$E2E_TMP/env.txt'" >/dev/null 2>"$E2E_TMP/log" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$E2E_TMP/log"; fail "exit status $rc"; }
	grep -q '^E2E_KEEP_ME=kept$' "$E2E_TMP/env.txt" || fail "CMD did not get our environment"
	grep -q '^PATH=' "$E2E_TMP/env.txt" || fail "CMD has no PATH"
	if grep -E 'BPFTRACE_PROF_PUSH|e2e-secret|alice-e2e|tenant-e2e' "$E2E_TMP/env.txt"; then
		fail "CMD's environment holds push credentials"
	fi
	echo "ok: CMD's environment has ours without BPFTRACE_PROF_PUSH_*"
}

# Our own /proc/PID/environ (readable by root, and what a copy of /proc/self/environ would hold)
# no longer shows the token once --push has read it; the profiles still carry it to the backend.
t_push_token_not_in_our_environ() {
	local out=$E2E_TMP/out
	start_receiver "$E2E_TMP/recv"
	BPFTRACE_PROF_PUSH_TOKEN=tok-e2e-environ environ_at_first_profile "$out" \
		--push "http://127.0.0.1:$RECV_PORT"
	if grep -a 'tok-e2e-environ' "$out.environ"; then fail "the token is in /proc/PID/environ"; fi
	grep -q '"authorization": "Bearer tok-e2e-environ"' "$RECV_DIR/000001.json" ||
		fail "the token did not reach the backend"
	echo "ok: the token reaches the backend and is gone from our /proc/PID/environ"
}

# user:password@ in the --push URL: refused before anything runs, in one line that says where
# credentials go and does not repeat them.
t_push_url_credentials_refused() {
	local err rc=0
	err=$("$PROF" --cpu --interval 2 --output-dir "$E2E_TMP/out" -d 3 \
		--push "https://alice:tok-e2e-secret@127.0.0.1:9/" -- "$CT" 3 2>&1 >/dev/null) || rc=$?
	expect_eq "exit status" 2 "$rc"
	expect_eq "error lines" 1 "$(wc -l <<<"$err")"
	grep -q 'BPFTRACE_PROF_PUSH_TOKEN' <<<"$err" || fail "message: $err"
	grep -q -- '--push-auth-file' <<<"$err" || fail "message: $err"
	if grep -q 'tok-e2e-secret' <<<"$err"; then fail "the message repeats the token: $err"; fi
	[ -z "$(find "$E2E_TMP/out" -name '*.pb.gz' 2>/dev/null)" ] || fail "profiles written"
	echo "ok: refused: $err"
}

# A 3,000-byte bearer token reaches the backend whole (a 2 KiB header buffer used to cut it), and
# appears in no output: not in the profiles written, not on stderr.
t_push_long_token_whole() {
	local out=$E2E_TMP/out tok f n=0
	tok=$(head -c 2250 /dev/urandom | base64 -w0 | tr '+/' '-_' | head -c 3000)
	expect_eq "token length" 3000 "${#tok}"
	start_receiver "$E2E_TMP/recv"
	BPFTRACE_PROF_PUSH_TOKEN=$tok push_run "$out" 5
	for f in "$RECV_DIR"/*.json; do
		python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))
sys.exit(m["authorization"] != "Bearer " + sys.argv[2])' "$f" "$tok" ||
			fail "$f: the Authorization header is not the whole token"
		n=$((n + 1))
	done
	[ "$n" -ge 2 ] || fail "expected at least 2 profiles, got $n"
	echo "ok: $n profiles, each with the whole 3000-byte token"
	for f in "$out"/*.pb.gz; do
		if zcat "$f" | grep -qaF "${tok:0:64}"; then fail "the token is in $f"; fi
	done
	if grep -qF "${tok:0:64}" "$out.log"; then fail "the token is on stderr"; fi
	echo "ok: the token is in no profile and not on stderr"
}

# A backend answering 401 for everything: one error line naming the host and what to check, and
# every profile kept in the spool (not dropped as other 4xx are), counted.
t_push_401_said_once_spooled() {
	local out=$E2E_TMP/out line written
	start_receiver "$E2E_TMP/recv"
	recv_cmd fail 401 100000
	BPFTRACE_PROF_PUSH_TOKEN=wrong-token push_run "$out" 7 >/dev/null
	expect_one_line "401 error lines" "refuses our credentials" "$out.log"
	grep 'refuses our credentials' "$out.log" | grep -q "127.0.0.1:$RECV_PORT .*BPFTRACE_PROF_PUSH_TOKEN.*kept in $out/spool" ||
		fail "the error line: $(grep 'refuses' "$out.log")"
	if grep -q 'wrong-token' "$out.log"; then fail "the token is on stderr"; fi
	written=$(find "$out" -maxdepth 1 -name '*.cpu.pb.gz' | wc -l)
	[ "$written" -ge 3 ] || fail "expected at least 3 profiles, got $written"
	expect_eq "spooled files" "$written" "$(spool_files "$out")"
	line=$(grep '^bpftrace-prof: .*push: ' "$out.log" | tail -1)
	grep -q "push: 0 of $written profiles sent, 0 retries, $written spooled, 0 sent from the spool, 0 aged out, 0 failed, 0 dropped, [1-9][0-9]* refused for credentials (401/403); 0 bytes accepted" <<<"$line" ||
		fail "push summary: $line"
	# The last profile counts the refusals of the ones before it.
	go tool pprof -comments "$(find "$out" -maxdepth 1 -name '*.cpu.pb.gz' | sort | tail -1)" 2>/dev/null |
		grep -q '^push_auth_failed=[1-9]' || fail "no push_auth_failed in the last profile's comments"
	echo "ok: one error line, $written profiles spooled, push_auth_failed counted"
}

# Every file renamed into the spool is followed by an fsync of the spool directory (the rename is
# durable only then), and the file itself was synced before it.
t_push_spool_dir_synced() {
	local out=$E2E_TMP/out rc=0 renames
	start_receiver "$E2E_TMP/recv" --refuse
	mkdir -p "$out"
	strace -qq -y -e trace=renameat2,fsync,fdatasync -o "$E2E_TMP/strace.log" \
		"$PROF" --cpu --interval 2 --output-dir "$out" -d 5 --top 0 \
		--push "http://127.0.0.1:$RECV_PORT" -- "$CT" 30 >/dev/null 2>"$out.log" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$out.log" >&2; fail "exit status $rc"; }
	renames=$(grep -c '^renameat2(.*\.spool", RENAME_NOREPLACE) = 0' "$E2E_TMP/strace.log")
	[ "$renames" -ge 1 ] || { head -20 "$E2E_TMP/strace.log"; fail "no rename into the spool traced"; }
	expect_eq "spool files" "$renames" "$(spool_files "$out")"
	# In order: fdatasync(the temporary), its rename, fsync(the spool directory).
	python3 - "$E2E_TMP/strace.log" "$out/spool" <<'PY' || fail "a spooled file not synced in order"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
spool = sys.argv[2]
n = 0
for i, l in enumerate(lines):
    if not re.match(r'renameat2\(.*\.spool", RENAME_NOREPLACE\) = 0', l):
        continue
    assert re.match(r'fdatasync\(\d+<%s/\.tmp-' % re.escape(spool), lines[i - 1]), lines[i - 1]
    assert re.match(r'fsync\(\d+<%s>\) = 0' % re.escape(spool), lines[i + 1]), lines[i + 1]
    n += 1
print("ok: %d renames, each synced" % n)
PY
}

# A --push-auth-file that cannot be opened: one line, status 2, nothing crashes on the way out
# (the run stops before its ring buffer opens; CMD, started by then, is ended).
t_push_auth_file_missing_exit_2() {
	local rc=0
	"$PROF" --cpu --interval 1 --output-dir "$E2E_TMP/out" --push http://127.0.0.1:1 \
		--push-auth-file "$E2E_TMP/none" -- /bin/true 2>"$E2E_TMP/err" || rc=$?
	cat "$E2E_TMP/err"
	expect_eq "exit status" 2 "$rc"
	expect_eq "lines" 1 "$(wc -l <"$E2E_TMP/err")"
}
