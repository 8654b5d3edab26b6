# Python frames read from the interpreter in BPF (issue 15), end to end on every CPython we walk
# that is installed: pyenv's 3.8–3.13 under $(pyenv root)/versions and Debian's
# /usr/bin/python3.11 (static libpython, .dynsym only).  Each test runs every interpreter and
# says which ran; under CI=true a missing one fails.  Read back with go tool pprof only.
#
# The contract: a Python frame is a Location at address 0 with no mapping and one Line whose
# Function is co_qualname (3.11+) or co_name, with co_filename as its file and the executed line;
# it replaces the `_PyEval_EvalFrameDefault` frame that runs it, native frames around it stay;
# cpu, offcpu and heap samples with Python frames carry gil=held|released (and thread_name once
# threading names the thread); py_read_fail counts lost reads.

PY_CPU=$PWD/tests/targets/py_cpu.py
PY_HEAP=$PWD/tests/targets/py_heap.py
PY_THREADS=$PWD/tests/targets/py_threads.py
PY_LATE=$PWD/tests/targets/py_late_threads.py
PY_CALLBACK=$PWD/tests/targets/py_callback.py
# The 3:1 runs sample at 997 Hz for 1 s (PY_SECONDS): about 1000 samples keep the ratio well
# inside its bounds [1.8, 5] on a loaded machine.  hot_b's share of them is 1/4, binomial at worst
# (periodic samples of random-length rounds vary less): sd sqrt(0.1875/1000) = 0.014, and the
# bounds are shares 1/6 and 1/2.8, 6 and 8 sd away; 5 and 6.5 sd at 700 samples (30 % of the CPU
# lost to other load).  A prime rate, as 299 was.
PY_HZ=997
PY_SECONDS=1

py_root() {
	if command -v pyenv >/dev/null 2>&1; then pyenv root; else echo "${PYENV_ROOT:-/root/.pyenv}"; fi
}

