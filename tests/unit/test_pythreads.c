// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python thread names read from live interpreters: pyenv's 3.8–3.13 and Debian's
 * /usr/bin/python3.11 (found by pyinterp.h).  The oracle is the script itself:
 * each thread prints threading.get_native_id() next to its name, and pythreads__read must give
 * exactly those pairs (MainThread included).  _PyRuntime's runtime address comes from
 * /proc/PID/maps and the file's symbol (python__inspect_elf).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/pycode.h"
#include "sym/python.h"
#include "sym/pythreads.h"
#include "sym/symbolizer.h"

#include "pyinterp.h"

#define DEBIAN_PY PYINTERP_DEBIAN
#define NTHREADS  4 /* MainThread and three workers */

/* pyenv's 3.8–3.13 and Debian's 3.11: static, each is some 12 KiB. */
static struct pyinterp interps[8];

static void inspect(const char *path, const char *hint, struct py_elf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	assert_true(fd >= 0);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	assert_int_equal(python__inspect_elf(elf, hint, out), 0);
	elf_end(elf);
	close(fd);
}

/*
 * Three named threads wait on an Event; each reports its native id, the main thread prints
 * "tid name" for all four (UTF-8), then "end", and waits for stdin to close.
 */
static const char script[] =
	"import sys, threading\n"
	"ev = threading.Event()\n"
	"names = ['worker-1', 'worker-2', 'w\\u00f6rker-3']\n"
	"ids = {}\n"
	"bar = threading.Barrier(len(names) + 1)\n"
	"def run():\n"
	"    ids[threading.current_thread().name] = threading.get_native_id()\n"
	"    bar.wait()\n"
	"    ev.wait()\n"
	"ts = [threading.Thread(name=n, target=run, daemon=True) for n in names]\n"
	"for t in ts:\n"
	"    t.start()\n"
	"# worker-2's attributes move into a dict of their own (3.11+ keep them beside the type)\n"
	"vars(ts[1])\n"
	"bar.wait()\n"
	"out = ['%d MainThread' % threading.get_native_id()]\n"
	"out += ['%d %s' % (ids[n], n) for n in names]\n"
	"sys.stdout.buffer.write(('\\n'.join(out) + '\\nend\\n').encode('utf-8'))\n"
	"sys.stdout.flush()\n"
	"sys.stdin.read()\n"
	"ev.set()\n";

struct live {
	pid_t pid;
	int in; /* the script's stdin: closing it ends the script */
	size_t nwant;
	struct pythread_name want[NTHREADS];
};

