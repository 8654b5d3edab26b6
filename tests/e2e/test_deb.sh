# The Debian package (make deb, debian/): built by dpkg-buildpackage and lintian-clean, installed
# on the host with dpkg -i, its binary, man page and sampler in place, the agent's unit verified
# by systemd-analyze, and the unit's command run as systemd would (its environment file, its
# capability bounding set through setpriv: PID 1 is not systemd here) on a cgroup with a server
# allocating all the time (churn_server); then without CAP_SYS_ADMIN, where the allocator
# uprobes must be refused.  The package is removed at the end.

DEB_UNIT=/lib/systemd/system/bpftrace-prof-agent.service

deb_remove() {
	dpkg -r bpftrace-prof >/dev/null 2>&1 || true
}

# setpriv's --bounding-set list of the unit's CapabilityBoundingSet (CAP_BPF -> +bpf), minus $1.
deb_caps() {
	sed -n 's/^CapabilityBoundingSet=//p' "$DEB_UNIT" | tr ' ' '\n' | grep -v "^$1\$" |
		sed 's/^CAP_//' | tr '[:upper:]' '[:lower:]' | sed 's/^/+/' | paste -sd, | sed 's/^/-all,/'
}

# deb_agent LOG CAPS DIR CGROUP: the unit's ExecStart with /etc/default/bpftrace-prof's
# variables, a cgroup scope and a 1 s interval, for 3 s, under the bounding set CAPS.
deb_agent() {
	(
		set -a
		# shellcheck disable=SC1091 # the installed package's file
		. /etc/default/bpftrace-prof
		# shellcheck disable=SC2034 # exported (set -a) to the unit's command
		SCOPE="--cgroup $4" MODES="--cpu --heap" INTERVAL=1 OUTPUT_DIR=$3 EXTRA_OPTS="-d 3"
		set +a
		exec setpriv --bounding-set "$2" -- "$(sed -n 's/^ExecStart=//p' "$DEB_UNIT")"
	) >"$1" 2>&1
}

t_deb_package_installs_and_its_agent_runs_with_the_units_capabilities() {
	local d=$E2E_TMP/agent cg pid rc=0 deb n
	for c in dpkg-buildpackage dh lintian systemd-analyze setpriv; do
		command -v "$c" >/dev/null || fail "$c is missing (scripts/install-deps.sh test installs it)"
	done
	make -s deb >"$E2E_TMP/deb.log" 2>&1 || { tail -40 "$E2E_TMP/deb.log"; fail "make deb failed"; }
	deb=$(ls build/deb/bpftrace-prof_*_amd64.deb) || fail "no package in build/deb"
	grep -E '^[EW]: ' build/deb/lintian.txt && fail "lintian errors or warnings"
	trap 'deb_remove; kill $(jobs -p) 2>/dev/null' EXIT
	dpkg -i "$deb" >"$E2E_TMP/dpkg.log" 2>&1 || { cat "$E2E_TMP/dpkg.log"; fail "dpkg -i failed"; }
	expect_eq "installed version" "bpftrace-prof $(sed -n 's/^VERSION *:= *//p' Makefile)" \
		"$(/usr/sbin/bpftrace-prof --version)"
	expect_eq "man -w" /usr/share/man/man8/bpftrace-prof.8.gz "$(man -w bpftrace-prof)"
	[ -f /usr/lib/bpftrace-prof/libbpftrace-prof-sampler.so ] || fail "no sampler library"
	[ -f /usr/share/bash-completion/completions/bpftrace-prof ] || fail "no bash completion"
	[ -f /etc/default/bpftrace-prof ] || fail "no /etc/default/bpftrace-prof"
	systemd-analyze verify "$DEB_UNIT" >"$E2E_TMP/verify.log" 2>&1 ||
		{ cat "$E2E_TMP/verify.log"; fail "systemd-analyze verify failed"; }
	grep -q 'bpftrace-prof-agent' "$E2E_TMP/verify.log" && { cat "$E2E_TMP/verify.log"; fail "systemd-analyze warns about the unit"; }
	echo "bounding set: $(deb_caps none)"

	cg=$(make_cgroup)
	bg_in_cgroup "$cg" build/targets/churn_server 8 >/dev/null 2>&1
	pid=$!
	mkdir -m 0700 "$d"
	deb_agent "$d.log" "$(deb_caps none)" "$d" "$cg" || rc=$?
	cat "$d.log"
	expect_eq "agent's exit status with the unit's capabilities" 0 "$rc"
	grep -qi 'not permitted\|permission denied' "$d.log" && fail "a permission was missing"
	n=$(find "$d" -name '*.heap.pb.gz' | wc -l)
	[ "$n" -ge 2 ] || fail "expected heap profiles each second in $d, got $n"
	n=$(find "$d" -name '*.cpu.pb.gz' | wc -l)
	[ "$n" -ge 2 ] || fail "expected cpu profiles each second in $d, got $n"
	f=$(find "$d" -name '*.heap.pb.gz' | sort | tail -1)
	[ "$(pprof_cum "$f" alloc_space handle_request)" -gt 0 ] || fail "no allocations of churn_server in $f"

	# Without CAP_SYS_ADMIN the kernel refuses the allocator uprobes: the bounding set is in
	# force, and that capability is needed.
	deb_agent "$d.noadmin.log" "$(deb_caps CAP_SYS_ADMIN)" "$d.noadmin" "$cg"
	cat "$d.noadmin.log"
	grep -q 'attaching to malloc in .* failed: Permission denied' "$d.noadmin.log" ||
		fail "the allocator uprobes attached without CAP_SYS_ADMIN"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	deb_remove
	[ ! -e /usr/sbin/bpftrace-prof ] || fail "dpkg -r left /usr/sbin/bpftrace-prof"
}