# Sets PY_NAMES and PY_BINS (same order): every interpreter of the matrix that is installed.
py_list() {
	local root m p found
	root=$(py_root)
	PY_NAMES=() PY_BINS=()
	for m in 8 9 10 11 12 13; do
		found=""
		for p in "$root"/versions/3."$m".*/bin/python3."$m"; do
			[ -x "$p" ] && found=$p
		done
		if [ -z "$found" ]; then
			[ "${CI:-}" = true ] && fail "pyenv 3.$m is not installed under $root/versions (CI=true)"
			echo "note: no pyenv 3.$m under $root/versions: not run"
			continue
		fi
		PY_NAMES+=("pyenv-3.$m")
		PY_BINS+=("$found")
	done
	if [ -x /usr/bin/python3.11 ]; then
		PY_NAMES+=(debian-3.11)
		PY_BINS+=(/usr/bin/python3.11)
	else
		[ "${CI:-}" = true ] && fail "/usr/bin/python3.11 is missing (CI=true; apt-get install python3.11)"
		echo "note: no /usr/bin/python3.11: not run"
	fi
	[ ${#PY_BINS[@]} -gt 0 ] || skip "no CPython 3.8-3.13 installed"
}

# py_all_script SCRIPT HOW ARGS...: writes SCRIPT, a sh script that runs every interpreter of
# py_list on ARGS (the interpreter's own arguments), HOW "together" (all at once) or "in_turn"
# (each alone on the CPUs, one after the other), and exits 1 when any failed.  One profiler run of
# SCRIPT covers the whole matrix: a run's start (its BPF loaded, about 1.5 s) and, with --heap,
# its end (the probes detached: a grace period per link) come once, not
# once per interpreter.  Interpreter I's stdout is in $E2E_TMP/NAME.out, its stderr in NAME.err,
# its pid in NAME.pid: py_slice splits the profile by it.
py_all_script() { # SCRIPT HOW ARGS...
	local script=$1 how=$2 i a args="" dir=$E2E_TMP
	shift 2
	for a in "$@"; do args="$args '$a'"; done
	{
		echo 'st=0'
		for i in "${!PY_BINS[@]}"; do
			echo "'${PY_BINS[$i]}'$args >'$dir/${PY_NAMES[$i]}.out' 2>'$dir/${PY_NAMES[$i]}.err' & p$i=\$!"
			echo "echo \$p$i >'$dir/${PY_NAMES[$i]}.pid'"
			[ "$how" = in_turn ] && echo "wait \$p$i || st=1"
		done
		if [ "$how" = together ]; then
			for i in "${!PY_BINS[@]}"; do echo "wait \$p$i || st=1"; done
		fi
		echo "exit \$st"
	} >"$script" || fail "cannot write $script"
}

# py_slice FILE I OUT: the samples of interpreter I's process (py_all_script) in FILE, as a
# profile of their own with the run's comments (its counters).
py_slice() { # FILE I OUT
	local pid
	pid=$(cat "$E2E_TMP/${PY_NAMES[$2]}.pid") || fail "${PY_NAMES[$2]}: no pid file"
	go tool pprof -symbolize=none -tagfocus=pid="$pid" -proto -output "$3" "$1" 2>/dev/null || fail "cannot slice $1 by pid $pid"
}

# expect_py_reads_of SAMPLES WHO: one interpreter of a py_all_script run (SAMPLES: py_samples
# of its slice) read Python frames.  py_read_fail is counted for the whole run, so the caller
# holds it to expect_py_reads' bound against the whole run's py_frames: held to one
# interpreter's frames instead, the few reads a run meets at a fork's copy-on-write or a
# call's edge, from eight interpreters, failed the bound in one run of seven here.
expect_py_reads_of() { # SAMPLES WHO
	local frames
	frames=$(awk -F'\t' '{ split($1, v, " "); if ($4 != "") s += v[1] * split($4, p, ";") }
		END { printf "%.0f\n", s }' "$1")
	[ "$frames" -gt 0 ] || fail "$2: no Python frames read"
}

# py_all_run FILE HOW PROF_OPTIONS... -- ARGS...: one profiler run (PROF_OPTIONS, -o FILE) of
# py_all_script HOW ARGS; fails unless it and every interpreter exited 0.
py_all_run() { # FILE HOW PROF_OPTIONS... -- ARGS...
	local f=$1 how=$2 opts=() st
	shift 2
	while [ "$1" != -- ]; do opts+=("$1") && shift; done
	shift
	py_all_script "$E2E_TMP/all.sh" "$how" "$@"
	"$PROF" "${opts[@]}" -o "$f" -- sh "$E2E_TMP/all.sh" >"$f.out" 2>"$f.err"
	st=$?
	[ "$st" -eq 0 ] || { cat "$f.err" "$E2E_TMP"/*.err; fail "exit status $st"; }
}

# py_each_slice FILE NAME: for interpreter I of a py_all_run, its profile from FILE (py_slice)
# as $E2E_TMP/NAME.<interpreter>.pb.gz and that profile's py_samples in the same name .samples,
# checked by expect_py_reads_of (the caller checks the run's expect_py_reads).
py_each_slice() { # FILE I NAME
	local g=$E2E_TMP/$3.${PY_NAMES[$2]}.pb.gz
	py_slice "$1" "$2" "$g"
	py_samples "$g" >"$g.samples"
	expect_py_reads_of "$g.samples" "${PY_NAMES[$2]}"
}

# Line number of the first line of SCRIPT matching the extended regex RE.
line_of() { # SCRIPT RE
	local n
	n=$(grep -nE "$2" "$1" | head -1 | cut -d: -f1)
	[ -n "$n" ] || fail "no line matching '$2' in $1"
	echo "$n"
}

# One line per sample of a pprof file, from `go tool pprof -raw`:
#   VALUES<TAB>LABELS<TAB>STACK<TAB>PYSTACK<TAB>FILES
# VALUES the sample's values (space separated), LABELS "k=v " for every label, STACK the function
# names leaf first (";"), PYSTACK the Python frames only (address 0, no mapping) as
# name@file:line, leaf first, FILES the base name of each STACK entry's mapping ("-": none).  Locations that break the contract's shape (a mapping on an address
# 0 location, more than one Line on it) show as BAD@… in PYSTACK.
py_samples() { # FILE
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { sec = "s"; getline; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { sec = "m"; next }
		sec == "m" && $1 ~ /^[0-9]+:$/ { id = $1; sub(/:$/, "", id); fn = $3; sub(/.*\//, "", fn); mfile[id] = fn; next }
		sec == "s" && /^ +[0-9]+( +[0-9]+)*: / {
			n++; i = index($0, ":"); vals[n] = substr($0, 1, i - 1); locs[n] = substr($0, i + 1)
			gsub(/^ +| +$/, "", vals[n]); gsub(/ +/, " ", vals[n]); labels[n] = ""
			next
		}
		sec == "s" && /:\[/ {
			s = $0
			while (match(s, /[A-Za-z_][A-Za-z0-9_.]*:\[[^]]*\]/)) {
				kv = substr(s, RSTART, RLENGTH); k = kv; sub(/:\[.*/, "", k); v = kv
				sub(/^[^[]*\[/, "", v); sub(/\]$/, "", v)
				labels[n] = labels[n] k "=" v " "
				s = substr(s, RSTART + RLENGTH)
			}
			next
		}
		sec == "l" && $1 ~ /^[0-9]+:$/ {
			id = $1; sub(/:$/, "", id); mapped = ($3 ~ /^M=/); f = mapped ? 4 : 3
			lmap[id] = mapped ? substr($3, 3) : ""
			# the file may have spaces (<frozen importlib._bootstrap>): up to the " s=N" field
			name[id] = $f; fl = $(f + 1); nlines[id] = 1
			for (j = f + 2; j < NF || (j == NF && $NF !~ /^s=/); j++) fl = fl " " $j
			py[id] = ""
			if ($2 == "0x0") py[id] = (mapped ? "BAD@" : "") $f "@" fl
			next
		}
		sec == "l" && /^ +[^ ]/ {
			name[id] = name[id] ";" $1; nlines[id]++
			if (py[id] != "") py[id] = "BAD@" py[id]
			next
		}
		END {
			for (s = 1; s <= n; s++) {
				k = split(locs[s], ids, " "); st = ""; ps = ""; fs = ""
				for (j = 1; j <= k; j++) {
					st = st (st == "" ? "" : ";") name[ids[j]]
					if (py[ids[j]] != "") ps = ps (ps == "" ? "" : ";") py[ids[j]]
					for (l = 1; l <= nlines[ids[j]]; l++)
						fs = fs (fs == "" ? "" : ";") (lmap[ids[j]] == "" ? "-" : mfile[lmap[ids[j]]])
				}
				printf "%s\t%s\t%s\t%s\t%s\n", vals[s], labels[s], st, ps, fs
			}
		}'
}

# Samples (lines of py_samples) whose STACK has function FN.
with_fn() { # SAMPLES FN
	awk -F'\t' -v fn="$2" '{ n = split($3, f, ";"); for (i = 1; i <= n; i++) if (f[i] == fn) { print; next } }' "$1"
}

# Sum of value column COL (1-based) over the lines of a py_samples file.
sum_values() { # SAMPLES COL
	awk -F'\t' -v c="$2" '{ split($1, v, " "); s += v[c] } END { printf "%.0f\n", s }' "$1"
}

# Drops 0 (lib.sh's loss counters), and Python frames were read (lib.sh's expect_py_reads).
expect_py_counters() { # FILE
	expect_no_drops "$1"
	expect_py_reads "$1"
}

# The cpu profile of a py_cpu.py run (SCRIPT: its path as the interpreter saw it).
check_py_cpu() { # FILE SCRIPT WHO [SLICE]
	local f=$1 script=$2 who=$3 s=$1.samples a b la lb body_a body_end call_a mod_line bad n
	if [ $# -ge 4 ]; then
		# one interpreter's slice of a run of several: the caller checked the run's drops
		py_samples "$f" >"$s"
		expect_py_reads_of "$s" "$who"
	else
		expect_py_counters "$f"
		py_samples "$f" >"$s"
	fi
	with_fn "$s" hot_a >"$s.a"
	# hot_a runs 3x the loop of hot_b: samples in a 3:1 ratio (loose: the machine is shared)
	a=$(pprof_cum "$f" samples hot_a)
	b=$(pprof_cum "$f" samples hot_b)
	[ "$b" -gt 0 ] || { head -20 "$s"; fail "$who: no samples in hot_b"; }
	expect_range "$who: hot_a/hot_b samples" 1.8 5 "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
	expect_eq "$who: hot_a samples (raw vs pprof -top)" "$a" "$(sum_values "$s.a" 1)"
	# Every hot_a stack, Python frames only: hot_a at a line of it, main at the line that
	# calls hot_a, <module> at the line that calls main — from this script's file.
	la=$(line_of "$script" '^def hot_a')
	lb=$(line_of "$script" '^def hot_b')
	# from the def line: 3.11+ sample the function's RESUME there
	body_a=$la body_end=$((lb - 1))
	call_a=$(line_of "$script" '^        hot_a\(')
	mod_line=$(line_of "$script" '^    main\(\)')
	bad=$(awk -F'\t' -v file="$script" -v lo="$body_a" -v hi="$body_end" -v ca="$call_a" -v ml="$mod_line" '{
		n = split($4, p, ";")
		if (n != 3) { print; next }
		if (p[2] != "main@" file ":" ca || p[3] != "<module>@" file ":" ml) { print; next }
		l = p[1]; sub(/.*:/, "", l)
		if (substr(p[1], 1, length("hot_a@" file ":")) != "hot_a@" file ":" || l + 0 < lo || l + 0 > hi) print
	}' "$s.a" | head -3)
	[ -z "$bad" ] || fail "$who: hot_a stack not hot_a@$script:[$body_a-$body_end];main@:$call_a;<module>@:$mod_line: $bad"
	echo "ok: $who: $(wc -l <"$s.a") hot_a stacks are hot_a;main;<module> with file $script and lines"
	# Python frames replace the evaluator's frames; native interpreter frames stay below <module>
	n=$(grep -c '_PyEval_EvalFrameDefault' "$s.a")
	expect_eq "$who: hot_a stacks still showing _PyEval_EvalFrameDefault" 0 "$n"
	n=$(awk -F'\t' '$3 !~ /(^|;)<module>;([^;]*;)*(PyEval_EvalCode|Py_RunMain|Py_BytesMain)(;|$)/' "$s.a" | wc -l)
	expect_eq "$who: hot_a stacks without a native interpreter frame below <module>" 0 "$n"
	# A single-threaded interpreter running Python code holds the GIL
	n=$(awk -F'\t' '$2 !~ /(^| )gil=held /' "$s.a" | wc -l)
	expect_eq "$who: hot_a samples not labelled gil=held" 0 "$n"
	n=$(awk -F'\t' '$2 !~ /(^| )pid=[0-9]+ / || $2 !~ /(^| )tid=[0-9]+ / || $2 !~ /(^| )comm=/' "$s.a" | wc -l)
	expect_eq "$who: hot_a samples without pid/tid/comm" 0 "$n"
	# No sample of the run has a malformed Python location
	n=$(awk -F'\t' '$4 ~ /(^|;)BAD@/' "$s" | wc -l)
	expect_eq "$who: Python locations with a mapping or several lines" 0 "$n"
}

t_python_cpu_cmd() {
	local i f ran="" n
	py_list
	# the interpreters in turn in one run (py_all_run): each has the CPUs to itself as it had in
	# a run of its own
	py_all_run "$E2E_TMP/cpu.pb.gz" in_turn --cpu=$PY_HZ --top 0 -- "$PY_CPU" $PY_SECONDS
	expect_no_drops "$E2E_TMP/cpu.pb.gz"
	expect_py_reads "$E2E_TMP/cpu.pb.gz"
	for i in "${!PY_BINS[@]}"; do
		f=$E2E_TMP/cpu.${PY_NAMES[$i]}.pb.gz
		echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
		grep -q '^rounds [0-9]' "$E2E_TMP/${PY_NAMES[$i]}.out" || fail "${PY_NAMES[$i]}: the script did not finish"
		py_slice "$E2E_TMP/cpu.pb.gz" "$i" "$f"
		check_py_cpu "$f" "$PY_CPU" "${PY_NAMES[$i]}" slice
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
	# What a user's go tool pprof shows: its default symbolization cuts <…> and (…) out of a
	# name whose system name is the same, taking it for demangled C++, and <module> was then
	# empty, shown as <unknown> (the tests read with -symbolize=none, which keeps names).
	n=$(go tool pprof -symbolize=none -traces "$E2E_TMP/cpu.pb.gz" 2>/dev/null | grep -c "<module>")
	[ "$n" -gt 0 ] || fail "no <module> frame"
	expect_eq "<module> frames as go tool pprof shows them" "$n" \
		"$(go tool pprof -traces "$E2E_TMP/cpu.pb.gz" 2>/dev/null | grep -c "<module>" || true)"
}

# Every interpreter waiting for a go line, one -p run of them all, go once it profiles: each runs
# PY_PID_ROUNDS rounds of hot_a and hot_b (a fixed amount of work, however the CPUs are shared:
# about 1.3 CPU-seconds, 900 samples at PY_HZ, on the fastest here) and says done; SIGINT ends the
# run, and every target must have lived through it.
PY_PID_ROUNDS=300
t_python_cpu_pid() {
	local i f=$E2E_TMP/pid.pb.gz g ran="" st fd pids="" ins=()
	py_list
	for i in "${!PY_BINS[@]}"; do
		start_waiting_target "$E2E_TMP/${PY_NAMES[$i]}.out" "${PY_BINS[$i]}" "$PY_CPU" --wait \
			--rounds $PY_PID_ROUNDS 60
		echo "$TARGET_PID" >"$E2E_TMP/${PY_NAMES[$i]}.pid"
		pids=$pids${pids:+,}$TARGET_PID
		ins[i]=$TARGET_IN
	done
	start_profiler "$f.err" --cpu=$PY_HZ -p "$pids" -o "$f" --top 0
	for i in "${!PY_BINS[@]}"; do echo go >&"${ins[i]}"; done
	for i in "${!PY_BINS[@]}"; do
		wait_for_line "$E2E_TMP/${PY_NAMES[$i]}.out" '^done' 120 ||
			{ cat "$E2E_TMP/${PY_NAMES[$i]}.out"; fail "${PY_NAMES[$i]}: never done"; }
	done
	kill -INT "$PROF_PID"
	wait "$PROF_PID"
	st=$?
	[ "$st" -eq 0 ] || { cat "$f.err"; fail "exit status $st"; }
	for i in "${!PY_BINS[@]}"; do
		kill -0 "$(cat "$E2E_TMP/${PY_NAMES[$i]}.pid")" || fail "${PY_NAMES[$i]}: the target died under -p"
		fd=${ins[i]}
		exec {fd}>&-
	done
	expect_no_drops "$f"
	expect_py_reads "$f"
	for i in "${!PY_BINS[@]}"; do
		g=$E2E_TMP/pid.${PY_NAMES[$i]}.pb.gz
		echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
		py_slice "$f" "$i" "$g"
		check_py_cpu "$g" "$PY_CPU" "${PY_NAMES[$i]} -p" slice
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
}

# The script run as the command itself: the kernel starts `/usr/bin/env python3.X SCRIPT` and env
# execs the interpreter, found first in PATH.
t_python_cpu_shebang() {
	local i f m script ran=""
	py_list
	for i in "${!PY_BINS[@]}"; do
		m=${PY_BINS[$i]##*/}
		script=$E2E_TMP/${PY_NAMES[$i]}/py_cpu.py
		mkdir -p "${script%/*}"
		{ echo "#!/usr/bin/env $m" && tail -n +2 "$PY_CPU"; } >"$script" || fail "cannot write $script"
		chmod +x "$script"
		f=$E2E_TMP/shebang.${PY_NAMES[$i]}.pb.gz
		echo "== ${PY_NAMES[$i]}: $script (#!/usr/bin/env $m, PATH from ${PY_BINS[$i]%/*})"
		PATH="${PY_BINS[$i]%/*}:$PATH" "$PROF" --cpu=$PY_HZ -o "$f" --top 0 -- "$script" $PY_SECONDS >"$f.out" 2>"$f.err" ||
			{ cat "$f.err"; fail "${PY_NAMES[$i]}: exit status $?"; }
		grep -q '^rounds [0-9]' "$f.out" || fail "${PY_NAMES[$i]}: the script did not run"
		check_py_cpu "$f" "$script" "${PY_NAMES[$i]} #!"
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
}

# Folded and text output name the same frames as pprof.  The interpreters in turn, one run per
# format (py_all_run); a folded line names its process by comm only, and pyenv's 3.11 and
# Debian's are both python3.11: Debian's runs apart.  Python stacks read as Python
# (--python-frames python, the default): <module>, main and hot_a are adjacent, the
# interpreter's call path between them (3.8–3.10 recurse in C for every Python call) left out.
t_python_folded_text() {
	local i f n g comm ran="" names=() bins=()
	py_list
	names=("${PY_NAMES[@]}") bins=("${PY_BINS[@]}")
	for g in pyenv other; do
		PY_NAMES=() PY_BINS=()
		for i in "${!names[@]}"; do
			[[ ${names[i]} == pyenv-* ]] && [ $g = other ] && continue
			[[ ${names[i]} != pyenv-* ]] && [ $g = pyenv ] && continue
			PY_NAMES+=("${names[i]}") PY_BINS+=("${bins[i]}")
		done
		[ ${#PY_BINS[@]} -gt 0 ] || continue
		f=$E2E_TMP/$g
		py_all_run "$f.folded" in_turn --cpu=$PY_HZ -f folded --top 0 -- "$PY_CPU" 0.5
		py_all_run "$f.txt" in_turn --cpu=$PY_HZ -f text --top 10 -- "$PY_CPU" 0.5
		expect_no_drops_text "$f.txt"
		for i in "${!PY_BINS[@]}"; do
			echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
			comm=${PY_BINS[$i]##*/}
			grep "^$comm;" "$f.folded" >"$f.$comm.folded"
			# root first: <module>, main, hot_a, nothing between them
			n=$(grep -cE ';<module>;main;hot_a(;[^ ]*)? [0-9]+$' "$f.$comm.folded")
			[ "$n" -gt 0 ] || { head -5 "$f.$comm.folded"; fail "${PY_NAMES[$i]}: no folded <module>;main;hot_a line"; }
			expect_eq "${PY_NAMES[$i]}: folded hot_a lines with _PyEval_EvalFrameDefault" 0 \
				"$(grep -E '(^|;)hot_a(;| )' "$f.$comm.folded" | grep -c '_PyEval_EvalFrameDefault')"
			expect_eq "${PY_NAMES[$i]}: folded hot_a lines not right under <module>;main" 0 \
				"$(grep -E '(^|;)hot_a(;| )' "$f.$comm.folded" | grep -cvE ';<module>;main;hot_a(;| )')"
			# hot_a, 60 % of the run, has a row of the top table of this interpreter's process
			awk -v pid="$(cat "$E2E_TMP/${PY_NAMES[$i]}.pid")" '/^pid [0-9]+ / { p = ($2 == pid); t = 0 }
				p && /top 10 by cpu/ { t = 1; next } p && t && $NF == "hot_a" { found = 1 }
				END { exit !found }' "$f.txt" ||
				{ cat "$f.txt"; fail "${PY_NAMES[$i]}: no hot_a row in the text report"; }
			echo "ok: ${PY_NAMES[$i]}: folded and text name hot_a right under main"
			ran="$ran ${PY_NAMES[$i]}"
		done
	done
	echo "ran:$ran"
}

# The first 3 samples (py_samples lines of py_callback.py) whose Python frames are not FN at a
# line in [LO, HI], main at line LM, <module> at line ML.
py_chain_bad() { # SAMPLES FN LO HI LM ML
	awk -F'\t' -v file="$PY_CALLBACK" -v fn="$2" -v lo="$3" -v hi="$4" -v lm="$5" -v ml="$6" '{
		n = split($4, p, ";")
		if (n != 3 || p[2] != "main@" file ":" lm || p[3] != "<module>@" file ":" ml) { print; next }
		l = p[1]; sub(/.*:/, "", l)
		if (substr(p[1], 1, length(fn "@" file ":")) != fn "@" file ":" || l + 0 < lo || l + 0 > hi) print
	}' "$1" | head -3
}

# Samples (py_samples lines) of Python function FN, each as one line:
#   INTERP<TAB>QSORT<TAB>FFI<TAB>CTYPES<TAB>BETWEEN<TAB>STACK
# of the frames between FN and the first `main` rootward of it: how many are the interpreter's
# (their mapping is python3.X or libpython3.X.so), whether libc's qsort_r, libffi's ffi_call and
# a frame of _ctypes are among them (1/0), how many there are; "nochain" when FN or main is
# missing.
between_main() { # SAMPLES FN
	awk -F'\t' -v fn="$2" '{
		n = split($3, s, ";"); split($5, m, ";"); a = 0; b = 0
		for (i = 1; i <= n; i++) {
			if (!a && s[i] == fn) a = i
			else if (a && s[i] == "main") { b = i; break }
		}
		if (!a) next
		if (!b) { print "nochain\t" $3; next }
		it = q = f = c = 0
		for (i = a + 1; i < b; i++) {
			if (m[i] ~ /^(libpython3\.[0-9]+\.so|python3\.[0-9]+$)/) it++
			if (s[i] == "qsort_r") q = 1
			if (s[i] == "ffi_call") f = 1
			if (m[i] ~ /^_ctypes\./) c = 1
		}
		printf "%d\t%d\t%d\t%d\t%d\t%s\n", it, q, f, c, b - a - 1, $3
	}' "$1"
}

# C code calling back into Python (issue 15: "C extensions calling back into Python show both";
# issue 28: "Python stacks read as Python").  py_callback.py runs keyfn from sorted's C code
# (the interpreter's) and cmpfn from libc's qsort through ctypes (_ctypes, libffi).  Python
# frames: <module>, main, keyfn or cmpfn, from the script, at the calling lines.  By default
# (--python-frames python) the interpreter's own frames between main and the callback are left
# out: keyfn sits right on main, and cmpfn's stacks keep _ctypes, libffi and qsort_r and nothing
# of the interpreter's between; native interpreter frames stay rootward of <module>.  With
# --python-frames all (a second, shorter run) sorted's C frames and the interpreter's call path
# to cmpfn are there.
t_python_callback() {
	local i f s n lk le lc lq lm ml mid bad how run secs ran=""
	py_list
	lk=$(line_of "$PY_CALLBACK" '^def keyfn')
	lc=$(line_of "$PY_CALLBACK" '^def cmpfn')
	le=$(line_of "$PY_CALLBACK" '^def main')
	lm=$(line_of "$PY_CALLBACK" '^        sorted\(')
	lq=$(line_of "$PY_CALLBACK" '^        libc\.qsort\(')
	ml=$(line_of "$PY_CALLBACK" '^    main\(')
	for how in python all; do
		# the interpreters in turn in one run (py_all_run); about 300 samples of each callback
		# in the second run
		run=callback_$how secs=$PY_SECONDS
		[ $how = all ] && secs=0.6
		py_all_run "$E2E_TMP/$run.pb.gz" in_turn --cpu=$PY_HZ --top 0 --python-frames $how -- "$PY_CALLBACK" $secs
		expect_no_drops "$E2E_TMP/$run.pb.gz"
		expect_py_reads "$E2E_TMP/$run.pb.gz"
		for i in "${!PY_BINS[@]}"; do
			f=$E2E_TMP/$run.${PY_NAMES[$i]}.pb.gz
			s=$f.samples
			echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]} (--python-frames $how)"
			grep -q '^rounds [0-9]' "$E2E_TMP/${PY_NAMES[$i]}.out" || fail "${PY_NAMES[$i]}: the script did not finish"
			py_each_slice "$E2E_TMP/$run.pb.gz" "$i" "$run"
			with_fn "$s" keyfn >"$s.keyfn"
			with_fn "$s" cmpfn >"$s.cmpfn"
			# the callbacks are nearly all of the run
			for n in keyfn cmpfn; do
				[ "$(wc -l <"$s.$n")" -ge 20 ] || { head -20 "$s"; fail "${PY_NAMES[$i]}: $(wc -l <"$s.$n") stacks in $s.$n"; }
			done
			# Python frames only: the callback in its body, main at the line that sorts,
			# <module> at main()
			bad=$(py_chain_bad "$s.keyfn" keyfn "$lk" "$((lc - 1))" "$lm" "$ml")
			[ -z "$bad" ] || fail "${PY_NAMES[$i]}: keyfn stack not keyfn@:[$lk-$((lc - 1))];main@:$lm;<module>@:$ml: $bad"
			bad=$(py_chain_bad "$s.cmpfn" cmpfn "$lc" "$((le - 1))" "$lq" "$ml")
			[ -z "$bad" ] || fail "${PY_NAMES[$i]}: cmpfn stack not cmpfn@:[$lc-$((le - 1))];main@:$lq;<module>@:$ml: $bad"
			for n in keyfn cmpfn; do
				expect_eq "${PY_NAMES[$i]}: $n stacks showing _PyEval_EvalFrameDefault" 0 \
					"$(grep -c '_PyEval_EvalFrameDefault' "$s.$n")"
				expect_eq "${PY_NAMES[$i]}: $n stacks without a native interpreter frame above <module>" 0 \
					"$(awk -F'\t' '$3 !~ /(^|;)<module>;([^;]*;)*(PyEval_EvalCode|Py_RunMain|Py_BytesMain)(;|$)/' "$s.$n" | wc -l)"
			done
			# A sample at a call's edge (an eval frame linking its first frame or after
			# unlinking its last) is put back in order: no interpreter loop left native
			# rootward of a Python frame, in any stack of the run (a few per run before).
			n=$(awk -F'\t' '{ n = split($3, fr, ";"); split($5, fl, ";"); py = 0
				for (i = 1; i <= n; i++)
					if (fl[i] == "-") py = 1
					else if (py && fr[i] ~ /^_PyEval_EvalFrameDefault/) { print; next } }' "$s" |
				tee "$s.bad" | wc -l)
			[ "$n" -eq 0 ] || { cut -f3 "$s.bad" | head -3; fail "${PY_NAMES[$i]}: $n stacks with _PyEval_EvalFrameDefault below a Python frame"; }
			between_main "$s.cmpfn" cmpfn >"$s.between"
			if [ $how = python ]; then
				n=$(awk -F'\t' '$3 !~ /(^|;)keyfn;main;<module>(;|$)/' "$s.keyfn" | tee "$s.bad" | wc -l)
				[ "$n" -eq 0 ] || { cut -f3 "$s.bad" | head -3; fail "${PY_NAMES[$i]}: keyfn stacks ($n of $(wc -l <"$s.keyfn")) with frames between main and keyfn"; }
				n=$(awk -F'\t' '$1 != 0 || $2 != 1 || $3 != 1 || $4 != 1' "$s.between" | tee "$s.bad" | wc -l)
				[ "$n" -eq 0 ] || { head -3 "$s.bad"; fail "${PY_NAMES[$i]}: cmpfn stacks ($n of $(wc -l <"$s.cmpfn")) with the interpreter's frames, or without _ctypes, ffi_call and qsort_r, between main and cmpfn (interp, qsort_r, ffi_call, _ctypes)"; }
				echo "ok: ${PY_NAMES[$i]}: $(wc -l <"$s.keyfn") keyfn stacks are …<module>;main;keyfn, $(wc -l <"$s.cmpfn") cmpfn stacks keep _ctypes, libffi and qsort_r only between main and cmpfn"
			else
				# All frames, leaf first: keyfn, then sorted's C code, then main.  Debian's
				# build names only exported functions (.dynsym): builtin_sorted and list_sort are
				# static there, so its stacks show the C API call that runs keyfn and, below it,
				# at least one frame of sorted's named by its file offset in the interpreter
				# (python3.11+0x…).
				case ${PY_NAMES[$i]} in
				debian-*) mid='PyObject_CallOneArg;([^;]*;)*python3\.11\+0x[0-9a-f]+;([^;]*;)*' ;;
				*) mid='list_sort[^;]*;([^;]+;)*builtin_sorted;([^;]+;)*' ;;
				esac
				n=$(awk -F'\t' -v re="(^|;)keyfn;([^;]+;)*${mid}main;" '$3 !~ re' "$s.keyfn" | tee "$s.bad" | wc -l)
				[ "$n" -eq 0 ] || { cut -f3 "$s.bad" | head -3; fail "${PY_NAMES[$i]}: keyfn stacks ($n of $(wc -l <"$s.keyfn")) without sorted's C frames between main and keyfn"; }
				n=$(awk -F'\t' '$1 == "nochain" || $1 < 1 || $2 != 1 || $3 != 1 || $4 != 1' "$s.between" | tee "$s.bad" | wc -l)
				[ "$n" -eq 0 ] || { head -3 "$s.bad"; fail "${PY_NAMES[$i]}: cmpfn stacks ($n of $(wc -l <"$s.cmpfn")) without the interpreter's frames, _ctypes, ffi_call and qsort_r between main and cmpfn (interp, qsort_r, ffi_call, _ctypes)"; }
				echo "ok: ${PY_NAMES[$i]}: $(wc -l <"$s.keyfn") keyfn stacks have sorted's C frames, $(wc -l <"$s.cmpfn") cmpfn stacks the interpreter's call path"
			fi
			ran="$ran ${PY_NAMES[$i]}/$how"
		done
	done
	echo "ran:$ran"
}