/* Start bin running src; collect its "tid name" lines up to "end". */
static void start_python(const char *bin, const char *src, struct live *l)
{
	int to[2], from[2];
	char line[256];
	FILE *f;

	memset(l, 0, sizeof(*l));
	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	l->pid = fork();
	assert_true(l->pid >= 0);
	if (l->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execl(bin, bin, "-c", src, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	l->in = to[1];
	f = fdopen(from[0], "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && strcmp(line, "end\n")) {
		unsigned tid;
		int at = 0;

		assert_true(l->nwant < NTHREADS);
		assert_int_equal(sscanf(line, "%u %n", &tid, &at), 1);
		line[strcspn(line, "\n")] = '\0';
		l->want[l->nwant].tid = tid;
		snprintf(l->want[l->nwant].name, sizeof(l->want[0].name), "%s", line + at);
		l->nwant++;
	}
	fclose(f);
	assert_true(l->nwant > 0);
	assert_int_equal(l->want[0].tid, (uint32_t)l->pid);
}

static void stop_python(struct live *l)
{
	int status;

	close(l->in);
	assert_int_equal(waitpid(l->pid, &status, 0), l->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * Every read a pythreads__read makes, kept as tests/fuzz/fuzz_pythreads.c's sparse image: a
 * header (the version's index from 3.8, bit 3 when native_thread_id is left out; _PyRuntime's
 * address), then {u64 address, u32 length, bytes} per read.
 */
#define IMG_HEAD 9
#define IMG_REC	 12

struct image {
	pid_t pid; /* recording: the process read */
	uint8_t *buf;
	size_t len, cap;
	size_t reads, fail_at; /* replay: reads served; the read to fail (SIZE_MAX: none) */
};

static void image_start(struct image *im, pid_t pid, unsigned minor, bool no_native,
			uint64_t runtime)
{
	memset(im, 0, sizeof(*im));
	im->pid = pid;
	im->cap = 1 << 16;
	im->buf = malloc(im->cap);
	assert_non_null(im->buf);
	im->fail_at = SIZE_MAX;
	im->buf[0] = (uint8_t)((minor - 8) | (no_native ? 8 : 0));
	memcpy(im->buf + 1, &runtime, 8);
	im->len = IMG_HEAD;
}

static int record_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;
	uint32_t n = (uint32_t)len;
	int err = pycode__read_pid((void *)(uintptr_t)im->pid, addr, buf, len);

	if (err)
		return err;
	while (im->cap - im->len < IMG_REC + len) {
		im->cap *= 2;
		im->buf = realloc(im->buf, im->cap);
		if (!im->buf)
			abort();
	}
	memcpy(im->buf + im->len, &addr, 8);
	memcpy(im->buf + im->len + 8, &n, 4);
	memcpy(im->buf + im->len + IMG_REC, buf, len);
	im->len += IMG_REC + len;
	return 0;
}

/* A read served from the image: one record must hold all of it. */
static int replay_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;

	if (im->reads++ == im->fail_at)
		return -EFAULT;

	for (size_t at = IMG_HEAD; at + IMG_REC <= im->len;) {
		uint64_t start;
		uint32_t n;

		memcpy(&start, im->buf + at, 8);
		memcpy(&n, im->buf + at + 8, 4);
		at += IMG_REC;
		assert_true(n <= im->len - at);
		if (addr >= start && addr - start <= n && len <= n - (addr - start)) {
			memcpy(buf, im->buf + at + (addr - start), len);
			return 0;
		}
		at += n;
	}
	return -EFAULT;
}

/* The image's version entry and runtime address, as the fuzz harness takes them. */
static uint64_t image_version(const struct image *im, struct py_version *v)
{
	const struct py_version *t = py_version__find(3, 8 + (im->buf[0] & 7) % 6);
	uint64_t runtime;

	assert_non_null(t);
	*v = *t;
	if (im->buf[0] & 8)
		v->ts_native_id = 0;
	memcpy(&runtime, im->buf + 1, 8);
	return runtime;
}

/* Keep im as a fuzz seed when PYTHREADS_SEEDS names a directory. */
static void image_save(const struct image *im, const char *name)
{
	const char *dir = getenv("PYTHREADS_SEEDS");
	char path[PATH_MAX];
	FILE *f;

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(im->buf, 1, im->len, f), im->len);
	assert_int_equal(fclose(f), 0);
}

/* got[0..n) is want, in any order, each once. */
static void check_names(const struct pythread_name *got, size_t n, const struct pythread_name *want,
			size_t nwant)
{
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		size_t hits = 0;

		for (size_t j = 0; j < n; j++) {
			if (got[j].tid != want[i].tid)
				continue;
			assert_string_equal(got[j].name, want[i].name);
			hits++;
		}
		assert_int_equal(hits, 1);
	}
}

static void read_one(const char *bin, const char *elf_path, unsigned minor)
{
	struct pythread_name got[16];
	struct py_version v;
	struct py_elf e;
	struct live l;
	void *ctx;
	uint64_t rt;
	size_t n = 99;

	inspect(elf_path, bin, &e);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_int_equal(e.minor, minor);
	start_python(bin, script, &l);
	assert_int_equal(l.nwant, NTHREADS);
	assert_string_equal(l.want[3].name, "w\xc3\xb6rker-3");
	rt = pyinterp__load_bias(l.pid, elf_path, NULL) + e.runtime;
	ctx = (void *)(uintptr_t)l.pid;

	memset(got, 0xa5, sizeof(got));
	assert_int_equal(pythreads__read(got, 16, &n, &e.v, pycode__read_pid, ctx, rt), 0);
	check_names(got, n, l.want, NTHREADS);

	/* 3.11+ without native_thread_id: the ids come from each Thread's _native_id, as
	 * before 3.11.  Both walks recorded, replayed from the record, kept as fuzz seeds. */
	for (int no_native = 0; no_native <= (minor >= 11); no_native++) {
		struct image im;
		char seed[64];

		image_start(&im, l.pid, minor, no_native, rt);
		v = e.v;
		if (no_native)
			v.ts_native_id = 0;
		n = 99;
		assert_int_equal(pythreads__read(got, 16, &n, &v, record_read, &im, rt), 0);
		check_names(got, n, l.want, NTHREADS);
		rt = image_version(&im, &v);
		n = 99;
		memset(got, 0xa5, sizeof(got));
		assert_int_equal(pythreads__read(got, 16, &n, &v, replay_read, &im, rt), 0);
		check_names(got, n, l.want, NTHREADS);
		snprintf(seed, sizeof(seed), "py3%u%s%s", minor,
			 strcmp(bin, DEBIAN_PY) ? "" : "-debian", no_native ? "-no-native-id" : "");
		image_save(&im, seed);
		free(im.buf);
	}

	/* Room for two: two of the four, each a true pair. */
	n = 99;
	assert_int_equal(pythreads__read(got, 2, &n, &e.v, pycode__read_pid, ctx, rt), 0);
	assert_int_equal(n, 2);
	for (size_t j = 0; j < n; j++) {
		size_t hits = 0;

		for (size_t i = 0; i < NTHREADS; i++)
			if (got[j].tid == l.want[i].tid && !strcmp(got[j].name, l.want[i].name))
				hits++;
		assert_int_equal(hits, 1);
	}
	assert_true(got[0].tid != got[1].tid);

	/* An address where no _PyRuntime is. */
	n = 99;
	assert_int_equal(pythreads__read(got, 16, &n, &e.v, pycode__read_pid, ctx, 0x1000),
			 -EFAULT);
	assert_int_equal(n, 0);
	stop_python(&l);
	printf("pythreads: %s (3.%u): %zu names\n", bin, minor, (size_t)NTHREADS);
}

