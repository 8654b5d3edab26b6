# Leak triage (issue 29): in use by age (the `age` label, --min-age), size filters (-z/-Z), the
# summary's list of what stayed in use, and the leak check of -- CMD (--fail-on-leak, the leak
# rules).  Not in the --unwind fp pass: nothing here depends on how stacks are walked.
# In use by age (tests/targets/aging.c): keep_old's 1,000 bytes are 1.5 s old at exit, keep_young's
# 2,000 new, churn's blocks freed.  Every in-use sample carries its age bucket (the `age` label:
# -tagfocus selects it); --min-age 1 leaves keep_young out of inuse_* and keeps its allocation;
# -z / -Z leave out blocks by size.
age_flat() { # FILE AGE FUNC: FUNC's flat inuse_space in the samples labelled age=AGE
	go tool pprof -symbolize=none -tagfocus="age=$2" -top -nodefraction=0 -unit=B \
		-sample_index=inuse_space "$1" 2>/dev/null |
		awk -v fn="$3" '$6 == fn { v = $1; sub(/B$/, "", v) } END { print v + 0 }'
}

t_leaks_min_age_and_age_label() {
	local f=$E2E_TMP/age.pb.gz m=$E2E_TMP/minage.pb.gz
	"$PROF" --heap -o "$f" --top 0 -- build/targets/aging || fail "profiler exit status $?"
	expect_eq "keep_old inuse_space" 1000 "$(pprof_flat "$f" inuse_space keep_old)"
	expect_eq "keep_young inuse_space" 2000 "$(pprof_flat "$f" inuse_space keep_young)"
	expect_eq "keep_old inuse_space aged 0-10s" 1000 "$(age_flat "$f" 0-10s keep_old)"
	expect_eq "keep_old inuse_space aged 10s-1m" 0 "$(age_flat "$f" 10s-1m keep_old)"
	# the peak: spike's 100 blocks held at once with keep_old's, before keep_young's
	expect_eq "spike peak_space" 1000000 "$(pprof_flat "$f" peak_space spike)"
	expect_eq "keep_old peak_space" 1000 "$(pprof_flat "$f" peak_space keep_old)"
	expect_eq "keep_young peak_space (allocated after the peak)" 0 "$(pprof_flat "$f" peak_space keep_young)"
	expect_eq "spike inuse_space" 0 "$(pprof_flat "$f" inuse_space spike)"
	# the summary's list of what stayed in use (stderr): keep_old alone, 1.5 s old
	"$PROF" --heap --min-age 1 -o "$m" -- build/targets/aging 2>"$E2E_TMP/minage.err" ||
		fail "profiler exit status $?"
	sed -n '/^in use for at least/,/^bpftrace-prof: wrote/p' "$E2E_TMP/minage.err" >"$E2E_TMP/old"
	cat "$E2E_TMP/old"
	grep -q '^in use for at least 1.0s: ' "$E2E_TMP/old" || fail "no list of old blocks"
	grep -Eq '^ +1000 bytes +1 +1\.[0-9]s +[0-9]+ +keep_old < main < ' "$E2E_TMP/old" ||
		fail "keep_old not listed with its bytes, block and age"
	grep -q 'keep_young' "$E2E_TMP/old" && fail "keep_young (new) listed as old"
	expect_eq "keep_old inuse_space (--min-age 1)" 1000 "$(pprof_flat "$m" inuse_space keep_old)"
	expect_eq "keep_young inuse_space (--min-age 1)" 0 "$(pprof_flat "$m" inuse_space keep_young)"
	expect_eq "keep_young alloc_space (--min-age 1)" 2000 "$(pprof_flat "$m" alloc_space keep_young)"
	expect_eq "churn alloc_objects" 100 "$(pprof_flat "$m" alloc_objects churn)"
	go tool pprof -raw "$m" 2>/dev/null | grep -q '^Comment: in use: blocks at least 1 s old (--min-age)' ||
		fail "no --min-age comment"
	# memleak's -z / -Z: keep_old's 1,000 bytes only; the 2,000 and the 64s are left out, counted
	"$PROF" --heap -z 1000 -Z 1999 -o "$m" --top 0 -- build/targets/aging || fail "profiler exit status $?"
	expect_eq "keep_old inuse_space (-z 1000 -Z 1999)" 1000 "$(pprof_flat "$m" inuse_space keep_old)"
	expect_eq "keep_young alloc_space (-z 1000 -Z 1999)" 0 "$(pprof_flat "$m" alloc_space keep_young)"
	expect_eq "churn alloc_objects (-z 1000 -Z 1999)" 0 "$(pprof_flat "$m" alloc_objects churn)"
	expect_range "size_filtered (keep_young, churn's 100, libc's own)" 101 10000 \
		"$(pprof_counter_value "$m" size_filtered)"
}