# py_heap.py under --heap, every interpreter at once in one run (py_all_script): STOP is "exit"
# (the profile is written when they have all exited) or "live" (written on SIGINT once every one
# has printed KEPT, while they sleep holding their memory).
heap_keep_runs() { # STOP
	local i f=$E2E_TMP/heap.pb.gz g s v n la lm ml secs=0 ran="" st
	py_list
	la=$(line_of "$PY_HEAP" '^        kept\.append\(bytearray\(')
	lm=$(line_of "$PY_HEAP" '^    held = keep\(')
	ml=$(line_of "$PY_HEAP" '^    main\(\)')
	[ "$1" = live ] && secs=60
	py_all_script "$E2E_TMP/all.sh" together "$PY_HEAP" "$secs"
	"$PROF" --heap -o "$f" --top 0 -- sh "$E2E_TMP/all.sh" >"$f.out" 2>"$f.err" &
	if [ "$1" = live ]; then
		for i in "${!PY_BINS[@]}"; do
			wait_for_line "$E2E_TMP/${PY_NAMES[$i]}.out" '^KEPT' 60 ||
				{ cat "$f.err" "$E2E_TMP/${PY_NAMES[$i]}.err"; fail "${PY_NAMES[$i]}: never printed KEPT"; }
		done
		kill -INT $!
	fi
	wait $!
	st=$?
	[ "$st" -eq 0 ] || { cat "$f.err"; fail "exit status $st"; }
	expect_no_drops "$f"
	expect_py_reads "$f"
	for i in "${!PY_BINS[@]}"; do
		g=$E2E_TMP/heap.${PY_NAMES[$i]}.pb.gz
		s=$g.samples
		echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
		expect_eq "${PY_NAMES[$i]}: script output" "KEPT 20" "$(cat "$E2E_TMP/${PY_NAMES[$i]}.out")"
		py_slice "$f" "$i" "$g"
		py_samples "$g" >"$s"
		expect_py_reads_of "$s" "${PY_NAMES[$i]}"
		# 20 blocks of 1 MiB + 1 byte, kept to the end; keep's own small objects come from
		# pymalloc's arenas, not malloc
		v=$(pprof_cum "$g" inuse_space keep)
		expect_range "${PY_NAMES[$i]}: inuse_space on stacks with keep" 20971520 23068671 "$v"
		with_fn "$s" keep >"$s.k"
		# every allocation under keep: keep at the append line;main at its call;<module> at main()
		n=$(awk -F'\t' -v file="$PY_HEAP" -v la="$la" -v lm="$lm" -v ml="$ml" '{
			n = split($4, p, ";")
			if (n != 3 || p[1] != "keep@" file ":" la || p[2] != "main@" file ":" lm ||
				p[3] != "<module>@" file ":" ml) print
		}' "$s.k" | tee "$s.bad" | wc -l)
		[ -s "$s.k" ] || { head -20 "$s"; fail "${PY_NAMES[$i]}: no allocation stack with keep"; }
		[ "$n" -eq 0 ] || { head -3 "$s.bad"; fail "${PY_NAMES[$i]}: keep stacks ($n bad of $(wc -l <"$s.k"))"; }
		echo "ok: ${PY_NAMES[$i]}: $(wc -l <"$s.k") keep stacks are keep;main;<module> at their lines"
		# heap samples of a Python thread carry its state and name as cpu samples do: the
		# allocating thread runs Python code, so it holds the GIL
		n=$(awk -F'\t' '$2 !~ /(^| )gil=held / || $2 !~ /(^| )thread_name=MainThread /' "$s.k" | wc -l)
		expect_eq "${PY_NAMES[$i]}: keep samples not labelled gil=held and thread_name=MainThread" 0 "$n"
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
}