static void test_pythreads__live_interpreters(void **state)
{
	size_t n = pyinterp__all(interps, 8);
	unsigned ran = 0;

	for (size_t k = 0; k < n; k++) {
		read_one(interps[k].bin, interps[k].lib, interps[k].minor);
		ran++;
	}
	printf("pythreads: %u interpreters ran\n", ran);
	pyinterp__need_all(ran, PYINTERP_ALL, "pythreads: pyenv 3.8-3.13, Debian 3.11");
}

/* Start src under bin and read its names with bin's own offsets. */
static int read_live(const char *bin, const char *lib, const char *src, struct live *l,
		     struct pythread_name *got, size_t max, size_t *n)
{
	struct py_elf e;
	uint64_t rt;

	inspect(lib, bin, &e);
	assert_int_equal(e.status, PY_ELF_OK);
	start_python(bin, src, l);
	rt = pyinterp__load_bias(l->pid, lib, NULL) + e.runtime;
	*n = 99;
	return pythreads__read(got, max, n, &e.v, pycode__read_pid, (void *)(uintptr_t)l->pid, rt);
}

/* A name over 63 bytes is cut at a character: 40 two-byte characters keep 31. */
static void test_pythreads__long_name_cut_at_character(void **state)
{
	static const char src[] =
		"import sys, threading\n"
		"ev = threading.Event()\n"
		"t = threading.Thread(name='\\u00f6' * 40, target=ev.wait, daemon=True)\n"
		"t.start()\n"
		"sys.stdout.write('%d MainThread\\n%d x\\nend\\n' % (threading.get_native_id(), "
		"t.native_id))\n"
		"sys.stdout.flush()\n"
		"sys.stdin.read()\n"
		"ev.set()\n";
	size_t npy = pyinterp__all(interps, 8), n;
	char cut[PYTHREADS_NAME_MAX] = "";
	struct pythread_name got[8];
	unsigned ran = 0;
	struct live l;

	for (int k = 0; k < 31; k++)
		strcat(cut, "\xc3\xb6");
	for (size_t k = 0; k < npy; k++) {
		assert_int_equal(read_live(interps[k].bin, interps[k].lib, src, &l, got, 8, &n), 0);
		assert_int_equal(l.nwant, 2);
		snprintf(l.want[1].name, sizeof(l.want[1].name), "%s", cut);
		check_names(got, n, l.want, 2);
		assert_int_equal(strlen(cut), 62);
		stop_python(&l);
		ran++;
	}
	printf("pythreads: long names, %u interpreters ran\n", ran);
	pyinterp__need_all(ran, PYINTERP_ALL, "pythreads: long names");
}

/* No threading module: no names, no error.  Some builds import it at startup (pyenv's 3.11
 * does): then MainThread alone. */
static void test_pythreads__without_threading(void **state)
{
	static const char src[] = "import sys, os\n"
				  "sys.stdout.write('%d %s\\nend\\n' % (os.getpid(), "
				  "'threading' in sys.modules))\n"
				  "sys.stdout.flush()\n"
				  "sys.stdin.read()\n";
	size_t npy = pyinterp__all(interps, 8), n;
	struct pythread_name got[8];
	unsigned ran = 0, imported = 0;
	struct live l;

	for (size_t k = 0; k < npy; k++) {
		assert_int_equal(read_live(interps[k].bin, interps[k].lib, src, &l, got, 8, &n), 0);
		assert_int_equal(l.nwant, 1);
		if (!strcmp(l.want[0].name, "True")) {
			snprintf(l.want[0].name, sizeof(l.want[0].name), "MainThread");
			check_names(got, n, l.want, 1);
			imported++;
		} else {
			assert_string_equal(l.want[0].name, "False");
			assert_int_equal(n, 0);
		}
		stop_python(&l);
		ran++;
	}
	printf("pythreads: without threading, %u interpreters ran (%u had imported it)\n", ran,
	       imported);
	pyinterp__need_all(ran, PYINTERP_ALL, "pythreads: without threading");
}