# Sampled (--sample-bytes 64): blocks of 1,000 bytes and more are all but certainly sampled, at a
# weight within 2e-7 of one, so ages, --min-age, the peak and the list of old blocks come out as
# exact mode's (churn's 64-byte blocks, sampled at random, are left out of the checks).
t_leaks_sampled_age_peak_and_list() {
	local f=$E2E_TMP/sampled_age.pb.gz
	"$PROF" --heap --sample-bytes 64 --min-age 1 -o "$f" -- build/targets/aging 2>"$E2E_TMP/sampled.err" ||
		fail "profiler exit status $?"
	expect_eq "keep_old inuse_space" 1000 "$(pprof_flat "$f" inuse_space keep_old)"
	expect_eq "keep_old inuse_space aged 0-10s" 1000 "$(age_flat "$f" 0-10s keep_old)"
	expect_eq "keep_young inuse_space (--min-age 1)" 0 "$(pprof_flat "$f" inuse_space keep_young)"
	expect_eq "keep_young alloc_space" 2000 "$(pprof_flat "$f" alloc_space keep_young)"
	expect_eq "spike peak_space" 1000000 "$(pprof_flat "$f" peak_space spike)"
	expect_eq "keep_old peak_space" 1000 "$(pprof_flat "$f" peak_space keep_old)"
	grep -Eq '^ +1000 bytes +1 +1\.[0-9]s +[0-9]+ +keep_old < main < ' "$E2E_TMP/sampled.err" ||
		fail "keep_old not listed: $(sed -n '/^in use for at least/,$p' "$E2E_TMP/sampled.err")"
}

# The leak check of -- CMD: at exit, every block never freed by stack (not the built-in leak
# rules' stacks: the C library's caches, ld.so, the interpreter's own heap); --fail-on-leak
# BYTES exits 3 past BYTES, after our failures and CMD's own status.  A clean C program,
# python3 -c pass and the sqlite3 shell pass with the defaults; heap_target's 4,204,491 bytes
# kept (tests/targets/heap_target.cc) are listed, leak_pages first; aging's 3,000 gate.
t_leaks_fail_on_leak_and_rules() {
	local f=$E2E_TMP/leak.pb.gz sup=$E2E_TMP/sup rc
	for cmd in build/targets/clean_exit "/usr/bin/python3.11 -c pass"; do
		# shellcheck disable=SC2086 # the command's words
		"$PROF" --heap --fail-on-leak 0 -o "$f" -- $cmd >/dev/null 2>"$E2E_TMP/leak.err"
		rc=$?
		sed -n '/^never freed/,/^bpftrace-prof: wrote/p' "$E2E_TMP/leak.err"
		expect_eq "exit status of --fail-on-leak 0 -- $cmd" 0 "$rc"
		grep -q '^never freed: none$' "$E2E_TMP/leak.err" || fail "$cmd: leaks listed"
	done
	"$PROF" --heap --fail-on-leak 0 -o "$f" -- sqlite3 :memory: 'select 1' >/dev/null 2>&1
	expect_eq "exit status of --fail-on-leak 0 -- sqlite3" 0 "$?"
	"$PROF" --heap -o "$f" -- build/targets/heap_target >/dev/null 2>"$E2E_TMP/leak.err" ||
		fail "profiler exit status $?"
	grep -Eq '^never freed: 4\.01 MiB \(4204491 bytes\) in 1094 blocks, 7 stacks' "$E2E_TMP/leak.err" ||
		fail "heap_target's leaks: $(grep '^never freed' "$E2E_TMP/leak.err")"
	grep -Eq '^ +3\.91 MiB +1000 +[0-9.]+s +[0-9]+ +leak_pages < main < ' "$E2E_TMP/leak.err" ||
		fail "leak_pages not first"
	# tests/targets/aging.c keeps 3,000 bytes
	"$PROF" --heap --fail-on-leak 3000 -q -o "$f" -- build/targets/aging
	expect_eq "exit status at the bytes kept" 0 "$?"
	"$PROF" --heap --fail-on-leak 2999 -q -o "$f" -- build/targets/aging
	expect_eq "exit status one byte under (-q: counted, not printed)" 3 "$?"
	# CMD's own status first
	"$PROF" --heap --fail-on-leak 0 -q -o "$f" -- sh -c 'build/targets/aging; exit 5'
	expect_eq "exit status of a failing CMD that leaks" 5 "$?"
	# rules of the user's: keep_old's and keep_young's stacks are no leaks
	printf '# ours\nleak:keep_old\n  leaf:keep_y*  \n\n' >"$sup"
	"$PROF" --heap --fail-on-leak 0 --leak-suppressions "$sup" -o "$f" -- build/targets/aging 2>"$E2E_TMP/leak.err" ||
		fail "profiler exit status $? with the user's rules"
	grep -q '^never freed: none$' "$E2E_TMP/leak.err" || fail "with the user's rules: $(grep '^never freed' "$E2E_TMP/leak.err")"
	printf 'leak_pages\n' >"$sup"
	"$PROF" --heap --leak-suppressions "$sup" -o "$f" -- /bin/true >/dev/null 2>"$E2E_TMP/bad.err"
	expect_eq "exit status of a bad rule" 2 "$?"
	expect_eq "lines on stderr" 1 "$(wc -l <"$E2E_TMP/bad.err")"
	grep -q "line 1: not leak:PATTERN or leaf:PATTERN" "$E2E_TMP/bad.err" || fail "why: $(cat "$E2E_TMP/bad.err")"
}

