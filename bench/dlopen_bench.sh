#!/bin/bash
# `make bench`, section dlopen (also alone: sudo bench/dlopen_bench.sh): what the dlopen holds
# add to a program that loads libraries.  build/targets/dlopen_nofp --loop 1 opens
# DLOPEN_BENCH_LIBS distinct libraries (tests/targets/lib/dlo_lib.c, built here without frame
# pointers), calls each (300 allocations), and closes them; it times that itself (NS), so the
# profiler's start and the program's exec are outside the clock.  Variants, alternated (the
# order rotated every round), DLOPEN_BENCH_ROUNDS of each:
#   untraced;  --heap --unwind fp (the same probes, no tables, no holds);
#   --heap (default: every dlopen held until its new table is in, at most 50 ms).
# At most 31 libraries are held (32 holds a process, its startup is one).
#
# Environment: BENCH_ONLY (runs when unset or when it lists "dlopen"), DLOPEN_BENCH_ROUNDS (5),
# DLOPEN_BENCH_LIBS (30).  Writes bench/results/dlopen.md (runs: dlopen-runs.tsv), prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BENCH_ONLY:-}" ] && [[ ",$BENCH_ONLY," != *",dlopen,"* ]]; then
	exit 0
fi
ROUNDS=${DLOPEN_BENCH_ROUNDS:-5}
LIBS=${DLOPEN_BENCH_LIBS:-30}
PROF=./bpftrace-prof
RES=bench/results
TMP=$(mktemp -d /tmp/bpftrace-prof-dlopenbench.XXXXXX)
RUNS=$TMP/runs.tsv
NAME=dlopen_bench
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_prepare
[ -x build/targets/dlopen_nofp ] || die "build/targets/dlopen_nofp is missing: make all"
printf 'variant\tround\tdlopens\tns\tdlopen_holds\tdlopen_hold_timeouts\tunwind_no_table_yet\n' >"$RUNS"

# One run of VARIANT (untraced | fp | holds) in ROUND: fresh copies of the libraries (new
# files: their tables are built again, as a program's first load of them).
run() { # VARIANT ROUND
	local v=$1 r=$2 d=$TMP/$1.$2 libs=() i ns
	mkdir -p "$d"
	for ((i = 0; i < LIBS; i++)); do
		gcc -shared -fPIC -g -O2 -fomit-frame-pointer -fno-optimize-sibling-calls \
			-DDLO_ID="$((r * 1000 + i))" tests/targets/lib/dlo_lib.c -o "$d/libdlo$i.so" ||
			die "building the libraries failed"
		libs+=("$d/libdlo$i.so")
	done
	case $v in
	untraced) build/targets/dlopen_nofp --loop 1 "${libs[@]}" >"$d/out" ;;
	fp) "$PROF" --heap --unwind fp -o "$d/p.pb.gz" --top 0 -- build/targets/dlopen_nofp --loop 1 \
		"${libs[@]}" >"$d/out" 2>"$d/log" ;;
	holds) "$PROF" --heap -o "$d/p.pb.gz" --top 0 -- build/targets/dlopen_nofp --loop 1 \
		"${libs[@]}" >"$d/out" 2>"$d/log" ;;
	esac
	ns=$(sed -n 's/^NS //p' "$d/out")
	[ -n "$ns" ] || die "$v: no time from the target: $(tail -3 "$d/log" 2>/dev/null)"
	local holds=0 timeouts=0 yet=0
	if [ "$v" != untraced ]; then
		holds=$(counter "$d/p.pb.gz" dlopen_holds)
		timeouts=$(counter "$d/p.pb.gz" dlopen_hold_timeouts)
		yet=$(counter "$d/p.pb.gz" unwind_no_table_yet)
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$r" "$LIBS" "$ns" "$holds" "$timeouts" "$yet" >>"$RUNS"
}

variants=(untraced fp holds)
for ((r = 0; r < ROUNDS; r++)); do
	say "round $((r + 1))/$ROUNDS"
	for ((k = 0; k < ${#variants[@]}; k++)); do
		run "${variants[(k + r) % ${#variants[@]}]}" "$r"
	done
done

mkdir -p "$RES"
cp "$RUNS" "$RES/dlopen-runs.tsv"
python3 - "$RUNS" "$REV" "$LIBS" "$ROUNDS" >"$RES/dlopen.md" <<'PY'
import csv, statistics, sys, platform, subprocess
runs, rev, libs, rounds = sys.argv[1:5]
rows = list(csv.DictReader(open(runs), delimiter="\t"))
def med(v, f, per=False):
    x = [float(r[f]) / (float(r["dlopens"]) if per else 1) for r in rows if r["variant"] == v]
    return statistics.median(x) if x else float("nan")
names = {"untraced": "untraced", "fp": "--heap --unwind fp (no tables, no holds)",
         "holds": "--heap (dlopen holds)"}
print("# dlopen holds: what they add to a program loading libraries\n")
print(f"Revision {rev}; kernel {platform.release()}; "
      f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
      f"{libs} new libraries (dlopen, 300 allocations, dlclose) per run; medians of {rounds} rounds.\n")
base = med("untraced", "ns", True)
print("| variant | ms per dlopen | added ms | dlopen_holds | dlopen_hold_timeouts | unwind_no_table_yet |")
print("|---|---:|---:|---:|---:|---:|")
for v in ("untraced", "fp", "holds"):
    t = med(v, "ns", True)
    print(f"| {names[v]} | {t / 1e6:.3f} | {(t - base) / 1e6:+.3f} | {med(v, 'dlopen_holds'):.0f} | "
          f"{med(v, 'dlopen_hold_timeouts'):.0f} | {med(v, 'unwind_no_table_yet'):.0f} |")
PY
cat "$RES/dlopen.md"