/*
 * The symbolizer (user/sym/pynames.c) names a thread seen before threading knew it, by a
 * later read: a raw _thread thread is seen unnamed; once it registers itself (current_thread(),
 * renamed "late"), symbolizer__python_retry names it without being told of the thread again.
 */
static void test_pythreads__symbolizer_retries_a_thread_seen_unnamed(void **state)
{
	static const char src[] =
		"import sys, os, _thread, threading, time\n"
		"ready = _thread.allocate_lock(); ready.acquire()\n"
		"go = _thread.allocate_lock(); go.acquire()\n"
		"ids = []\n"
		"def f():\n"
		"    ids.append(threading.get_native_id()); ready.release()\n"
		"    go.acquire()\n"
		"    threading.current_thread().name = 'late'\n"
		"    time.sleep(60)\n"
		"_thread.start_new_thread(f, ())\n"
		"ready.acquire()\n"
		"sys.stdout.write('%d MainThread\\n%d raw\\nend\\n' % (os.getpid(), ids[0]))\n"
		"sys.stdout.flush()\n"
		"sys.stdin.readline()\n"
		"go.release()\n"
		"sys.stdin.read()\n";
	size_t npy = pyinterp__all(interps, 8);
	const char *name = NULL;
	unsigned ran = 0, tries;
	struct symbolizer *s;
	struct py_elf e;
	struct live l;
	uint32_t raw;
	uint64_t rt;

	(void)state;
	for (size_t k = 0; k < npy; k++) {
		inspect(interps[k].lib, interps[k].bin, &e);
		assert_int_equal(e.status, PY_ELF_OK);
		start_python(interps[k].bin, src, &l);
		assert_int_equal(l.nwant, 2);
		raw = l.want[1].tid;
		rt = pyinterp__load_bias(l.pid, interps[k].lib, NULL) + e.runtime;
		assert_int_equal(symbolizer__new(&s, NULL), 0);
		assert_int_equal(symbolizer__set_python(s, (uint32_t)l.pid, &e.v,
							&(struct prof_py_proc){.runtime = rt}),
				 0);
		assert_int_equal(symbolizer__python_thread(s, (uint32_t)l.pid, raw), 0);
		assert_string_equal(symbolizer__python_thread_name(s, (uint32_t)l.pid, l.pid),
				    "MainThread");
		assert_null(symbolizer__python_thread_name(s, (uint32_t)l.pid, raw));
		/* Not registered yet: a retry (100 ms on) still finds no name. */
		usleep(110 * 1000);
		assert_int_equal(symbolizer__python_retry(s), 0);
		assert_null(symbolizer__python_thread_name(s, (uint32_t)l.pid, raw));
		assert_int_equal(write(l.in, "\n", 1), 1);
		for (tries = 0; tries < 20 && !name; tries++) {
			usleep(110 * 1000);
			assert_int_equal(symbolizer__python_retry(s), 0);
			name = symbolizer__python_thread_name(s, (uint32_t)l.pid, raw);
		}
		assert_non_null(name);
		assert_string_equal(name, "late");
		name = NULL;
		symbolizer__free(s);
		stop_python(&l);
		ran++;
	}
	printf("pythreads: symbolizer retry, %u interpreters ran\n", ran);
	pyinterp__need_all(ran, PYINTERP_ALL, "pythreads: symbolizer retry");
}

/* The committed fuzz seeds hold what they were recorded from (the script's four threads),
 * and any one of their reads failing leaves an error or fewer true names, never a wrong one. */
