#!/bin/sh
# Install what bpftrace-prof needs to build, test and benchmark, from Debian's archive.
# Usage: scripts/install-deps.sh [build|test|bench]   (default: test; each level includes the previous)
set -eu
level=${1:-test}

build_pkgs="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcurl4-openssl-dev pkg-config make gcc g++"
# liblzma-dev: MiniDebugInfo (.gnu_debugdata, xz); xz-utils builds the test target that carries it
build_pkgs="$build_pkgs liblzma-dev xz-utils"
# libdebuginfod-dev: debug files fetched by build id from DEBUGINFOD_URLS (user/sym/debuginfod.c)
build_pkgs="$build_pkgs libdebuginfod-dev"
# systemtap-sdt-dev: <sys/sdt.h>, the otel_memory USDT probes of the preloaded sampler (user/sampler/)
# and of the test program that fires them itself.
build_pkgs="$build_pkgs systemtap-sdt-dev"
# libc6-dbg: names of the C library's local functions (Debian's libc.so.6 has no .symtab); the
# built-in leak rules (user/export/suppress.c) name its caches by them: tzset_internal, __gconv_*.
build_pkgs="$build_pkgs libc6-dbg"
# libjemalloc-dev: the profiler's own allocator, linked in statically (Makefile: JEMALLOC_A), so
# that our allocations never trap on the allocator probes --heap puts in libc.
build_pkgs="$build_pkgs libjemalloc-dev"
# libclang-rt-dev: libFuzzer for `make fuzz` (part of `make test`); the rest is `make lint`.
test_pkgs="libcmocka-dev golang-go python3.11 sqlite3 php-cli ruby openjdk-17-jdk-headless libclang-rt-dev"
test_pkgs="$test_pkgs shellcheck cppcheck clang-format"
# Container tests (tests/e2e/docker.sh): dockerd, a static busybox for the images `docker import`
# builds (no registry here); tmux drives the --live view.
test_pkgs="$test_pkgs docker.io busybox-static tmux"
# protobuf-compiler: `protoc --decode_raw` checks the -f perfetto traces (tests/e2e/test_trace.sh).
test_pkgs="$test_pkgs protobuf-compiler"
# strace: the spool's renames and syncs, in order (tests/e2e/test_push.sh).
test_pkgs="$test_pkgs strace"
# debuginfod: the server test_names.sh runs on the loopback, serving a stripped target's debug file.
test_pkgs="$test_pkgs debuginfod"
# dwz, xxd: the dwz fixtures (Makefile: build/fixtures/dwz/), debug files sharing an alternate file.
test_pkgs="$test_pkgs dwz xxd"
# python3-protobuf: the -f perfetto traces decoded a second way, with Python classes protoc
# generates at test time from tests/perfetto_subset.proto (tests/e2e/perfetto_check.py).
test_pkgs="$test_pkgs python3-protobuf"
# libxml2-utils: `xmllint --noout` checks the -f svg flame graphs (tests/e2e/test_svg.sh).
test_pkgs="$test_pkgs libxml2-utils"
# chromium: test_svg.sh loads a flame graph headless (no console error, search, zoom,
# screenshot); the test is skipped without it.
test_pkgs="$test_pkgs chromium"
# nodejs (npm: below): speedscope, the viewer most users open -f chrome traces in, is an npm
# package only; test_trace.sh loads a --cpu trace in it (in chromium) and reads its sandwich view.
test_pkgs="$test_pkgs nodejs"
# groff-base, man-db, bsdextrautils (col): the man page rendered and read (test_cli_paths.sh).
test_pkgs="$test_pkgs groff-base man-db bsdextrautils"
# dpkg-dev, debhelper, lintian: `make deb` (debian/) and its test (tests/e2e/test_deb.sh), which
# also checks the agent's unit with systemd-analyze (systemd) and runs it under setpriv.
test_pkgs="$test_pkgs dpkg-dev debhelper lintian systemd"
# python3-prometheus-client: its exposition parser reads --metrics (tests/e2e/metrics_check.py).
test_pkgs="$test_pkgs python3-prometheus-client"
# python3-torch: the PyTorch training loop and `import torch` of bench/heapcost_bench.sh.
bench_pkgs="bpftrace bpfcc-tools time linux-headers-amd64 python3-torch"

case "$level" in
build) pkgs="$build_pkgs" ;;
test) pkgs="$build_pkgs $test_pkgs" ;;
bench) pkgs="$build_pkgs $test_pkgs $bench_pkgs" ;;
*) echo "install-deps.sh: unknown level '$level' (build|test|bench)" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Debian's npm, unless the nodejs installed brings its own (NodeSource's does).
[ "$level" = build ] || command -v npm >/dev/null 2>&1 || missing="$missing npm"
# The speedscope of tests/e2e/test_trace.sh: one pinned version, in a fixed place.
speedscope_dir=/var/cache/bpftrace-prof/speedscope
speedscope_version=1.25.0
need_speedscope=""
if [ "$level" != build ] && ! grep -qs "\"version\": \"$speedscope_version\"" \
	"$speedscope_dir/node_modules/speedscope/package.json"; then
	need_speedscope=1
fi
[ -z "$missing" ] && [ -z "$need_speedscope" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: missing:$missing${need_speedscope:+ speedscope@$speedscope_version (npm)}; run as root (sudo) to install them" >&2
	exit 1
fi
if [ -n "$missing" ]; then
	echo "install-deps.sh: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || true
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ -n "$need_speedscope" ]; then
	echo "install-deps.sh: installing speedscope@$speedscope_version (npm) in $speedscope_dir" >&2
	mkdir -p "$speedscope_dir"
	npm install --prefix "$speedscope_dir" --no-audit --no-fund --loglevel=error \
		"speedscope@$speedscope_version" >/dev/null
fi
