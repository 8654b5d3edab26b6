# Holds (wide scopes: exec, loader-startup and exit holds stop processes of the scope for us)
# never outlive the profiler: frozen (SIGSTOP) while a loop of short processes runs in the cgroup,
# it is seen holding one (state T) before it is killed or told to stop, so these tests cannot
# pass with holds off.

# The pids of CGROUP's processes that are stopped (state T).
stopped_in() { # CGROUP
	local p s
	while read -r p; do
		s=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
		[ "$s" = T ] && echo "$p"
	done <"$1/cgroup.procs"
}

# Kill every process of CGROUP (stopped ones too) and remove it.
drop_cgroup() { # CGROUP
	local p _
	for _ in 1 2 3; do
		while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$1/cgroup.procs"
		sleep 0.2
	done
	rmdir "$1" 2>/dev/null
}

# A fresh cgroup (CG) with a loop of short processes under --cgroup --cpu (PROF_PID), the
# profiler frozen until a process of the scope is held: HELD.
hold_one() {
	local _
	CG=$(make_cgroup)
	# --hold-rate 0: the loop outruns the default budget, and a hold must come while frozen.
	start_profiler "$E2E_TMP/prof.log" --cgroup "$CG" --cpu -o "$E2E_TMP/p.pb.gz" --top 0 \
		--hold-rate 0
	# setsid: no terminal (a process with one is never held).
	bg_in_cgroup "$CG" setsid sh -c 'while :; do build/targets/short_lived >/dev/null; done'
	sleep 0.5
	kill -STOP "$PROF_PID"
	HELD=
	for _ in $(seq 250); do
		HELD=$(stopped_in "$CG" | head -1)
		[ -n "$HELD" ] && break
		sleep 0.02
	done
	if [ -z "$HELD" ]; then
		kill -KILL "$PROF_PID"
		drop_cgroup "$CG"
		fail "no process of the scope held (state T) with the profiler frozen"
	fi
}

# SIGKILL (or the OOM killer, a crash): the watchdog resumes what we held, within 2 s.
t_holds_sigkill_resumes_held_processes() {
	local left
	hold_one
	kill -KILL "$PROF_PID"
	wait "$PROF_PID" 2>/dev/null
	sleep 2
	left=$(stopped_in "$CG" | xargs)
	drop_cgroup "$CG"
	[ -z "$left" ] || fail "still stopped 2 s after the profiler was killed (held: $HELD): $left"
	grep -q "the profiler ended without resuming [0-9]* held process" "$E2E_TMP/prof.log" ||
		fail "the watchdog did not say what it resumed: $(tail -3 "$E2E_TMP/prof.log")"
}

# A dropped ssh session (SIGHUP) or SIGQUIT ends a run as SIGTERM does: profile written, status
# 0, nobody left stopped.
t_holds_sighup_sigquit_end_like_sigterm() {
	local sig rc left
	for sig in HUP QUIT; do
		rm -f "$E2E_TMP/p.pb.gz"
		hold_one
		kill -"$sig" "$PROF_PID"
		kill -CONT "$PROF_PID"
		wait "$PROF_PID"
		rc=$?
		left=$(stopped_in "$CG" | xargs)
		drop_cgroup "$CG"
		expect_eq "exit status after SIG$sig" 0 "$rc"
		[ -z "$left" ] || fail "still stopped after SIG$sig ended the run: $left"
		grep -q "stopping on signal" "$E2E_TMP/prof.log" || fail "SIG$sig: no stop message"
		go tool pprof -symbolize=none -raw "$E2E_TMP/p.pb.gz" >/dev/null 2>&1 ||
			fail "SIG$sig: no readable profile written"
	done
}

# One tenant's loop cannot spend everyone's holds: past --hold-rate a second, its processes run
# unheld, counted.
t_holds_rate_limited_per_cgroup() {
	local cg f=$E2E_TMP/rate.pb.gz n
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --cpu -o "$f" --top 0 --hold-rate 3
	# shellcheck disable=SC2016 # the loop is the child shell's
	bg_in_cgroup "$cg" setsid sh -c 'for i in $(seq 60); do build/targets/short_lived >/dev/null; done'
	wait $!
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $?: $(tail -5 "$E2E_TMP/prof.log")"
	drop_cgroup "$cg"
	n=$(pprof_counter_value "$f" hold_rate_limited)
	# 60 processes (each exit may meet the hook twice: _exit's aliases) in a few seconds,
	# at most 3 holds a second.
	expect_range "hold_rate_limited (60 processes, 3 holds a second)" 1 1000 "${n:-0}"
	"$PROF" --hold-rate 5 -p $$ -d 1 >/dev/null 2>"$E2E_TMP/usage"
	expect_eq "--hold-rate without a wide scope: exit status" 2 $?
}

# A run that fails after the scope's scan opened the hold gate (here CPU sampling refused: the
# kernel's sample-rate limit lowered under --cpu's rate) still drains and resumes what it held
# (it left them stopped: no drain on that way out).
t_holds_failed_start_resumes_held_processes() {
	local cg was i rc left rate=/proc/sys/kernel/perf_event_max_sample_rate
	cg=$(make_cgroup)
	bg_in_cgroup "$cg" setsid sh -c 'while :; do build/targets/short_lived >/dev/null; done'
	sleep 0.5
	was=$(cat "$rate")
	# shellcheck disable=SC2064 # the value read now
	trap "echo $was >$rate; kill \$(jobs -p) 2>/dev/null" EXIT
	echo 1000 >"$rate" || fail "cannot lower the sample-rate limit"
	for i in 1 2 3; do
		timeout -k 5 30 "$PROF" --cgroup "$cg" --cpu=5000 -o "$E2E_TMP/f.pb.gz" --top 0 \
			>/dev/null 2>"$E2E_TMP/err.$i"
		rc=$?
		expect_eq "exit status (sampling refused), run $i" 1 "$rc"
	done
	echo "$was" >"$rate"
	grep -q "starting CPU sampling failed" "$E2E_TMP/err.1" || fail "not the failure meant: $(cat "$E2E_TMP/err.1")"
	sleep 0.5
	left=$(stopped_in "$cg" | xargs)
	drop_cgroup "$cg"
	[ -z "$left" ] || fail "still stopped after runs that failed at start: $left"
}