# Continuous mode's growth list (tests/targets/growing.c): leak_step keeps 400,000 bytes/s and
# ranks first, monotonic; cache_fill's sawtooth never grows at every end.  With -v the list comes
# at every interval's end, and always at the last.  Ages across intervals: 11 s of leak_step's
# blocks, born every 250 ms, are in the last interval's profile (written as the target exits,
# a few ms after its 44th block) by the age they reached: the first four past 10 s (10s-1m).
t_leaks_growth_over_intervals() {
	local d=$E2E_TMP/growth row rate last
	"$PROF" -v --heap --interval 1 --output-dir "$d" --growth-intervals 3 -- build/targets/growing 11 \
		2>"$E2E_TMP/growth.err" || fail "profiler exit status $?"
	grep -A4 '^grew over\|^growth:' "$E2E_TMP/growth.err" | tail -12
	expect_range "growth lists (one per interval with -v)" 10 13 \
		"$(grep -c '^grew over the last\|^growth: one interval so far' "$E2E_TMP/growth.err")"
	tail -n 30 "$E2E_TMP/growth.err" | grep -q '^grew over the last 3 intervals (3\.[0-9]s): ' ||
		fail "no list over the last 3 intervals at the end"
	row=$(tail -n 30 "$E2E_TMP/growth.err" | sed -n '/^grew over the last 3/{n;n;p}' | tail -1)
	echo "first row: $row"
	case $row in *' yes '*' leak_step < main < '*) ;; *) fail "leak_step not first and monotonic: $row" ;; esac
	rate=$(echo "$row" | awk '{ v = $3; u = $4; sub(/\/s$/, "", u); m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : 1; printf "%d", v * m }')
	expect_range "leak_step's bytes per second" 300000 500000 "$rate"
	if grep -q 'cache_fill' "$E2E_TMP/growth.err"; then
		grep 'cache_fill' "$E2E_TMP/growth.err" | grep -qv ' no ' && fail "cache_fill listed as monotonic"
	fi
	last=$(find "$d" -name '*.heap.pb.gz' | sort | tail -1)
	# DWARF is indexed from the first profile on, which waits for it: lines from the first.
	go tool pprof -symbolize=none -raw "$(find "$d" -name '*.heap.pb.gz' | sort | head -1)" 2>/dev/null |
		grep -q " leak_step .*tests/targets/growing\.c:[0-9]" || fail "first interval: leak_step has no file:line"
	expect_eq "leak_step inuse_space (last interval)" 4400000 "$(pprof_flat "$last" inuse_space leak_step)"
	expect_eq "leak_step inuse_space aged 10s-1m" 400000 "$(age_flat "$last" 10s-1m leak_step)"
	expect_eq "leak_step inuse_space aged 0-10s" 4000000 "$(age_flat "$last" 0-10s leak_step)"
	"$PROF" --heap --growth-intervals 3 -o "$E2E_TMP/g.pb.gz" -- /bin/true 2>"$E2E_TMP/bad.err"
	expect_eq "exit status of --growth-intervals without --interval" 2 "$?"
	expect_eq "lines on stderr" 1 "$(wc -l <"$E2E_TMP/bad.err")"
}