# Profile written while the scripts sleep holding their 20 MiB (our SIGINT ends the command).
t_python_heap_keep() {
	heap_keep_runs live
}

# The same when the scripts exit (os._exit) right after keep: the profile is written after the
# processes are gone, so their code objects must have been read while they lived.
t_python_heap_keep_exit() {
	heap_keep_runs exit
}

# a() and b() allocate in bursts from one native stack (tests/targets/py_alias.py; from 3.11 a
# Python call adds no C frame): the walk cache hands their native frames back from a kept walk,
# and the Python frames above must be read anew each time.  Every block on its own function's
# stack, exactly, with main and <module> under it; and most stacks from the cache.
t_python_heap_walk_cache_reads_python_frames() {
	local f=$E2E_TMP/alias.pb.gz s=$E2E_TMP/alias.samples fn size cached
	local script=tests/targets/py_alias.py
	"$PROF" -v --heap -o "$f" --top 0 -- /usr/bin/python3.11 "$script" >"$E2E_TMP/alias.out" \
		2>"$E2E_TMP/alias.log" || fail "profiler exit status $?"
	expect_eq "script output" "DONE" "$(cat "$E2E_TMP/alias.out")"
	expect_no_drops "$f"
	py_samples "$f" >"$s"
	for fn in a b; do
		size=$([ $fn = a ] && echo 100001 || echo 200001)
		# alloc_objects and alloc_space of the stacks whose Python leaf is fn, called by main
		expect_eq "$fn: blocks and bytes with $fn;main;<module> as the Python frames" \
			"1000 $((1000 * size))" "$(awk -F'\t' -v fn="$fn" -v file="$PWD/$script" '
				{ n = split($4, p, ";") }
				n == 3 && p[1] ~ "^" fn "@" file ":" && p[2] ~ "^main@" file ":" &&
				p[3] ~ "^<module>@" file ":" { split($1, v, " "); o += v[1]; b += v[2] }
				END { printf "%d %d\n", o, b }' "$s")"
	done
	cached=$(sed -n 's/.*bookkeeping:.* unwind_walks_cached=\([0-9]*\).*/\1/p' "$E2E_TMP/alias.log")
	[ "${cached:-0}" -ge 1500 ] || fail "unwind_walks_cached: ${cached:-0} (expected >= 1500 of a() and b()'s 2000)"
	echo "ok: $cached stacks from the walk cache"
}

