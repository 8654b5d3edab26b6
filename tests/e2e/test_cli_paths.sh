# The command line's paths and exit status end to end (issue 25, items 2, 3 and 9): a bad -o
# refused before the run, the previous output kept as .old, the format taken from -o's
# extension, CMD's exit status passed on, the subcommands' own --help, kernel threads.

CLI_CT=build/targets/cpu_target

# Milliseconds since the epoch: a bound on "the profile did not run", never a timing assertion.
now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# refused_at_once WHAT ERR_FILE RC START_MS: exit 2, one line on stderr, and no 30 s run before.
refused_at_once() {
	expect_eq "$1: exit status" 2 "$3"
	expect_eq "$1: lines on stderr" 1 "$(wc -l <"$2")"
	expect_range "$1: ms before the refusal (a 30 s CMD did not run)" 0 2000 "$(($(now_ms) - $4))"
}

# refused_run WHAT ERR_FILE PROF_ARGS...: the profiler with PROF_ARGS, stderr in ERR_FILE,
# refused at once (refused_at_once).
refused_run() {
	local what=$1 err=$2 start rc
	shift 2
	start=$(now_ms)
	timeout -k 5 40 "$PROF" "$@" 2>"$err"
	rc=$?
	cat "$err"
	refused_at_once "$what" "$err" "$rc" "$start"
}

t_cli_bad_output_refused_before_the_run() {
	local err=$E2E_TMP/err out pid
	for out in /nonexistent/dir/x.pb.gz "$E2E_TMP" "$E2E_TMP/"; do
		refused_run "-o $out" "$err" --heap -o "$out" -- sleep 30
		grep -q "^bpftrace-prof: cannot write $out: " "$err" || fail "-o $out: $(cat "$err")"
	done
	grep -q "it is a directory: give -o a file name inside it" "$err" || fail "no advice: $(cat "$err")"
	# Several modes: the names with the mode inserted are what gets written (here one is a
	# directory).
	mkdir "$E2E_TMP/p.cpu.pb.gz"
	refused_run "--heap --cpu -o p.pb.gz" "$err" --heap --cpu -o "$E2E_TMP/p.pb.gz" -- sleep 30
	grep -q "cannot write $E2E_TMP/p.cpu.pb.gz (-o $E2E_TMP/p.pb.gz): it is a directory" "$err" ||
		fail "the mode's file not named: $(cat "$err")"
	# An event trace's one file, and -p: refused before attaching as well.
	sleep 30 &
	pid=$!
	refused_run "-f chrome -p PID -o /nonexistent/t.json" "$err" --cpu -f chrome -p "$pid" -o /nonexistent/t.json
	kill "$pid"
	[ -z "$(find "$E2E_TMP" -mindepth 1 -maxdepth 1 -name '.*')" ] ||
		fail "temporary file left behind: $(ls -A "$E2E_TMP")"
}

# -o at a character device or a pipe writes into it, as a shell's redirection would: the node
# stays (a file renamed over it, as root, once replaced the machine's /dev/null with a 0600
# file), nothing is made beside it, and a pipe's reader gets the whole profile.  A disk or a
# socket is refused before the run.  The device is a /dev/null of the test's own (mknod).
t_cli_output_into_a_device_or_a_pipe() {
	local err=$E2E_TMP/err dev=$E2E_TMP/null fifo=$E2E_TMP/pipe got=$E2E_TMP/got reader rc
	mknod "$dev" c 1 3 || fail "mknod"
	"$PROF" --cpu --top 0 -o "$dev" -- true 2>"$err" || fail "exit status $?: $(cat "$err")"
	expect_eq "the node after -o $dev" "character special file 1,3" "$(stat -c '%F %t,%T' "$dev")"
	mkfifo "$fifo" || fail "mkfifo"
	cat "$fifo" >"$got" &
	reader=$!
	"$PROF" --cpu --top 0 -o "$fifo" -- "$CLI_CT" 1 2>"$err"
	rc=$?
	[ "$rc" -eq 0 ] || { kill "$reader"; fail "exit status $rc: $(cat "$err")"; }
	# a pipe replaced: its reader waits for a writer that never comes
	[ "$(stat -c '%F' "$fifo")" = fifo ] || { kill "$reader"; fail "-o $fifo replaced the pipe"; }
	wait "$reader" || fail "the pipe's reader failed"
	go tool pprof -symbolize=none -raw "$got" >"$got.raw" 2>&1 || fail "what the pipe carried is no profile: $(head -3 "$got.raw")"
	grep -q "cpu_target" "$got.raw" || fail "the profile through the pipe has no cpu_target"
	expect_eq "files beside them (no temporary file, no .old)" "err got got.raw null pipe" \
		"$(find "$E2E_TMP" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$E2E_TMP/sock" ||
		fail "cannot bind a socket"
	refused_run "-o a socket" "$err" --cpu -o "$E2E_TMP/sock" -- sleep 30
	grep -q "it is a disk or a socket" "$err" || fail "no reason given: $(cat "$err")"
}

