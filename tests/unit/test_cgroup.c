// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/cgroup.h"

/* Real-looking ids: what `docker ps --no-trunc` prints. */
#define ID_A "d97ee933f3f1c78cdebf1fda15ae4408d4932bd6530faa8bcb7fcbcda9f9525b"
#define ID_B "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
#define ID_C "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970"
/* Shares its first 6 digits with ID_A. */
#define ID_D "d97ee9aa00000000000000000000000000000000000000000000000000000001"

static char root[64];

/* mkdir -p root/rel */
static void mkdirs(const char *rel)
{
	char path[CGROUP_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(path, 0755);
		*s = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put(const char *rel, const char *text)
{
	char path[CGROUP_PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int open_root(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY);

	assert_true(fd >= 0);
	return fd;
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/cgroup-test.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void expect_id(const char *path, const char *want)
{
	char id[CGROUP_ID_SIZE];

	if (!want) {
		assert_int_equal(cgroup__container_id(id, path), -ENOENT);
		return;
	}
	assert_int_equal(cgroup__container_id(id, path), 0);
	assert_string_equal(id, want);
}

static void test_cgroup__container_id_docker(void **state)
{
	/* cgroupfs driver (Debian's docker.io here), systemd driver */
	expect_id("/docker/" ID_A, ID_A);
	expect_id("/system.slice/docker-" ID_B ".scope", ID_B);
	/* systemd inside the container: the process sits in a child of the container's cgroup */
	expect_id("/system.slice/docker-" ID_B ".scope/init.scope", ID_B);
	/* Docker in Docker: the innermost container */
	expect_id("/docker/" ID_A "/docker/" ID_C, ID_C);
	/* not a container */
	expect_id("/", NULL);
	expect_id("/user.slice/user-1000.slice/session-3.scope", NULL);
	expect_id("/system.slice/docker.service", NULL);
	expect_id("", NULL);
	/* 63 digits, 65 digits, upper case: not an id */
	expect_id("/docker/" ID_A "0", NULL);
	expect_id("/docker/d97ee933f3f1c78cdebf1fda15ae4408d4932bd6530faa8bcb7fcbcda9f9525", NULL);
	expect_id("/docker/D97EE933F3F1C78CDEBF1FDA15AE4408D4932BD6530FAA8BCB7FCBCDA9F9525B", NULL);
	expect_id("/system.slice/docker-" ID_B, ID_B);
	expect_id("/system.slice/docker-" ID_B ".scop", NULL);
}

static void test_cgroup__container_id_kubernetes(void **state)
{
	/* cgroupfs driver: burstable/besteffort pods under their QoS class, guaranteed ones not */
	expect_id("/kubepods/burstable/pod2b6cd4c4-9a3e-4f07-a2b1-51a3d8e1f4a2/" ID_A, ID_A);
	expect_id("/kubepods/besteffort/pod0c5f0e6b-1b3e-4b8e-9f5e-2f1d3c4b5a69/" ID_B, ID_B);
	expect_id("/kubepods/pod9d8e7f6a-5b4c-4d3e-8f2a-1b0c9d8e7f6a/" ID_C, ID_C);
	/* the pod's own cgroup names no container */
	expect_id("/kubepods/burstable/pod2b6cd4c4-9a3e-4f07-a2b1-51a3d8e1f4a2", NULL);
	/* systemd driver with containerd, CRI-O and dockershim */
	expect_id("/kubepods.slice/kubepods-burstable.slice/"
		  "kubepods-burstable-pod2b6cd4c4_9a3e_4f07_a2b1_51a3d8e1f4a2.slice/"
		  "cri-containerd-" ID_A ".scope",
		  ID_A);
	expect_id("/kubepods.slice/kubepods-besteffort.slice/"
		  "kubepods-besteffort-pod0c5f0e6b_1b3e_4b8e_9f5e_2f1d3c4b5a69.slice/"
		  "crio-" ID_B ".scope",
		  ID_B);
	expect_id("/kubepods.slice/kubepods-pod9d8e7f6a_5b4c_4d3e_8f2a_1b0c9d8e7f6a.slice/"
		  "docker-" ID_C ".scope",
		  ID_C);
	/* CRI-O's monitor is not the container */
	expect_id("/kubepods.slice/kubepods-besteffort.slice/"
		  "kubepods-besteffort-pod0c5f0e6b_1b3e_4b8e_9f5e_2f1d3c4b5a69.slice/"
		  "crio-conmon-" ID_B ".scope",
		  NULL);
	/* containerd without Kubernetes, namespace k8s.io or default: the bare id */
	expect_id("/k8s.io/" ID_A, ID_A);
}

static void test_cgroup__container_id_podman_lxc_buildkit(void **state)
{
	expect_id("/machine.slice/libpod-" ID_A ".scope", ID_A);
	/* rootless: below the user's systemd, with the container's own child cgroup */
	expect_id("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_B
		  ".scope/container",
		  ID_B);
	/* conmon, the monitor, is not in the container */
	expect_id("/machine.slice/libpod-conmon-" ID_A ".scope", NULL);
	/* cgroupfs manager */
	expect_id("/libpod_parent/libpod-" ID_C, ID_C);
	expect_id("/lxc/web01", "web01");
	expect_id("/lxc.payload/web01", "web01");
	expect_id("/lxc.payload.db-2", "db-2");
	expect_id("/lxc.payload.db-2/init.scope", "db-2");
	/* the monitor of lxc 4 */
	expect_id("/lxc.monitor.db-2", NULL);
	expect_id("/lxc", NULL);
	expect_id("/lxc/bad name", NULL);
	expect_id("/lxc/.hidden", NULL);
	expect_id("/buildkit/x1p2eqqsmcplyah9t4u3zo0bt", "x1p2eqqsmcplyah9t4u3zo0bt");
	/* a name too long for a label */
	expect_id("/lxc/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  NULL);
}

static int parse_proc(char *out, const char *text)
{
	return cgroup__parse_proc(out, CGROUP_PATH_MAX, text, strlen(text));
}

static void test_cgroup__proc_v2_hybrid_v1(void **state)
{
	char path[CGROUP_PATH_MAX];

	/* hybrid (this machine's layout, a Docker container's process) */
	assert_int_equal(parse_proc(path, "9:name=systemd:/docker/" ID_A "\n"
					  "4:memory:/docker/" ID_A "\n"
					  "2:cpuacct:/docker/" ID_A "\n"
					  "1:cpu:/docker/" ID_A "\n"
					  "0::/docker/" ID_A "\n"),
			 0);
	assert_string_equal(path, "/docker/" ID_A);
	/* unified only; the root */
	assert_int_equal(parse_proc(path, "0::/\n"), 0);
	assert_string_equal(path, "/");
	/* no final newline */
	assert_int_equal(parse_proc(path, "0::/system.slice/cron.service"), 0);
	assert_string_equal(path, "/system.slice/cron.service");
	/* the v2 line first (some kernels order hierarchies so) */
	assert_int_equal(parse_proc(path, "0::/a b/c\n1:cpu:/x\n"), 0);
	assert_string_equal(path, "/a b/c");
	/* a process whose cgroup was removed */
	assert_int_equal(parse_proc(path, "0::/gone (deleted)\n"), 0);
	assert_string_equal(path, "/gone");
	/* v1 only: no v2 path */
	assert_int_equal(parse_proc(path, "12:pids:/user.slice\n11:memory:/user.slice\n"
					  "1:name=systemd:/user.slice/session-1.scope\n"),
			 -ENOENT);
	assert_int_equal(parse_proc(path, ""), -ENOENT);
	/* a v1 hierarchy whose controller list is empty but id is not 0 */
	assert_int_equal(parse_proc(path, "10::/x\n"), -ENOENT);
	/* a second "0::" line: a name with a newline forged it */
	assert_int_equal(parse_proc(path, "0::/evil\n0::/docker/" ID_A "\n"), -EINVAL);
	assert_int_equal(parse_proc(path, "0::relative\n"), -EINVAL);
	assert_int_equal(parse_proc(path, "0::\n"), -EINVAL);
	assert_int_equal(cgroup__parse_proc(path, 8, "0::/docker/x\n", 13), -ENAMETOOLONG);
	assert_int_equal(cgroup__parse_proc(path, 13, "0::/docker/x\n", 13), 0);
	assert_string_equal(path, "/docker/x");
	/* the length is the bound, not a NUL */
	assert_int_equal(cgroup__parse_proc(path, CGROUP_PATH_MAX, "0::/abc\n", 6), 0);
	assert_string_equal(path, "/ab");
}

static void test_cgroup__read_pid_own(void **state)
{
	char path[CGROUP_PATH_MAX], from_file[CGROUP_PATH_MAX];
	char text[8192];
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY);
	FILE *f = fopen("/proc/self/cgroup", "r");
	size_t n;

	assert_true(proc_fd >= 0);
	assert_non_null(f);
	n = fread(text, 1, sizeof(text), f);
	fclose(f);
	if (cgroup__parse_proc(from_file, sizeof(from_file), text, n) == -ENOENT) {
		close(proc_fd);
		skip(); /* a v1-only host */
	}
	assert_int_equal(cgroup__read_pid(path, sizeof(path), proc_fd, (uint32_t)getpid()), 0);
	assert_string_equal(path, from_file);
	assert_int_equal(cgroup__read_pid(path, sizeof(path), proc_fd, 999999999), -ENOENT);
	{
		struct cgroup_labels l;

		assert_int_equal(cgroup__labels(&l, proc_fd, (uint32_t)getpid()), 0);
		assert_string_equal(l.cgroup, from_file);
		assert_int_equal(l.ns_pid, (uint32_t)getpid());
	}
	close(proc_fd);
}

static void test_cgroup__labels_of_a_fake_proc(void **state)
{
	struct cgroup_labels l;
	int proc_fd;

	mkdirs("41");
	put("41/cgroup", "4:memory:/docker/" ID_A "\n0::/docker/" ID_A "\n");
	put("41/status", "Name:\tsleep\nNSpid:\t41\t1\n");
	mkdirs("42");
	put("42/cgroup", "1:cpu:/\n"); /* v1 only */
	put("42/status", "Name:\told-kernel\n");
	mkdirs("43");
	put("43/cgroup", "0::/user.slice/session-2.scope\n");
	put("43/status", "NSpid:\t43\n");
	proc_fd = open_root();
	assert_int_equal(cgroup__labels(&l, proc_fd, 41), 0);
	assert_string_equal(l.cgroup, "/docker/" ID_A);
	assert_string_equal(l.container_id, ID_A);
	assert_int_equal(l.ns_pid, 1);
	assert_int_equal(cgroup__labels(&l, proc_fd, 42), 0);
	assert_string_equal(l.cgroup, "");
	assert_string_equal(l.container_id, "");
	assert_int_equal(l.ns_pid, 0);
	assert_int_equal(cgroup__labels(&l, proc_fd, 43), 0);
	assert_string_equal(l.cgroup, "/user.slice/session-2.scope");
	assert_string_equal(l.container_id, "");
	assert_int_equal(l.ns_pid, 43);
	/* gone */
	assert_int_equal(cgroup__labels(&l, proc_fd, 44), -ENOENT);
	close(proc_fd);
}

static int parse_mounts(char *out, size_t size, const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err;

	assert_non_null(f);
	err = cgroup__parse_mounts(out, size, f);
	fclose(f);
	return err;
}

static void test_cgroup__mounts(void **state)
{
	char dir[CGROUP_PATH_MAX];
	char *long_line;
	size_t n;

	/* this machine: v1 controllers and cgroup2 at unified */
	assert_int_equal(parse_mounts(dir, sizeof(dir),
				      "proc /proc proc rw,nosuid 0 0\n"
				      "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
				      "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
				      "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
				      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
				      "cgroup2 /second cgroup2 rw 0 0\n"),
			 0);
	assert_string_equal(dir, "/sys/fs/cgroup/unified");
	/* unified layout; escaped spaces, tabs, backslashes, newlines */
	assert_int_equal(parse_mounts(dir, sizeof(dir), "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"),
			 0);
	assert_string_equal(dir, "/sys/fs/cgroup");
	assert_int_equal(parse_mounts(dir, sizeof(dir),
				      "none /mnt/my\\040cgroups\\011x\\134y\\012z cgroup2 rw 0 0"),
			 0);
	assert_string_equal(dir, "/mnt/my cgroups\tx\\y\nz");
	/* an unknown escape is kept as it is */
	assert_int_equal(parse_mounts(dir, sizeof(dir), "none /a\\9b\\04 cgroup2 rw 0 0\n"), 0);
	assert_string_equal(dir, "/a\\9b\\04");
	/* none (v1 only); a cgroup2 type field only in the options; malformed lines */
	assert_int_equal(parse_mounts(dir, sizeof(dir),
				      "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
				      "cgroup2 /x ext4 cgroup2 0 0\n"
				      "cgroup2\n\n   \ncgroup2 relative cgroup2 rw 0 0\n"),
			 -ENOENT);
	assert_int_equal(parse_mounts(dir, 8, "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"),
			 -ENAMETOOLONG);
	/* a line longer than the reader's buffer is skipped whole, even where its tail looks
	 * like an entry */
	n = 20000;
	long_line = malloc(n + 200);
	assert_non_null(long_line);
	memset(long_line, 'a', n);
	memcpy(long_line, "x /", 3);
	strcpy(long_line + n - 40, " y\ncgroup2 /real cgroup2 rw 0 0\n");
	/* where the reader's second chunk of that line starts */
	memcpy(long_line + 8192 - 1, "cgroup2 /fake cgroup2 rw 0 0 ", 29);
	assert_int_equal(parse_mounts(dir, sizeof(dir), long_line), 0);
	assert_string_equal(dir, "/real");
	free(long_line);
}

static void test_cgroup__level(void **state)
{
	uint32_t level = 99;

	assert_int_equal(cgroup__level(&level, "/"), 0);
	assert_int_equal(level, 0);
	assert_int_equal(cgroup__level(&level, "/docker/" ID_A), 0);
	assert_int_equal(level, 2);
	assert_int_equal(cgroup__level(&level, "//a///b/"), 0);
	assert_int_equal(level, 2);
	assert_int_equal(cgroup__level(&level, "docker"), -EINVAL);
}

/* A fake cgroup2 tree under /tmp with every runtime's layout. */
static void make_tree(void)
{
	mkdirs("docker/" ID_A);
	mkdirs("system.slice/docker-" ID_B ".scope/init.scope");
	mkdirs("system.slice/docker.service");
	mkdirs("kubepods/burstable/pod2b6cd4c4-9a3e-4f07-a2b1-51a3d8e1f4a2/" ID_C);
	mkdirs("machine.slice/libpod-conmon-" ID_D ".scope");
	mkdirs("lxc.payload.web01");
	put("docker/cgroup.procs", "");
	put("docker/" ID_A "/cgroup.procs", "");
	/* a symlink to a container's directory is never followed (cgroupfs has none, but a walk
	 * must not trust that) */
	{
		int fd = open_root();

		assert_int_equal(symlinkat("docker/" ID_A, fd, "link-" ID_D), 0);
		close(fd);
	}
	mkdirs("docker-" ID_D ".scope-not");
}

static void test_cgroup__find_container(void **state)
{
	struct cgroup_container c, other;
	struct cgroup_stats st = {0};
	int fd;

	make_tree();
	fd = open_root();
	assert_int_equal(cgroup__find_container(&c, &other, fd, ID_A, &st), 0);
	assert_string_equal(c.id, ID_A);
	assert_string_equal(c.path, "/docker/" ID_A);
	/* docker ps's 12 digits; the systemd scope, not its init.scope child */
	assert_int_equal(cgroup__find_container(&c, &other, fd, "9ec39b91f3d7", &st), 0);
	assert_string_equal(c.id, ID_B);
	assert_string_equal(c.path, "/system.slice/docker-" ID_B ".scope");
	assert_int_equal(cgroup__find_container(&c, &other, fd, "4f79", &st), 0);
	assert_string_equal(c.path,
			    "/kubepods/burstable/pod2b6cd4c4-9a3e-4f07-a2b1-51a3d8e1f4a2/" ID_C);
	/* lxc by its exact name */
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "web01", &st), 0);
	assert_string_equal(c.path, "/lxc.payload.web01");
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "web0", &st), -ENOENT);
	/* conmon, a symlink, a name that only starts like a scope: none is ID_D's cgroup */
	assert_int_equal(cgroup__find_container(&c, NULL, fd, ID_D, &st), -ENOENT);
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "d97ee9a", &st), -ENOENT);
	/* absent */
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "0123456789ab", &st), -ENOENT);
	/* too short to be a prefix; not an id at all */
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "d97", &st), -ENOENT);
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "../docker", &st), -EINVAL);
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "", &st), -EINVAL);
	assert_int_equal(cgroup__find_container(&c, NULL, fd, ID_A "00", &st), -EINVAL);
	/* ambiguous: two containers share the prefix, both named for the message */
	mkdirs("docker/" ID_D);
	assert_int_equal(cgroup__find_container(&c, &other, fd, "d97ee9", &st), -EEXIST);
	assert_true((strcmp(c.id, ID_A) == 0 && strcmp(other.id, ID_D) == 0) ||
		    (strcmp(c.id, ID_D) == 0 && strcmp(other.id, ID_A) == 0));
	assert_string_equal(c.path, strcmp(c.id, ID_A) == 0 ? "/docker/" ID_A : "/docker/" ID_D);
	/* one more digit decides */
	assert_int_equal(cgroup__find_container(&c, &other, fd, "d97ee93", &st), 0);
	assert_string_equal(c.id, ID_A);
	assert_int_equal(cgroup__find_container(&c, NULL, fd, "d97ee9", &st), -EEXIST);
	assert_int_equal(st.walk_depth_cut, 0);
	assert_int_equal(st.walk_dirs_cut, 0);
	close(fd);
}

