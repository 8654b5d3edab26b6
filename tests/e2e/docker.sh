# Real containers for the end-to-end tests (sourced by tests/e2e/run.sh after lib.sh, so every
# test file can use these):
#   docker_require            docker_up, or skip the test with the reason (fail under CI=true)
#   docker_up                 start dockerd when it is not running (at most ~30 s; ours is stopped
#                             at the end of the run, someone else's never)
#   docker_image NAME FILE…   an image made with `docker import` (no registry here): busybox as
#                             /bin/sh and its applets, each FILE as /usr/local/bin/<basename>, and
#                             every library `ldd` lists for them at its own path, the dynamic
#                             loader included — the container's own libc copy, its own inode
#   docker_run NAME ARG…      a detached container of image NAME running ARG…; sets DOCKER_CID
#                             (64 hex) and DOCKER_PID (its first process, as the host sees it).
#                             Removed when its test ends, and at the end of the run in any case.
#   cgroup_make NAME          a cgroup of the test's own (CGROUP_DIR, CGROUP_REL), removed at its end
# Variables set here are read by the files this is sourced into.
# shellcheck shell=bash disable=SC2034

# Per run: every container and image this run makes carries the run's id, so two runs on one
# machine (other worktrees share the daemon) never remove each other's.
DOCKER_STATE=${DOCKER_STATE:-$E2E_TMP/docker}
DOCKER_RUN_ID=${DOCKER_RUN_ID:-$(basename "$E2E_TMP" | sed 's/^bpftrace-prof-e2e\.//' |
	tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9\n' '-')}
DOCKER_LABEL=bpftrace-prof-e2e
DOCKER_WAIT=${DOCKER_WAIT:-30}
export DOCKER_STATE DOCKER_RUN_ID

# skip REASON: end the test as skipped (tests/e2e/run.sh counts exit status 77 so).
skip() {
	echo "SKIP: $*"
	exit 77
}

# "PID STARTTIME" of a live process, so a stop never hits a recycled pid.
docker_proc_id() { # PID
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086 # the fields after "(comm) "
	set -- "$1" $stat
	echo "$1 ${21}"
}

docker_up() {
	local i pid
	DOCKER_WHY=""
	if ! command -v docker >/dev/null; then
		DOCKER_WHY="no docker client (scripts/install-deps.sh test installs docker.io)"
		return 1
	fi
	docker info >/dev/null 2>&1 && return 0
	if ! command -v dockerd >/dev/null; then
		DOCKER_WHY="no dockerd (scripts/install-deps.sh test installs docker.io)"
		return 1
	fi
	if [ "$(id -u)" -ne 0 ]; then
		DOCKER_WHY="dockerd needs root"
		return 1
	fi
	mkdir -p "$DOCKER_STATE"
	echo "docker: starting dockerd (log: $DOCKER_STATE/dockerd.log)"
	# In a subshell of its own and a session of its own: not a job of the test's shell (whose
	# exit kills its jobs), not in its process group (Ctrl-C of the run).
	(setsid dockerd >"$DOCKER_STATE/dockerd.log" 2>&1 </dev/null &
		echo $! >"$DOCKER_STATE/dockerd.pid")
	pid=$(cat "$DOCKER_STATE/dockerd.pid")
	docker_proc_id "$pid" >"$DOCKER_STATE/dockerd.started" || true
	for ((i = 0; i < DOCKER_WAIT * 4; i++)); do
		docker info >/dev/null 2>&1 && break
		sleep 0.25
	done
	if ! docker info >/dev/null 2>&1; then
		DOCKER_WHY="dockerd did not answer within ${DOCKER_WAIT}s: $(tail -3 "$DOCKER_STATE/dockerd.log" | tr '\n' ' ')"
		docker_stop_daemon
		return 1
	fi
	# Another run's dockerd won the race for the socket: ours exited, theirs serves us.
	if [ "$(docker_proc_id "$pid")" != "$(cat "$DOCKER_STATE/dockerd.started")" ]; then
		rm -f "$DOCKER_STATE/dockerd.started"
	fi
	return 0
}

# The dockerd this run started, if any and still the same process.
docker_stop_daemon() {
	local pid started i
	[ -s "$DOCKER_STATE/dockerd.started" ] || return 0
	read -r pid started <"$DOCKER_STATE/dockerd.started"
	rm -f "$DOCKER_STATE/dockerd.started"
	[ "$(docker_proc_id "$pid")" = "$pid $started" ] || return 0
	echo "docker: stopping the dockerd this run started (pid $pid)"
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		[ "$(docker_proc_id "$pid")" = "$pid $started" ] || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

docker_require() {
	docker_up && return 0
	if [ "${CI:-}" = "true" ]; then
		fail "docker unavailable under CI=true: $DOCKER_WHY"
	fi
	skip "docker unavailable: $DOCKER_WHY"
}

# The image reference of NAME in this run.
docker_ref() { # NAME
	echo "$DOCKER_LABEL/$1:$DOCKER_RUN_ID"
}

# Copy a host file into the image tree at the same path, symlinks resolved (a regular file).
docker_copy_in() { # ROOTFS PATH
	mkdir -p "$1$(dirname "$2")" && cp -L "$2" "$1$2"
}

# The libraries `ldd` lists for FILE (absolute paths, the dynamic loader included).
docker_libs() { # FILE
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
}

docker_image() { # NAME FILE…
	local name=$1 rootfs bb f lib a
	shift
	mkdir -p "$DOCKER_STATE"
	# Built once per run: later tests reuse it.
	[ -e "$DOCKER_STATE/image.$name" ] && return 0
	rootfs=$DOCKER_STATE/rootfs.$name
	rm -rf "$rootfs"
	mkdir -p "$rootfs"/{bin,usr/local/bin,tmp,proc,sys,dev,etc} || fail "cannot make $rootfs"
	chmod 1777 "$rootfs/tmp"
	bb=$(command -v busybox) || fail "no busybox (scripts/install-deps.sh test installs busybox-static)"
	cp -L "$bb" "$rootfs/bin/busybox" || fail "cannot copy busybox"
	for a in $("$bb" --list); do
		[ "$a" = busybox ] || ln -sf busybox "$rootfs/bin/$a"
	done
	for f in "$bb" "$@"; do
		[ -f "$f" ] || fail "docker_image $name: no file $f"
		[ "$f" = "$bb" ] || cp -L "$f" "$rootfs/usr/local/bin/$(basename "$f")" || fail "cannot copy $f"
		for lib in $(docker_libs "$f"); do
			[ -e "$rootfs$lib" ] || docker_copy_in "$rootfs" "$lib" || fail "cannot copy $lib"
		done
	done
	echo "root:x:0:0:root:/:/bin/sh" >"$rootfs/etc/passwd"
	tar -C "$rootfs" -c . | docker import - "$(docker_ref "$name")" >/dev/null ||
		fail "docker import of $name failed"
	docker_ref "$name" >>"$DOCKER_STATE/images"
	touch "$DOCKER_STATE/image.$name"
	echo "docker: image $(docker_ref "$name") ($(du -sh "$rootfs" | cut -f1)): $*"
}

docker_run() { # NAME ARG…
	local name=$1
	shift
	DOCKER_CID=$(docker run -d --label "$DOCKER_LABEL=$DOCKER_RUN_ID" "$(docker_ref "$name")" "$@") ||
		fail "docker run $name $* failed"
	echo "$DOCKER_CID" >>"$E2E_TMP/.containers"
	DOCKER_PID=$(docker inspect -f '{{.State.Pid}}' "$DOCKER_CID") || fail "docker inspect $DOCKER_CID"
	[ "${DOCKER_PID:-0}" -gt 0 ] || fail "container $DOCKER_CID is not running: $(docker logs "$DOCKER_CID" 2>&1 | tail -3)"
	echo "docker: container ${DOCKER_CID:0:12} (host pid $DOCKER_PID): $name $*"
}

# The cgroup2 mount point (the first in /proc/self/mounts; /sys/fs/cgroup/unified on a hybrid
# host).  Sets CGROUP2.
cgroup2_mount() {
	CGROUP2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	[ -n "$CGROUP2" ] || fail "no cgroup2 mount in /proc/self/mounts"
}

# A cgroup of our own below the cgroup2 root, removed when the test ends.  Sets CGROUP_DIR (its
# path) and CGROUP_REL (relative to the mount, as the cgroup label shows it).
cgroup_make() { # NAME
	cgroup2_mount
	CGROUP_REL=/$DOCKER_LABEL-$DOCKER_RUN_ID-$1
	CGROUP_DIR=$CGROUP2$CGROUP_REL
	mkdir "$CGROUP_DIR" || fail "cannot make cgroup $CGROUP_DIR"
	echo "$CGROUP_DIR" >>"$E2E_TMP/.cgroups"
}

# At the end of each test (run.sh's exit trap of the test's subshell): its containers and its
# cgroups (a cgroup goes once its processes have: retried for a few seconds).
container_test_cleanup() {
	local d i
	if [ -s "$E2E_TMP/.containers" ]; then
		# shellcheck disable=SC2046 # one id a line
		docker rm -f $(cat "$E2E_TMP/.containers") >/dev/null 2>&1
		rm -f "$E2E_TMP/.containers"
	fi
	[ -s "$E2E_TMP/.cgroups" ] || return 0
	while read -r d; do
		for ((i = 0; i < 50; i++)); do
			# children first (a test may make cgroups below its own)
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
			[ -d "$d" ] || break
			sleep 0.1
		done
	done <"$E2E_TMP/.cgroups"
	rm -f "$E2E_TMP/.cgroups"
}

# At the end of the run: every container and image of this run, and our dockerd.
docker_down() {
	local ids
	[ -d "$DOCKER_STATE" ] || return 0
	if docker info >/dev/null 2>&1; then
		ids=$(docker ps -aq --filter "label=$DOCKER_LABEL=$DOCKER_RUN_ID")
		# shellcheck disable=SC2086 # ids, one a word
		[ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1
		if [ -s "$DOCKER_STATE/images" ]; then
			# shellcheck disable=SC2046 # image references, one a line
			docker rmi -f $(sort -u "$DOCKER_STATE/images") >/dev/null 2>&1
		fi
	fi
	rm -f "$DOCKER_STATE/images" "$DOCKER_STATE"/image.*
	docker_stop_daemon
}
