# Files that other users and containers control, read by us as root: perf maps that are FIFOs,
# links to /dev/zero or another user's; a process in its own mount namespace that swaps its
# mapped library (and its debug link) for a symlink to a host file after mapping it.
# Every profiler run is under `timeout`: a hang is a failure, not a stuck suite.

JT=build/targets/jit_target

# Start jit_target; sets JIT_PID, JIT_ADDR, JIT_SIZE.
start_jit() {
	local out=$E2E_TMP/jit.out
	"$JT" >"$out" 2>&1 &
	JIT_PID=$!
	wait_for_line "$out" READY 10 || fail "jit_target never became ready"
	read -r _ JIT_PID JIT_ADDR JIT_SIZE <<<"$(grep READY "$out")"
}

# Profile the JIT target's CPU for 2 s; sets RC.  A hang (the bug) ends at 60 s as a failure.
profile_jit() { # PPROF STDERR
	timeout -k 5 60 "$PROF" --cpu -p "$JIT_PID" -d 2 --top 0 -o "$1" 2>"$2"
	RC=$?
	{ [ "$RC" -ne 124 ] && [ "$RC" -ne 137 ]; } || fail "profiler hung on the perf map (killed by timeout)"
}

t_hostile_perfmap_fifo_is_skipped() {
	local f=$E2E_TMP/cpu.pb.gz map
	start_jit
	map=/tmp/perf-$JIT_PID.map
	rm -f "$map"
	mkfifo "$map"
	chown 65534:65534 "$map" # any local user can create it
	profile_jit "$f" "$E2E_TMP/err"
	rm -f "$map"
	kill "$JIT_PID"
	expect_eq "exit status" 0 "$RC"
	grep -q "not reading perf map $map: not a regular file" "$E2E_TMP/err" ||
		fail "no log line for the FIFO: $(cat "$E2E_TMP/err")"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q '^Comment: perfmaps_refused=[1-9]' ||
		fail "refused perf map not counted"
}

t_hostile_perfmap_symlink_to_dev_zero_is_skipped() {
	local f=$E2E_TMP/cpu.pb.gz map rss
	start_jit
	map=/tmp/perf-$JIT_PID.map
	rm -f "$map"
	ln -s /dev/zero "$map"
	/usr/bin/time -f '%M' -o "$E2E_TMP/rss" timeout -k 5 60 "$PROF" --cpu -p "$JIT_PID" -d 2 --top 0 \
		-o "$f" 2>"$E2E_TMP/err"
	RC=$?
	rm -f "$map"
	kill "$JIT_PID"
	{ [ "$RC" -ne 124 ] && [ "$RC" -ne 137 ]; } || fail "profiler hung reading /dev/zero"
	expect_eq "exit status" 0 "$RC"
	grep -q "not reading perf map $map: a symbolic link" "$E2E_TMP/err" ||
		fail "no log line for the symlink: $(cat "$E2E_TMP/err")"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q '^Comment: perfmaps_refused=[1-9]' ||
		fail "refused perf map not counted"
	# Peak RSS in KiB: reading /dev/zero grew without bound (24 GB) before.
	rss=$(tail -1 "$E2E_TMP/rss")
	expect_range "peak RSS KiB" 1 1048576 "$rss"
}

# perf's rule: a perf map is used only if it is the process owner's or root's.
t_hostile_perfmap_owner_rule() {
	local f=$E2E_TMP/cpu.pb.gz map
	start_jit
	map=/tmp/perf-$JIT_PID.map
	rm -f "$map"
	printf '%s %s jit_hot_loop\n' "$JIT_ADDR" "$JIT_SIZE" >"$map"

	# Root's (the process owner's) map names the JIT code.
	profile_jit "$f" "$E2E_TMP/err"
	expect_eq "exit status (own map)" 0 "$RC"
	[ "$(pprof_flat "$f" samples jit_hot_loop)" -gt 0 ] || fail "JIT code not named by a valid perf map"

	# The same map owned by another user is refused, and says so.
	chown 65534:65534 "$map"
	profile_jit "$f" "$E2E_TMP/err2"
	rm -f "$map"
	kill "$JIT_PID"
	expect_eq "exit status (other's map)" 0 "$RC"
	grep -q "not reading perf map $map: owned by another user" "$E2E_TMP/err2" ||
		fail "no log line for another user's map: $(cat "$E2E_TMP/err2")"
	expect_eq "jit_hot_loop samples from another user's map" 0 "$(pprof_flat "$f" samples jit_hot_loop)"
}