t_cli_previous_output_kept_as_old() {
	local f=$E2E_TMP/k.pb.gz err=$E2E_TMP/err
	"$PROF" --cpu --top 0 -o "$f" -- true 2>"$err" || fail "first run: exit status $?: $(cat "$err")"
	[ -e "$f.old" ] && fail "$f.old after the first run"
	grep -q "kept the previous" "$err" && fail "a .old said with nothing replaced: $(cat "$err")"
	cp "$f" "$E2E_TMP/first"
	"$PROF" --cpu --top 0 -o "$f" -- true 2>"$err" || fail "second run: exit status $?: $(cat "$err")"
	cmp "$f.old" "$E2E_TMP/first" || fail "$f.old is not the previous profile"
	go tool pprof -symbolize=none -raw "$f" >/dev/null 2>&1 || fail "the new profile is not readable"
	cat "$err"
	expect_eq "lines saying so" 1 "$(grep -c "^bpftrace-prof: warning: kept the previous $f as $f.old$" "$err")"
	# -q: kept all the same, not said.
	cp "$f" "$E2E_TMP/second"
	"$PROF" -q --cpu --top 0 -o "$f" -- true 2>"$err" || fail "-q run: exit status $?"
	cmp "$f.old" "$E2E_TMP/second" || fail "-q: $f.old is not the previous profile"
	expect_eq "stderr with -q" "" "$(cat "$err")"
	# A symbolic link at FILE.old is replaced, never followed.
	echo precious >"$E2E_TMP/victim"
	rm "$f.old"
	ln -s "$E2E_TMP/victim" "$f.old"
	"$PROF" --cpu --top 0 -o "$f" -- true 2>"$err" || fail "link run: exit status $?"
	expect_eq "the link's target" precious "$(cat "$E2E_TMP/victim")"
	[ -L "$f.old" ] && fail "$f.old is still the link"
	go tool pprof -symbolize=none -raw "$f.old" >/dev/null 2>&1 || fail "$f.old is not the previous profile"
	# Several modes: each file its own .old.
	"$PROF" --cpu --offcpu --top 0 -o "$E2E_TMP/m.pb.gz" -- true 2>"$err" || fail "exit status $?"
	"$PROF" --cpu --offcpu --top 0 -o "$E2E_TMP/m.pb.gz" -- true 2>"$err" || fail "exit status $?"
	[ -s "$E2E_TMP/m.offcpu.pb.gz.old" ] || fail "no m.offcpu.pb.gz.old: $(ls "$E2E_TMP")"
	[ -s "$E2E_TMP/m.cpu.pb.gz.old" ] || fail "no m.cpu.pb.gz.old: $(ls "$E2E_TMP")"
	[ -z "$(find "$E2E_TMP" -mindepth 1 -maxdepth 1 -name '.*')" ] ||
		fail "temporary file left behind: $(ls -A "$E2E_TMP")"
}