# Code objects freed and their addresses reused by others of another name
# (tests/targets/py_code_reuse.py: alpha and beta compiled in turn through exec, each dropped
# before the next): exact mode caches each code object's fingerprint per CPU, and every free of
# a code object (a probe on CPython's code_dealloc for that process) ends what was cached for
# it.  Every block on its own function's stack, exactly; the cache used, and every free seen.
t_python_heap_code_cache_freed_code() {
	local f=$E2E_TMP/reuse.pb.gz s=$E2E_TMP/reuse.samples fn size v
	local script=tests/targets/py_code_reuse.py
	"$PROF" -vv --heap -o "$f" --top 0 -- /usr/bin/python3.11 "$script" >"$E2E_TMP/reuse.out" \
		2>"$E2E_TMP/reuse.log" || fail "profiler exit status $?"
	v=$(sed -n 's/^REUSED //p' "$E2E_TMP/reuse.out")
	[ "${v:-0}" -ge 50 ] || fail "script: ${v:-none} rounds met a reused address (the test needs reuse)"
	echo "ok: $v of 2000 rounds made a code object where the other name's had been"
	grep -q "code_dealloc probed" "$E2E_TMP/reuse.log" || fail "code_dealloc was not probed"
	expect_no_drops "$f"
	py_samples "$f" >"$s"
	# Blocks and bytes under main's call of the round's function, by the name its frame got:
	# alpha, beta, or none (a code object freed before userspace read its name: [python]).
	awk -F'\t' '
		{ n = split($4, p, ";") }
		n == 3 && p[2] ~ "^main@.*py_code_reuse.py:" && p[3] ~ "^<module>@" {
			fn = p[1]; sub(/@.*/, "", fn); split($1, v, " "); o[fn] += v[1]; b[fn] += v[2] }
		END { for (fn in o) printf "%s %d %d\n", fn, o[fn], b[fn] }' "$s" >"$s.by"
	cat "$s.by"
	for fn in alpha beta; do
		size=$([ $fn = alpha ] && echo 1001 || echo 3001)
		v=$(awk -v fn=$fn '$1 == fn { print $2 }' "$s.by")
		# Most rounds named (the symbolizer reads a code object soon after it is first seen)
		[ "${v:-0}" -ge 2500 ] || fail "$fn: ${v:-0} blocks under its name (expected >= 2500 of 5000)"
		expect_eq "$fn: bytes of its blocks (each $size: none of the other's)" $((v * size)) \
			"$(awk -v fn=$fn '$1 == fn { print $3 }' "$s.by")"
	done
	expect_eq "blocks of the rounds, named or not" 10000 \
		"$(awk '$1 == "alpha" || $1 == "beta" || $1 == "[python]" { n += $2 } END { print n + 0 }' "$s.by")"
	v=$(sed -n 's/.*bookkeeping:.* py_code_cached=\([0-9]*\).*/\1/p' "$E2E_TMP/reuse.log")
	[ "${v:-0}" -ge 5000 ] || fail "py_code_cached: ${v:-0} (expected >= 5000: main and <module> at least)"
	v=$(sed -n 's/.*bookkeeping:.* py_code_freed=\([0-9]*\).*/\1/p' "$E2E_TMP/reuse.log")
	[ "${v:-0}" -ge 2000 ] || fail "py_code_freed: ${v:-0} (expected >= 2000: a function's code each round)"
	echo "ok: frames named from the cache, code objects freed: $v"
	# Sampled mode walks few stacks: no trap per code object freed for it
	"$PROF" -vv --heap --sample-bytes 4096 -o "$f" --top 0 -- /usr/bin/python3.11 "$script" 100 \
		>"$E2E_TMP/sampled.out" 2>"$E2E_TMP/sampled.log" || fail "sampled: profiler exit status $?"
	! grep -q "code_dealloc probed" "$E2E_TMP/sampled.log" || fail "sampled mode probed code_dealloc"
	expect_eq "sampled: py_code_freed" "" \
		"$(sed -n 's/.*bookkeeping:.* py_code_freed=\([0-9]*\).*/\1/p' "$E2E_TMP/sampled.log")"
}

