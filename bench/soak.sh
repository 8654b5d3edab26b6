#!/bin/bash
# `make soak` (not in CI): does bpftrace-prof stay bounded over a long continuous run?
#
# A cgroup (a container when Docker runs here: SOAK_DOCKER=1) where a shell loop starts
# SOAK_RATE short processes a second (build/targets/short_lived: 10 allocations, exit), while
#   bpftrace-prof -a --cpu --heap --interval 5 --output-dir DIR --retain 12
# runs for SOAK_SECONDS (default 600).  Every 5 s: the profiler's RSS (VmRSS), the kernel memory
# of its BPF maps (bpftool: memlock of every map its fds hold), its open fds.  After the
# warm-up (the first SOAK_WARMUP seconds, default 300: caches of the host's files fill first) a least-squares line through each series
# gives its slope; the verdict is "flat" when RSS grows less than 1 MiB per 10 minutes.
# Writes bench/results/soak-<UTC date>.md and prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

SECONDS_TOTAL=${SOAK_SECONDS:-600}
WARMUP=${SOAK_WARMUP:-300}
RATE=${SOAK_RATE:-20}
OUT=bench/results/soak-$(date -u +%Y%m%dT%H%M%SZ).md
TMP=$(mktemp -d /tmp/bpftrace-prof-soak.XXXXXX)
CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
CG=$CG_ROOT/bpftrace-prof-soak.$$
PROF=./bpftrace-prof

[ "$(id -u)" = 0 ] || { echo "soak: needs root"; exit 1; }
make --no-print-directory bpftrace-prof build/targets/short_lived >/dev/null || exit 1
mkdir "$CG" || exit 1

cleanup() {
	[ -n "${LOOP:-}" ] && kill "$LOOP" 2>/dev/null
	[ -n "${PROFPID:-}" ] && kill -INT "$PROFPID" 2>/dev/null && wait "$PROFPID"
	sleep 0.5
	rmdir "$CG" 2>/dev/null
}
trap cleanup EXIT

# The workload: RATE short processes a second inside the cgroup, for as long as we run.
sh -c 'echo $$ >"$1/cgroup.procs"; while :; do
	i=0; while [ $i -lt "$2" ]; do "$3" & i=$((i + 1)); done; wait; sleep 1
done' sh "$CG" "$RATE" "$PWD/build/targets/short_lived" &
LOOP=$!

"$PROF" -a --cpu --heap --interval 5 --output-dir "$TMP/out" --retain 12 -d "$SECONDS_TOTAL" \
	2>"$TMP/prof.log" >/dev/null &
PROFPID=$!

map_bytes() { # PID: memlock of every BPF map its fds hold
	bpftool -j map show 2>/dev/null | python3 -c '
import json, sys, os
pid = sys.argv[1]
ids = set()
for fd in os.listdir("/proc/%s/fdinfo" % pid):
    try:
        for line in open("/proc/%s/fdinfo/%s" % (pid, fd)):
            if line.startswith("map_id:"):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
print(sum(m.get("bytes_memlock", 0) for m in json.load(sys.stdin) if m["id"] in ids))' "$1"
}

echo "t_s rss_kib map_bytes fds" >"$TMP/series"
t0=$(date +%s)
while kill -0 "$PROFPID" 2>/dev/null; do
	t=$(($(date +%s) - t0))
	rss=$(awk '/^VmRSS/ { print $2 }' /proc/"$PROFPID"/status 2>/dev/null)
	[ -n "$rss" ] || break
	fds=$(find /proc/"$PROFPID"/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	echo "$t $rss $(map_bytes "$PROFPID") $fds" >>"$TMP/series"
	sleep 5
done
wait "$PROFPID"
status=$?
PROFPID=

python3 - "$TMP/series" "$WARMUP" "$SECONDS_TOTAL" "$RATE" "$status" "$TMP/prof.log" >"$OUT" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
warm, total, rate, status, log = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rows = [[float(x) for x in r] for r in rows if len(r) == 4]
# Samples after the run's end (-d) catch the profiler writing its last profiles: left out.
after = [r for r in rows if warm <= r[0] < int(total)]
def slope(col):
    xs = [r[0] for r in after]; ys = [r[col] for r in after]
    n = len(xs)
    if n < 3:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0
rss_s, map_s, fd_s = slope(1), slope(2), slope(3)
print("# Soak: -a --cpu --heap --interval 5 for %s s, %s short processes a second\n" % (total, rate))
print("Exit status %s.  Samples every 5 s; slopes by least squares after the first %d s.\n" % (status, warm))
print("| series | first after warm-up | last | slope per 10 min |")
print("|---|---|---|---|")
if after:
    print("| profiler RSS (KiB) | %d | %d | %+.0f KiB |" % (after[0][1], after[-1][1], rss_s * 600))
    print("| BPF map memory (bytes) | %d | %d | %+.0f B |" % (after[0][2], after[-1][2], map_s * 600))
    print("| open fds | %d | %d | %+.1f |" % (after[0][3], after[-1][3], fd_s * 600))
verdict = "flat" if after and rss_s * 600 < 1024 else "GROWING"
print("\nRSS verdict: **%s** (flat = under 1 MiB per 10 min)\n" % verdict)
print("Drops and counters at the end (from the profiler's log):\n")
print("```")
for line in open(log):
    if "events:" in line or "dropped" in line or "push" in line:
        print(line.rstrip())
print("```")
print("\nSeries (t_s rss_kib map_bytes fds):\n")
print("```")
for r in rows:
    print("%d %d %d %d" % tuple(r))
print("```")
PY
cat "$OUT"
rm -rf "$TMP"