# The library a process in its own mount namespace has mapped, and the debug file its
# .gnu_debuglink names, become symlinks to a path that is a host-only file: the namespace sees a
# tmpfs there.  The host file is a FIFO with a writer waiting: if anything opens it, the writer
# wakes and leaves a mark.  Symbols and probes must still come from the mapped library itself.
t_hostile_namespace_swapped_library() {
	local lib=$E2E_TMP/lib host=$E2E_TMP/host f=$E2E_TMP/heap.pb.gz pid detector i
	mkdir -p "$lib" "$host"
	cat >"$E2E_TMP/victim.c" <<-'EOF'
		#include <pthread.h>
		#include <stdlib.h>
		#include <unistd.h>
		__attribute__((noinline)) void *victim_alloc(void) { return malloc(4096); }
		static void *loop(void *arg) {
			for (;;) { free(victim_alloc()); usleep(2000); }
			return arg;
		}
		__attribute__((constructor)) static void start(void) {
			pthread_t t;
			pthread_create(&t, NULL, loop, NULL);
		}
	EOF
	cc -O1 -g -fPIC -shared -pthread -o "$lib/libvictim.so" "$E2E_TMP/victim.c" || fail "cc"
	objcopy --only-keep-debug "$lib/libvictim.so" "$lib/victim.debug" || fail "objcopy"
	strip --strip-all "$lib/libvictim.so"
	(cd "$lib" && objcopy --add-gnu-debuglink=victim.debug libvictim.so) || fail "debuglink"
	rm -f "$lib/victim.debug"
	mkfifo "$host/secret"

	unshare -m --propagation private sh -c \
		"mount -t tmpfs none '$host' && LD_PRELOAD='$lib/libvictim.so' exec sleep 1000" &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q libvictim "/proc/$pid/maps" 2>/dev/null && break
		sleep 0.05
	done
	grep -q libvictim "/proc/$pid/maps" || fail "victim library never mapped"
	# After mapping: the library path and its debug link now lead to the host-only file.
	rm -f "$lib/libvictim.so"
	ln -s "$host/secret" "$lib/libvictim.so"
	ln -s "$host/secret" "$lib/victim.debug"
	(
		exec 3>"$host/secret" # blocks until someone opens the FIFO for reading
		echo opened >"$E2E_TMP/opened"
	) &
	detector=$!

	timeout -k 5 60 "$PROF" --heap -p "$pid" -d 2 --top 0 -o "$f" 2>"$E2E_TMP/err"
	RC=$?
	kill "$pid" "$detector" 2>/dev/null
	{ [ "$RC" -ne 124 ] && [ "$RC" -ne 137 ]; } || fail "profiler hung on the host FIFO"
	expect_eq "exit status" 0 "$RC"
	[ -e "$E2E_TMP/opened" ] && fail "the profiler opened a host file through the target's symlink"
	# The probes went on the mapped library: its allocations are seen and named from its own
	# .dynsym (read through map_files although the path is gone).
	[ "$(pprof_flat "$f" alloc_objects victim_alloc)" -gt 0 ] ||
		fail "no allocations attributed to victim_alloc: $(cat "$E2E_TMP/err")"
	echo "ok: no host file opened; victim_alloc seen"
}

# A target whose /proc/PID/maps passes 16 MiB (tests/targets/many_maps.c: 5,000 mappings of a
# file whose path is about 3,900 bytes, 19.5 MB of text): every read of it stops at the cap and
# is counted (maps_reads_cut); the profile is still written, the target's own function (in the
# first lines) named.  Each read used to take it all.
t_hostile_maps_capped() {
	local f=$E2E_TMP/mm.pb.gz n
	mkdir -p "$E2E_TMP/mm"
	start_waiting_target "$E2E_TMP/mm.out" build/targets/many_maps "$E2E_TMP/mm" 5000 3
	expect_range "maps text of the target (bytes)" $((17 << 20)) $((64 << 20)) "$(wc -c <"/proc/$TARGET_PID/maps")"
	start_profiler "$E2E_TMP/prof.log" --cpu -p "$TARGET_PID" -d 3 --top 0 -o "$f"
	echo go >&"$TARGET_IN"
	wait "$PROF_PID" || { cat "$E2E_TMP/prof.log"; fail "profiler exit status $?"; }
	n=$(pprof_counter_value "$f" maps_reads_cut)
	expect_range "maps_reads_cut" 1 1000 "$n"
	[ "$(pprof_flat "$f" samples spin_here)" -gt 0 ] || fail "no samples named spin_here"
	echo "ok: $n reads cut, spin_here sampled"
}