t_cli_format_from_extension() {
	local d=$E2E_TMP err=$E2E_TMP/err rc
	"$PROF" --cpu --top 0 -o "$d/g.svg" -- "$CLI_CT" 1 >/dev/null 2>"$err" || fail "svg: exit status $?: $(cat "$err")"
	expect_eq "g.svg starts as" "<?xml" "$(head -c 5 "$d/g.svg")"
	grep -q 'spin_other' "$d/g.svg" || fail "g.svg has no spin_other"
	"$PROF" --cpu --top 0 -o "$d/s.folded" -- "$CLI_CT" 1 >/dev/null 2>"$err" || fail "folded: exit status $?"
	grep -Eq '^[^ ]+;.*;spin_other;.* [0-9]+$' "$d/s.folded" || fail "s.folded: $(head -c 200 "$d/s.folded" | od -c | head -3)"
	"$PROF" --cpu --top 50 -o "$d/r.txt" -- "$CLI_CT" 1 >/dev/null 2>"$err" || fail "text: exit status $?"
	grep -q '^cpu profile: 1 process' "$d/r.txt" || fail "r.txt: $(head -c 200 "$d/r.txt" | od -c | head -3)"
	grep -q 'spin_other' "$d/r.txt" || fail "r.txt has no spin_other"
	"$PROF" --cpu --top 0 -o "$d/t.json" -- "$CLI_CT" 1 >/dev/null 2>"$err" || fail "json: exit status $?"
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not d["traceEvents"])' "$d/t.json" ||
		fail "t.json is not a Trace Event JSON: $(head -c 200 "$d/t.json" | od -c | head -3)"
	# -f that the extension contradicts: refused before the run.
	"$PROF" --cpu -f pprof -o "$d/x.svg" -- "$CLI_CT" 30 2>"$err"
	rc=$?
	expect_eq "-f pprof -o x.svg: exit status" 2 "$rc"
	expect_eq "-f pprof -o x.svg: lines on stderr" 1 "$(wc -l <"$err")"
	grep -q "x.svg: a .svg name holds svg, not -f pprof" "$err" || fail "$(cat "$err")"
	[ -e "$d/x.svg" ] && fail "x.svg written"
	return 0
}

# cmd_status WANT CMD…: bpftrace-prof -- CMD exits WANT, with the profile written (--cpu: a
# heap attach takes seconds, and the mode does not matter here).
cmd_status() {
	local want=$1 f=$E2E_TMP/st.pb.gz rc
	shift
	rm -f "$f"
	"$PROF" --cpu --top 0 -o "$f" -- "$@" 2>"$E2E_TMP/st.err"
	rc=$?
	expect_eq "exit status of -- $*" "$want" "$rc"
	go tool pprof -symbolize=none -raw "$f" >/dev/null 2>&1 || fail "-- $*: no readable profile: $(cat "$E2E_TMP/st.err")"
}