t_python_threads_gil() {
	local i f s n fn ran=""
	py_list
	# the sleeper naps 1.5 s, longer than the main thread spins (1 s): it never wakes to take
	# the GIL from the spinner (as it did with 2 2.5: a sample of the spinner waiting in
	# take_gil, correctly labelled released).  The interpreters in turn in one run (py_all_run),
	# not together: other samples between a main thread's first ones hid a naming bug once
	# (the sleeper's).  At PY_HZ: five times the spinner samples of 99 Hz for 2 s.
	py_all_run "$E2E_TMP/threads.pb.gz" in_turn --cpu=$PY_HZ --top 0 -- "$PY_THREADS" 1.5 1
	expect_no_drops "$E2E_TMP/threads.pb.gz"
	expect_py_reads "$E2E_TMP/threads.pb.gz"
	for i in "${!PY_BINS[@]}"; do
		f=$E2E_TMP/threads.${PY_NAMES[$i]}.pb.gz
		s=$f.samples
		echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
		expect_eq "${PY_NAMES[$i]}: script output" "done" "$(cat "$E2E_TMP/${PY_NAMES[$i]}.out")"
		py_each_slice "$E2E_TMP/threads.pb.gz" "$i" threads
		# a method is named by co_qualname from 3.11 on, by co_name before
		case ${PY_NAMES[$i]} in
		*-3.8 | *-3.9 | *-3.10) fn=spin ;;
		*) fn=Spinner.spin ;;
		esac
		with_fn "$s" "$fn" >"$s.spin"
		[ -s "$s.spin" ] || { head -20 "$s"; fail "${PY_NAMES[$i]}: no samples in $fn"; }
		n=$(awk -F'\t' -v fn="$fn" '{ split($4, p, ";"); sub(/@.*/, "", p[1]) }
			p[1] != fn || $4 !~ /^[^;]*;main@[^;]*;<module>@[^;]*$/' "$s.spin" | wc -l)
		expect_eq "${PY_NAMES[$i]}: $fn stacks not $fn;main;<module>" 0 "$n"
		# the main thread holds the GIL the whole time: the sleeper waits without it.  Only at
		# the start may the GIL pass to the sleeper on its way into time.sleep; a spinner's
		# sample then is in the hand-off (take_gil/drop_gil, named where libpython has symbols)
		n=$(awk -F'\t' '$2 !~ /(^| )gil=held / && $3 !~ /(^|;)(take_gil|drop_gil);/' "$s.spin" | wc -l)
		expect_eq "${PY_NAMES[$i]}: spin samples ($(wc -l <"$s.spin")) not labelled gil=held" 0 "$n"
		# threading's names, read from the interpreter (comm stays python3.X)
		n=$(awk -F'\t' '$2 !~ /(^| )thread_name=MainThread /' "$s.spin" | wc -l)
		expect_eq "${PY_NAMES[$i]}: spin samples not labelled thread_name=MainThread" 0 "$n"
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
}