static void test_cgroup__open_rel_beneath(void **state)
{
	struct stat a, b;
	int fd, dir;

	make_tree();
	fd = open_root();
	assert_int_equal(cgroup__open_rel(&dir, fd, "/docker/" ID_A), 0);
	assert_int_equal(fstatat(fd, "docker/" ID_A, &a, 0), 0);
	assert_int_equal(fstat(dir, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	close(dir);
	assert_int_equal(cgroup__open_rel(&dir, fd, "/"), 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(dir, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	close(dir);
	/* a symlink, "..", absent */
	assert_int_equal(cgroup__open_rel(&dir, fd, "/link-" ID_D), -ENOTDIR);
	assert_int_equal(cgroup__open_rel(&dir, fd, "/link-" ID_D "/."), -ELOOP);
	assert_int_equal(cgroup__open_rel(&dir, fd, "/docker/../.."), -EXDEV);
	assert_int_equal(cgroup__open_rel(&dir, fd, "/docker/absent"), -ENOENT);
	close(fd);
}

static void test_cgroup__find_container_depth_bound(void **state)
{
	struct cgroup_container c;
	struct cgroup_stats st = {0};
	char rel[CGROUP_PATH_MAX] = "deep";
	int fd;

	/* levels 1…15 are "deep/l2/…/l15", the container's directory is level 16, and another
	 * container's is level 17, below the bound */
	for (int i = 2; i <= 15; i++)
		snprintf(rel + strlen(rel), sizeof(rel) - strlen(rel), "/l%d", i);
	mkdirs(rel);
	snprintf(rel + strlen(rel), sizeof(rel) - strlen(rel), "/%s", ID_A);
	mkdirs(rel);
	snprintf(rel + strlen(rel), sizeof(rel) - strlen(rel), "/%s", ID_B);
	mkdirs(rel);
	fd = open_root();
	assert_int_equal(cgroup__find_container(&c, NULL, fd, ID_A, &st), 0);
	assert_int_equal(strlen(c.path), strlen(rel) + 1 - 65);
	assert_int_equal(st.walk_depth_cut, 1);
	memset(&st, 0, sizeof(st));
	assert_int_equal(cgroup__find_container(&c, NULL, fd, ID_B, &st), -ENOENT);
	assert_int_equal(st.walk_depth_cut, 1);
	close(fd);
}

struct pids {
	uint32_t pid[16];
	int n;
	int stop_at; /* return 7 at this pid */
};

static int add_pid(void *ctx, uint32_t pid)
{
	struct pids *p = ctx;

	if (p->stop_at && pid == (uint32_t)p->stop_at)
		return 7;
	assert_true(p->n < 16);
	p->pid[p->n++] = pid;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void test_cgroup__for_each_pid_subtree(void **state)
{
	struct pids p = {0};
	struct cgroup_stats st = {0};
	int fd;

	mkdirs("svc/a/a1");
	mkdirs("svc/b");
	mkdirs("other");
	put("svc/cgroup.procs", "10\n11\n");
	put("svc/a/cgroup.procs", "");
	put("svc/a/a1/cgroup.procs", "12\n");
	put("svc/b/cgroup.procs", "13\n0\n-1\n 14\n15x\n4294967296\n");
	put("other/cgroup.procs", "99\n");
	fd = open(root, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	{
		int svc = openat(fd, "svc", O_RDONLY | O_DIRECTORY);

		assert_int_equal(cgroup__for_each_pid(svc, add_pid, &p, &st), 0);
		qsort(p.pid, (size_t)p.n, sizeof(p.pid[0]), cmp_u32);
		assert_int_equal(p.n, 4);
		assert_int_equal(p.pid[0], 10);
		assert_int_equal(p.pid[1], 11);
		assert_int_equal(p.pid[2], 12);
		assert_int_equal(p.pid[3], 13);
		/* 0, -1, " 14", "15x", 2^32 */
		assert_int_equal(st.procs_lines_skipped, 5);
		assert_int_equal(st.walk_open_failed, 0);
		/* the callback stops the walk with its own value */
		memset(&p, 0, sizeof(p));
		p.stop_at = 11;
		assert_int_equal(cgroup__for_each_pid(svc, add_pid, &p, NULL), 7);
		close(svc);
	}
	/* a directory without cgroup.procs (removed under us) is counted, not fatal */
	mkdirs("svc/c");
	memset(&p, 0, sizeof(p));
	memset(&st, 0, sizeof(st));
	{
		int svc = openat(fd, "svc", O_RDONLY | O_DIRECTORY);

		assert_int_equal(cgroup__for_each_pid(svc, add_pid, &p, &st), 0);
		assert_int_equal(p.n, 4);
		assert_int_equal(st.walk_open_failed, 1);
		close(svc);
	}
	close(fd);
}

static void test_cgroup__parse_procs_bounded_lines(void **state)
{
	/* a line longer than any pid is one skipped line, its tail not read as a pid */
	char text[200];
	struct pids p = {0};
	struct cgroup_stats st = {0};
	FILE *f;

	memset(text, '1', 100);
	strcpy(text + 100, "\n42\n\n7");
	f = fmemopen(text, strlen(text), "r");
	assert_non_null(f);
	assert_int_equal(cgroup__parse_procs(f, add_pid, &p, &st), 0);
	fclose(f);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.pid[0], 42);
	assert_int_equal(p.pid[1], 7);
	assert_int_equal(st.procs_lines_skipped, 2);
}

/* The cgroup2 mount and our own cgroup on it; skip where there is none. */
static int own_cgroup(char *mount, char *rel)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	int proc_fd, err;

	if (!f)
		return -ENOENT;
	err = cgroup__parse_mounts(mount, CGROUP_PATH_MAX, f);
	fclose(f);
	if (err)
		return err;
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY);
	assert_true(proc_fd >= 0);
	err = cgroup__read_pid(rel, CGROUP_PATH_MAX, proc_fd, (uint32_t)getpid());
	close(proc_fd);
	return err;
}

static void test_cgroup__id_is_kernel_cgroup_id(void **state)
{
	char mount[CGROUP_PATH_MAX], rel[CGROUP_PATH_MAX], rel2[CGROUP_PATH_MAX];
	char path[2 * CGROUP_PATH_MAX];
	struct stat sb;
	uint64_t id = 0;
	int fd;

	if (own_cgroup(mount, rel))
		skip();
	snprintf(path, sizeof(path), "%s%s", mount, strcmp(rel, "/") ? rel : "");
	assert_int_equal(cgroup__open_path(&fd, rel2, sizeof(rel2), mount, path), 0);
	assert_string_equal(rel2, rel);
	assert_int_equal(cgroup__id(&id, fd), 0);
	/* The kernfs node id is the handle and, on 64-bit kernels, the inode number. */
	assert_int_equal(fstat(fd, &sb), 0);
	assert_true(id != 0);
	assert_int_equal(id, (uint64_t)sb.st_ino);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(id, (uint64_t)sb.st_ino);
	close(fd);
	/* the mount itself is "/" */
	assert_int_equal(cgroup__open_path(&fd, rel2, sizeof(rel2), mount, mount), 0);
	assert_string_equal(rel2, "/");
	assert_int_equal(cgroup__id(&id, fd), 0);
	/* the root cgroup's id is 1 */
	assert_int_equal(id, 1);
	close(fd);
}

static void test_cgroup__open_path_refuses(void **state)
{
	char mount[CGROUP_PATH_MAX], rel[CGROUP_PATH_MAX];
	uint64_t id;
	int fd = -1;

	/* not on a cgroup2 file system; not below the mount; absent */
	assert_int_equal(cgroup__open_path(&fd, rel, sizeof(rel), root, root), -EXDEV);
	assert_int_equal(cgroup__open_path(&fd, rel, sizeof(rel), "/proc", "/tmp"), -EXDEV);
	assert_int_equal(cgroup__open_path(&fd, rel, sizeof(rel), "/tmp", "/tmpx"), -ENOENT);
	assert_int_equal(cgroup__open_path(&fd, rel, sizeof(rel), "/", "/nonexistent/x"), -ENOENT);
	/* a regular directory has no cgroup id */
	fd = open(root, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(cgroup__id(&id, fd), -EOPNOTSUPP);
	close(fd);
	if (own_cgroup(mount, rel))
		skip();
	/* a path into a v1 hierarchy or outside cgroup2 */
	assert_int_equal(cgroup__open_path(&fd, rel, sizeof(rel), mount, "/sys/fs"), -EXDEV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup__container_id_docker),
		cmocka_unit_test(test_cgroup__container_id_kubernetes),
		cmocka_unit_test(test_cgroup__container_id_podman_lxc_buildkit),
		cmocka_unit_test(test_cgroup__proc_v2_hybrid_v1),
		cmocka_unit_test(test_cgroup__read_pid_own),
		cmocka_unit_test_setup_teardown(test_cgroup__labels_of_a_fake_proc, setup,
						teardown),
		cmocka_unit_test(test_cgroup__mounts),
		cmocka_unit_test(test_cgroup__level),
		cmocka_unit_test_setup_teardown(test_cgroup__find_container, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup__open_rel_beneath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup__find_container_depth_bound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cgroup__for_each_pid_subtree, setup, teardown),
		cmocka_unit_test(test_cgroup__parse_procs_bounded_lines),
		cmocka_unit_test(test_cgroup__id_is_kernel_cgroup_id),
		cmocka_unit_test_setup_teardown(test_cgroup__open_path_refuses, setup, teardown),
	};

	return cmocka_run_group_tests_name("cgroup", tests, NULL, NULL);
}