t_cli_exit_status_of_cmd() {
	local pid rc d=$E2E_TMP/gone
	cmd_status 0 true
	cmd_status 1 /bin/false
	cmd_status 7 sh -c 'exit 7'
	# shellcheck disable=SC2016 # $$ is CMD's shell's
	cmd_status 137 sh -c 'kill -9 $$'
	# We end it (-d): SIGTERM is ours, not its verdict.
	"$PROF" --cpu --top 0 -d 1 -o "$E2E_TMP/d.pb.gz" -- sh -c 'sleep 30; exit 3' 2>/dev/null
	expect_eq "exit status when -d ends CMD" 0 "$?"
	# Ctrl-C reaches CMD and us alike (one process group): the run was stopped, not CMD's
	# verdict, however the race between the two goes.
	setsid "$PROF" -v --cpu --top 0 -o "$E2E_TMP/c.pb.gz" -- sh -c 'sleep 30; exit 5' 2>"$E2E_TMP/c.err" &
	pid=$!
	wait_for_line "$E2E_TMP/c.err" "^bpftrace-prof: profiling " 20 || fail "profiler did not start: $(cat "$E2E_TMP/c.err")"
	kill -INT -- "-$pid"
	wait "$pid"
	expect_eq "exit status after a Ctrl-C to the group" 0 "$?"
	go tool pprof -symbolize=none -raw "$E2E_TMP/c.pb.gz" >/dev/null 2>&1 || fail "no profile after Ctrl-C"
	# Our own failure first: the directory of -o goes while CMD runs, CMD exits 7.
	mkdir "$d"
	"$PROF" --cpu --top 0 -o "$d/p.pb.gz" -- sh -c "rm -r '$d'; exit 7" 2>"$E2E_TMP/err"
	rc=$?
	cat "$E2E_TMP/err"
	expect_eq "exit status when the profile cannot be written" 1 "$rc"
	# -p: the process's own status is not ours.  It exits once we profile it (a line on a fifo),
	# not after a fixed sleep.
	mkfifo "$E2E_TMP/go"
	# shellcheck disable=SC2016 # $1 is the inner shell's
	sh -c 'read -r _ <"$1"; exit 3' sh "$E2E_TMP/go" &
	pid=$!
	start_profiler "$E2E_TMP/err" --cpu --top 0 -p "$pid" -o "$E2E_TMP/p.pb.gz"
	echo go >"$E2E_TMP/go"
	wait "$PROF_PID"
	expect_eq "exit status with -p" 0 "$?"
	wait "$pid"
	expect_eq "the process's own status" 3 "$?"
}

t_cli_subcommand_help() {
	local cmd out=$E2E_TMP/help
	for cmd in dump report; do
		"$PROF" "$cmd" --help >"$out" || fail "$cmd --help: exit status $?"
		expect_eq "$cmd --help: first line" "Usage: bpftrace-prof $cmd" "$(head -1 "$out" | cut -d' ' -f1-3)"
		grep -q -- '--heap' "$out" && fail "$cmd --help prints the profiler's options: $(cat "$out")"
	done
	return 0
}

# A kernel thread that wakes often: the RCU grace-period thread.
rcu_kthread() {
	local d
	for d in /proc/[0-9]*; do
		case $(cat "$d/comm" 2>/dev/null) in
		rcu_preempt | rcu_sched)
			echo "${d#/proc/}"
			return
			;;
		esac
	done
}

t_cli_kernel_thread() {
	local err=$E2E_TMP/err rc k f=$E2E_TMP/k.pb.gz i
	# kthreadd: no user memory for --heap (the default) or --calls.
	for mode in --heap --calls; do
		"$PROF" "$mode" -p 2 -o "$E2E_TMP/x.pb.gz" 2>"$err"
		rc=$?
		cat "$err"
		expect_eq "$mode -p 2: exit status" 2 "$rc"
		expect_eq "$mode -p 2: lines on stderr" 1 "$(wc -l <"$err")"
		grep -q "^bpftrace-prof: 2 is a kernel thread: --heap and --calls need user memory" "$err" ||
			fail "$mode -p 2: $(cat "$err")"
	done
	# --offcpu: its kernel stacks, said once.
	k=$(rcu_kthread)
	[ -n "$k" ] || fail "no rcu_preempt or rcu_sched kernel thread"
	"$PROF" --offcpu -p "$k" -d 2 --top 0 -o "$f" 2>"$err" &
	# Grace periods (a network namespace's end waits for them) wake it while it is watched.
	for ((i = 0; i < 20; i++)); do unshare -n true; sleep 0.1; done
	wait $!
	rc=$?
	cat "$err"
	expect_eq "--offcpu -p $k: exit status" 0 "$rc"
	expect_eq "notice" 1 "$(grep -c "^bpftrace-prof: warning: $k is a kernel thread: kernel stacks only$" "$err")"
	[ "$(pprof_cum "$f" events kthread)" -gt 0 ] || fail "no kernel stack through kthread in $f"
}