# Threads whose first sample is their last moments (asleep since they started, then 30 ms of
# work and gone): named all the same, because a Python target's new thread is announced at its
# creation and its name read while it lives.  Reading the name only at a thread's first sample
# found it gone from threading._active in most runs.  Two interpreters: before 3.11 the OS
# thread id comes from Thread._native_id, after from the thread state.
t_python_thread_named_before_its_first_sample() {
	local i f s n total ran=""
	py_list
	for i in "${!PY_BINS[@]}"; do
		case ${PY_NAMES[$i]} in pyenv-3.9 | pyenv-3.12) ;; *) continue ;; esac
		f=$E2E_TMP/late.${PY_NAMES[$i]}.pb.gz
		s=$f.samples
		"$PROF" --cpu -o "$f" --top 0 -- "${PY_BINS[$i]}" "$PY_LATE" 6 >"$f.out" 2>"$f.err" ||
			{ cat "$f.err"; fail "${PY_NAMES[$i]}: exit status $?"; }
		py_samples "$f" >"$s"
		with_fn "$s" work >"$s.work"
		total=$(wc -l <"$s.work")
		[ "$total" -gt 0 ] || fail "${PY_NAMES[$i]}: no samples in work"
		n=$(awk -F'\t' '$2 !~ /(^| )thread_name=late[0-5] /' "$s.work" | wc -l)
		expect_eq "${PY_NAMES[$i]}: work samples (of $total) not labelled thread_name=lateN" 0 "$n"
		ran="$ran ${PY_NAMES[$i]}"
	done
	[ -n "$ran" ] || fail "neither pyenv 3.9 nor 3.12 installed"
	echo "ran:$ran"
}

