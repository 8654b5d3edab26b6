# Shared helpers of the end-to-end tests (sourced).
PROF=${PROF:-./bpftrace-prof}
TARGETS=build/targets
E2E_TMP=${E2E_TMP:-$(mktemp -d /tmp/bpftrace-prof-e2e.XXXXXX)}
export E2E_TMP

bpf_available() {
	if [ "$(id -u)" -ne 0 ]; then BPF_WHY="not root"; return 1; fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then BPF_WHY="no kernel BTF"; return 1; fi
	if ! bpftool prog list >/dev/null 2>&1; then BPF_WHY="bpftool prog list failed"; return 1; fi
	return 0
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
	echo "ok: $1 = $3"
}

# expect_range WHAT LO HI ACTUAL
expect_range() {
	awk -v lo="$2" -v hi="$3" -v v="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
		fail "$1: expected within [$2, $3], got '$4'"
	echo "ok: $1 = $4 in [$2, $3]"
}