# The man page (docs/man/bpftrace-prof.8): groff renders it without a warning, every long option
# the three --help texts list is in it, and it carries the exit-status rule.
t_cli_man_page() {
	local man=docs/man/bpftrace-prof.8 o warn help=$E2E_TMP/help
	[ -f "$man" ] || fail "no $man"
	warn=$(groff -man -Tutf8 -ww -z "$man" 2>&1) || fail "groff failed: $warn"
	[ -z "$warn" ] || fail "groff warns: $warn"
	{
		"$PROF" --help
		"$PROF" dump --help
		"$PROF" report --help
	} >"$help" 2>&1
	grep -oE -- '--[a-z][a-z-]+' "$help" | sort -u >"$help.opts"
	[ -s "$help.opts" ] || fail "no options in --help"
	while read -r o; do
		# roff spells a hyphen \-
		grep -qF -- "${o//-/\\-}" "$man" || fail "$o (in --help) not in $man"
	done <"$help.opts"
	man -l "$man" 2>/dev/null | col -b >"$E2E_TMP/man.txt"
	grep -q 'EXIT STATUS' "$E2E_TMP/man.txt" || fail "no EXIT STATUS section"
	grep -q '128 +' "$E2E_TMP/man.txt" || fail "the exit-status rule lacks CMD's 128 + N"
}

# complete WORD…: what the installed completion script offers for the last word (bash -c, as a
# shell that sourced it would: COMP_WORDS and COMP_CWORD set, _bpftrace_prof called).
complete_words() {
	local script=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner bash
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bpftrace_prof
		printf "%s\n" "${COMPREPLY[@]}"' complete "$script" "$@"
}

# make install (issue 26): PREFIX (default /usr/local) and DESTDIR honoured; the binary in sbin
# (root only, as Debian's bcc tools), the man page, and a bash completion that completes.
t_cli_make_install() {
	local d=$E2E_TMP/stage p sbin man comp got lib
	make -s --no-print-directory install DESTDIR="$d" >"$E2E_TMP/install.log" 2>&1 ||
		fail "make install: $(cat "$E2E_TMP/install.log")"
	sbin=$d/usr/local/sbin/bpftrace-prof
	man=$d/usr/local/share/man/man8/bpftrace-prof.8
	comp=$d/usr/local/share/bash-completion/completions/bpftrace-prof
	lib=$d/usr/local/lib/bpftrace-prof/libbpftrace-prof-sampler.so
	for p in "$sbin" "$man" "$comp" "$lib"; do
		[ -f "$p" ] || fail "make install left no $p: $(find "$d" -type f)"
	done
	expect_eq "installed files" 4 "$(find "$d" -type f | wc -l)"
	# The sampler where the installed binary looks for it (../lib/bpftrace-prof/), 0644.
	cmp -s "$lib" build/libbpftrace-prof-sampler.so || fail "$lib is not the built sampler"
	expect_eq "sampler mode" 644 "$(stat -c %a "$lib")"
	cmp -s "$sbin" "$PROF" || fail "$sbin is not $PROF"
	expect_eq "binary mode" 755 "$(stat -c %a "$sbin")"
	cmp -s "$man" docs/man/bpftrace-prof.8 || fail "$man is not docs/man/bpftrace-prof.8"
	expect_eq "man page mode" 644 "$(stat -c %a "$man")"
	"$sbin" --version >/dev/null || fail "the installed binary does not run"
	"$sbin" -v --heap --sample-bytes 4096 -o "$E2E_TMP/inst.pb.gz" -- true 2>"$E2E_TMP/inst.log" ||
		fail "the installed binary's sampled run: $(tail -3 "$E2E_TMP/inst.log")"
	grep -qF "preloading $lib into true" "$E2E_TMP/inst.log" ||
		fail "the installed binary does not preload the installed sampler: $(grep -i sampler "$E2E_TMP/inst.log")"
	make -s --no-print-directory install DESTDIR="$d" PREFIX=/usr >>"$E2E_TMP/install.log" 2>&1 ||
		fail "make install PREFIX=/usr: $(cat "$E2E_TMP/install.log")"
	[ -f "$d/usr/sbin/bpftrace-prof" ] || fail "PREFIX=/usr: no $d/usr/sbin/bpftrace-prof"

	got=$(complete_words "$comp" bpftrace-prof --c)
	echo "--c<TAB>: ${got//$'\n'/ }"
	grep -qx -- --cpu <<<"$got" || fail "--c<TAB> does not offer --cpu: $got"
	grep -qx -- --heap <<<"$got" && fail "--c<TAB> offers --heap"
	got=$(complete_words "$comp" bpftrace-prof --cpu -f '')
	echo "-f <TAB>: ${got//$'\n'/ }"
	for p in pprof folded text svg chrome perfetto firefox codetracer memtrace; do
		grep -qx "$p" <<<"$got" || fail "-f <TAB> does not offer $p: $got"
	done
	expect_eq "-f s<TAB>" svg "$(complete_words "$comp" bpftrace-prof -f s)"
	got=$(complete_words "$comp" bpftrace-prof report x -f '')
	expect_eq "report -f <TAB>" "pprof folded text" "${got//$'\n'/ }"
	sleep 30 &
	p=$!
	complete_words "$comp" bpftrace-prof -p "${p:0:1}" | grep -qx "$p" || fail "-p <TAB> does not offer pid $p"
	kill "$p"
	got=$(complete_words "$comp" bpftrace-prof '')
	expect_eq "<TAB> after the command" "dump report" "${got//$'\n'/ }"
}