# With --offcpu, the sleeper's 2 s in time.sleep: off-CPU time on stacks through nap, the thread
# blocked (py-spy's idle: state=idle) and without the GIL.
t_python_offcpu_idle() {
	if ! "$PROF" --help 2>&1 | grep -q -- '--offcpu'; then
		[ "${CI:-}" = true ] && fail "bpftrace-prof has no --offcpu (CI=true)"
		skip "bpftrace-prof has no --offcpu yet"
	fi
	local i f s ns n ran=""
	# the loss counter of that mode too (test_offcpu.sh)
	local DROP_COUNTERS="$DROP_COUNTERS offcpu_full offcpu_deep_full"
	py_list
	# the interpreters in turn in one run (py_all_run), not together: no other process's samples
	# between a thread's (t_python_threads_gil); the mode goes in before the first dot of the
	# name: idle.offcpu.pb.gz
	py_all_run "$E2E_TMP/idle.pb.gz" in_turn --cpu --offcpu --top 0 -- "$PY_THREADS" 2 2.5
	[ -s "$E2E_TMP/idle.offcpu.pb.gz" ] || { ls "$E2E_TMP"; fail "no $E2E_TMP/idle.offcpu.pb.gz"; }
	expect_no_drops "$E2E_TMP/idle.offcpu.pb.gz"
	expect_py_reads "$E2E_TMP/idle.offcpu.pb.gz"
	for i in "${!PY_BINS[@]}"; do
		f=$E2E_TMP/idle.${PY_NAMES[$i]}.pb.gz
		s=$f.samples
		echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
		py_each_slice "$E2E_TMP/idle.offcpu.pb.gz" "$i" idle
		with_fn "$s" nap >"$s.nap"
		# events/count, offcpu/nanoseconds: the second value
		ns=$(sum_values "$s.nap" 2)
		expect_range "${PY_NAMES[$i]}: off-CPU ns on stacks with nap (time.sleep(2))" 1000000000 10000000000 "$ns"
		n=$(awk -F'\t' '$4 !~ /(^|;)nap@[^;]*;(Thread\.)?run@/' "$s.nap" | wc -l)
		expect_eq "${PY_NAMES[$i]}: nap stacks without Thread.run under nap" 0 "$n"
		ns=$(awk -F'\t' '$2 ~ /(^| )state=idle / && $2 ~ /(^| )gil=released /' "$s.nap" >"$s.idle" && sum_values "$s.idle" 2)
		expect_range "${PY_NAMES[$i]}: of which state=idle and gil=released" 1000000000 10000000000 "$ns"
		# A thread asleep in time.sleep's system call (pselect6 up to 3.10, clock_nanosleep
		# after) never holds the GIL; one preempted (state=runnable), or blocked on a page
		# fault before it let the GIL go, may.
		n=$(awk -F'\t' '$2 ~ /(^| )state=idle / && $3 ~ /(^|;)(do_nanosleep|do_select);/' "$s.nap" | wc -l)
		[ "$n" -gt 0 ] || fail "${PY_NAMES[$i]}: no nap samples asleep in the sleep system call"
		n=$(awk -F'\t' '$2 ~ /(^| )state=idle / && $3 ~ /(^|;)(do_nanosleep|do_select);/ && $2 !~ /(^| )gil=released /' "$s.nap" | wc -l)
		expect_eq "${PY_NAMES[$i]}: nap samples asleep in the sleep system call not labelled gil=released" 0 "$n"
		# the thread started as threading.Thread(name="sleeper") is named so
		n=$(awk -F'\t' '$2 !~ /(^| )thread_name=sleeper /' "$s.nap" | wc -l)
		expect_eq "${PY_NAMES[$i]}: nap samples not labelled thread_name=sleeper" 0 "$n"
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
}

# A CPython we do not walk (3.7): one warning naming the version, native stacks, exit 0.
t_python_unsupported_37() {
	local root p="" c f=$E2E_TMP/py37.pb.gz s n
	root=$(py_root)
	for c in "$root"/versions/3.7.*/bin/python3.7; do [ -x "$c" ] && p=$c; done
	if [ -z "$p" ]; then
		[ "${CI:-}" = true ] && fail "pyenv 3.7 is not installed under $root/versions (CI=true)"
		skip "no pyenv 3.7 under $root/versions"
	fi
	echo "== pyenv-3.7: $p"
	"$PROF" --cpu -o "$f" --top 0 -- "$p" "$PY_CPU" 2 >"$f.out" 2>"$f.err" ||
		{ cat "$f.err"; fail "exit status $?"; }
	cat "$f.err"
	grep -q '^rounds [0-9]' "$f.out" || fail "the script did not finish"
	expect_eq "warnings naming 3.7" 1 "$(grep -c 'warning: .*3\.7' "$f.err")"
	expect_no_drops "$f"
	s=$f.samples
	py_samples "$f" >"$s"
	expect_eq "Python frames (address 0 locations)" 0 "$(awk -F'\t' '$4 != ""' "$s" | wc -l)"
	expect_eq "hot_a samples" 0 "$(pprof_cum "$f" samples hot_a)"
	# the evaluator's native frames remain, under the interpreter's main
	n=$(with_fn "$s" _PyEval_EvalFrameDefault | wc -l)
	[ "$n" -gt 0 ] || { head "$s"; fail "no native _PyEval_EvalFrameDefault frames"; }
	echo "ok: $n samples with native _PyEval_EvalFrameDefault frames"
}