static void test_pythreads__fuzz_seeds(void **state)
{
	static const char *const names[NTHREADS] = {"MainThread", "worker-1", "worker-2",
						    "w\xc3\xb6rker-3"};
	struct pythread_name got[16];
	unsigned ran = 0;
	glob_t g;

	assert_int_equal(glob("tests/fuzz/corpus/pythreads/py3*", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct py_version v;
		struct image im = {.fail_at = SIZE_MAX};
		size_t total, errors = 0;
		uint64_t rt;
		size_t n = 99;
		long size;
		FILE *f = fopen(g.gl_pathv[i], "r");

		assert_non_null(f);
		assert_int_equal(fseek(f, 0, SEEK_END), 0);
		size = ftell(f);
		assert_true(size > IMG_HEAD);
		rewind(f);
		im.len = (size_t)size;
		im.buf = malloc(im.len);
		assert_non_null(im.buf);
		assert_int_equal(fread(im.buf, 1, im.len, f), im.len);
		fclose(f);
		rt = image_version(&im, &v);
		assert_int_equal(pythreads__read(got, 16, &n, &v, replay_read, &im, rt), 0);
		assert_int_equal(n, NTHREADS);
		for (size_t k = 0; k < NTHREADS; k++) {
			size_t hits = 0;

			for (size_t j = 0; j < n; j++)
				hits += !strcmp(got[j].name, names[k]);
			assert_int_equal(hits, 1);
			for (size_t j = 0; j < k; j++)
				assert_int_not_equal(got[j].tid, got[k].tid);
		}

		/* Any one read failing: an error and no names, or true names (a key that cannot be
		 * read is not the one looked for: all four may remain). */
		total = im.reads;
		for (im.fail_at = 0; im.fail_at < total; im.fail_at++) {
			struct pythread_name part[16];
			size_t m = 99;
			int err;

			im.reads = 0;
			err = pythreads__read(part, 16, &m, &v, replay_read, &im, rt);
			assert_true(err <= 0);
			if (err) {
				assert_int_equal(m, 0);
				errors++;
				continue;
			}
			assert_true(m <= NTHREADS);
			for (size_t j = 0; j < m; j++) {
				size_t hits = 0;

				for (size_t k = 0; k < n; k++)
					hits += part[j].tid == got[k].tid &&
						!strcmp(part[j].name, got[k].name);
				assert_int_equal(hits, 1);
			}
		}
		/* The first read is _PyRuntime's: nothing without it. */
		assert_true(errors > 0);
		im.fail_at = 0;
		im.reads = 0;
		assert_int_equal(pythreads__read(got, 16, &n, &v, replay_read, &im, rt), -EFAULT);
		free(im.buf);
		ran++;
	}
	globfree(&g);
	/* 3.8-3.13, Debian's 3.11, and the 3.11+ walks without native_thread_id. */
	assert_int_equal(ran, 11);
}

static int never_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	(void)addr;
	(void)buf;
	(void)len;
	return -EFAULT;
}

static void test_pythreads__bad_arguments(void **state)
{
	const struct py_version *v = py_version__find(3, 12);
	struct py_version none = {.major = 3, .minor = 7};
	struct pythread_name got[2];
	size_t n = 7;

	assert_non_null(v);
	assert_int_equal(pythreads__read(got, 2, NULL, v, never_read, NULL, 0x1000), -EINVAL);
	assert_int_equal(pythreads__read(NULL, 2, &n, v, never_read, NULL, 0x1000), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(pythreads__read(got, 2, &n, NULL, never_read, NULL, 0x1000), -EINVAL);
	assert_int_equal(pythreads__read(got, 2, &n, v, NULL, NULL, 0x1000), -EINVAL);
	/* A version entry without the thread offsets. */
	assert_int_equal(pythreads__read(got, 2, &n, &none, never_read, NULL, 0x1000), -EINVAL);
	/* Nothing readable. */
	assert_int_equal(pythreads__read(got, 2, &n, v, never_read, NULL, 0x1000), -EFAULT);
	assert_int_equal(n, 0);
}

/* Every version of the table carries the offsets pythreads reads. */
static void test_pythreads__table_has_offsets(void **state)
{
	for (unsigned minor = 8; minor <= 13; minor++) {
		const struct py_version *v = py_version__find(3, minor);

		assert_non_null(v);
		assert_int_not_equal(v->obj_layout, 0);
		assert_int_not_equal(v->ts_thread_id, 0);
		assert_int_not_equal(v->is_modules, 0);
		assert_int_not_equal(v->is_tstate_head, 0);
		assert_int_equal(v->ts_native_id != 0, minor >= 11);
		assert_int_equal(v->ht_cached_keys != 0, minor >= 11);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pythreads__live_interpreters),
		cmocka_unit_test(test_pythreads__long_name_cut_at_character),
		cmocka_unit_test(test_pythreads__without_threading),
		cmocka_unit_test(test_pythreads__symbolizer_retries_a_thread_seen_unnamed),
		cmocka_unit_test(test_pythreads__fuzz_seeds),
		cmocka_unit_test(test_pythreads__bad_arguments),
		cmocka_unit_test(test_pythreads__table_has_offsets),
	};

	return cmocka_run_group_tests_name("pythreads", tests, NULL, NULL);
}