# The README is the page a user reads first (issue 26): at most 25 KB, and every document it
# links to (docs/*.md, the picture) exists.
t_cli_readme_small_docs_linked() {
	local size link n=0
	size=$(wc -c <README.md)
	expect_range "README.md bytes" 1 25000 "$size"
	while read -r link; do
		link=${link%%#*}
		[ -e "$link" ] || fail "README links to $link, which does not exist"
		n=$((n + 1))
	done < <(grep -oE '\]\((docs/[^)]+)\)' README.md | sed -E 's/^\]\(//; s/\)$//' | sort -u)
	for link in docs/*.md; do
		grep -qF "]($link" README.md || fail "README does not link $link"
	done
	[ "$n" -ge 6 ] || fail "README links $n documents in docs/"
	echo "ok: README.md $size bytes, $n links into docs/ exist"
}

# The man page's ENVIRONMENT names every variable the code reads (getenv, and the push
# credentials taken by PUSH_ENV_PREFIX + name), and FILES names the default output and the spool.
t_cli_man_page_environment_files() {
	local man=docs/man/bpftrace-prof.8 env prefix v n=0
	man -l "$man" 2>/dev/null | col -b >"$E2E_TMP/man.txt"
	env=$(sed -n '/^ENVIRONMENT/,/^[A-Z][A-Z ]*$/p' "$E2E_TMP/man.txt" | sed '1d;$d' | tr -d '\n\t‐ ')
	[ -n "$env" ] || fail "no ENVIRONMENT section in $man"
	prefix=$(grep -rhoE '#define PUSH_ENV_PREFIX "[A-Z_]+"' user | grep -oE '"[A-Z_]+"' | tr -d '"')
	[ -n "$prefix" ] || fail "no PUSH_ENV_PREFIX in user/"
	for v in $(grep -rhoE 'getenv\("[A-Za-z_]+"\)' user | grep -oE '"[^"]+"' | tr -d '"') \
		$(grep -rhoE 'PUSH_ENV_PREFIX "[A-Z]+"' user | grep -oE '"[A-Z]+"' | tr -d '"' | sed "s/^/$prefix/"); do
		[[ $env == *"$v"* ]] || fail "$v is read by the code but not in $man's ENVIRONMENT"
		n=$((n + 1))
	done
	[ "$n" -ge 7 ] || fail "only $n environment variables found in user/"
	echo "ok: $n environment variables in ENVIRONMENT"
	sed -n '/^FILES/,/^[A-Z][A-Z ]*$/p' "$E2E_TMP/man.txt" >"$E2E_TMP/files.txt"
	for v in bpftrace-prof.pb.gz FILE.old spool; do
		grep -qF -- "$v" "$E2E_TMP/files.txt" || fail "FILES lacks $v"
	done
}
