// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind-table registry against real kernel maps (created here with the layout of
 * include/prof_unwind.h; needs root) and real child processes forked from this test (so they map
 * the same libc at the same addresses).  A row is looked up through the kernel maps exactly as
 * the BPF side will (mapping -> bias -> index chunk -> data chunk -> binary search) and compared
 * with the in-memory table of the same file.
 */
#include <bpf/bpf.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/elf_file.h"
#include "proc/maps.h"
#include "prof_unwind.h"
#include "proc/safe_open.h"
#include "unwind/unwind_table.h"
#include "unwind/unwinder.h"
#include "bpf_or_skip.h"

#define WAIT_MS	      120000 /* generous: a loaded machine, ASan; never a timing assertion */
#define ANON_MAPPINGS (PROF_UNWIND_MAX_MAPPINGS + 44) /* more executable mappings than kept */
#define CHUNK_BYTES   sizeof(struct prof_unwind_chunk)
#define CRYPTO	      "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"
#define LIBC_FALLBACK "/lib/x86_64-linux-gnu/libc.so.6"

#define NLIBS 4 /* libraries with CFI, each its own table */

static char fixdir[] = "/tmp/test_unwinder.XXXXXX";
static char nocfi_lib[256], zcopy_lib[256];
static char cfi_libs[NLIBS][256], nocfi_libs[3][256];
static bool no_bpf; /* no privileges for BPF maps outside CI: every test skips */

/* A library without CFI: its .eh_frame holds only the terminator, no FDE; no .debug_frame.
 * (Removing the section with objcopy leaves a library ld.so refuses to load.) */
static const char nocfi_src[] = "__attribute__((noinline)) int nocfi_fn(int x) { return x * 3; }\n";

/* A shared library of n functions named fK_I, compiled with flags. */
static int build_lib(const char *out, int k, int n, const char *flags)
{
	char src[300], cmd[1024];
	FILE *f;

	snprintf(src, sizeof(src), "%s/lib%d.c", fixdir, k);
	f = fopen(src, "w");
	if (!f)
		return -1;
	for (int i = 0; i < n; i++)
		fprintf(f,
			"__attribute__((noinline)) int f%d_%d(int *p, int x)\n"
			"{ int a[%d]; for (int j = 0; j < x; j++) a[j %% %d] = p[j] * %d; "
			"return a[x %% %d] + f%d_%d(p, x - 1); }\n",
			k, i, 16 + i, 16 + i, i + 3, 16 + i, k, i > 0 ? i - 1 : 0);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O2 -shared -fPIC %s %s -o %s", flags, src, out);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	char cmd[2048], src[300];
	struct link_map *lm = NULL;
	void *z;
	FILE *f;

	if (bpf_or_skip(&no_bpf))
		return -1;
	if (no_bpf)
		return 0;
	if (!mkdtemp(fixdir))
		return -1;
	snprintf(src, sizeof(src), "%s/nocfi.c", fixdir);
	snprintf(nocfi_lib, sizeof(nocfi_lib), "%s/libnocfi.so", fixdir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fputs(nocfi_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cc -O2 -shared -fPIC -fno-asynchronous-unwind-tables -fno-unwind-tables "
		 "-fno-exceptions %s -o %s",
		 src, nocfi_lib);
	if (system(cmd) != 0)
		return -1;
	/* Libraries with tables of their own (k + 2 functions each), and more without CFI. */
	for (int k = 0; k < NLIBS; k++) {
		snprintf(cfi_libs[k], sizeof(cfi_libs[k]), "%s/libcfi%d.so", fixdir, k);
		if (build_lib(cfi_libs[k], k, k + 2, ""))
			return -1;
	}
	for (int k = 0; k < 3; k++) {
		snprintf(nocfi_libs[k], sizeof(nocfi_libs[k]), "%s/libnocfi%d.so", fixdir, k);
		if (build_lib(nocfi_libs[k], 10 + k, 1,
			      "-fno-asynchronous-unwind-tables -fno-unwind-tables -fno-exceptions"))
			return -1;
	}
	/* A copy of the zlib we link (other path, other inode, same bytes). */
	z = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!z || dlinfo(z, RTLD_DI_LINKMAP, &lm) != 0)
		return -1;
	snprintf(zcopy_lib, sizeof(zcopy_lib), "%s/libz-copy.so.1", fixdir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", lm->l_name, zcopy_lib);
	dlclose(z);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	if (no_bpf)
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fixdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- the kernel maps, as the BPF programs declare them ------------------------------------ */

struct ctx {
	int procs_fd, tables_fd, files_fd;
	struct unwinder *u;
};

static void ctx_open_n(struct ctx *c, const struct unwinder_opts *base, uint32_t max_tables)
{
	LIBBPF_OPTS(bpf_map_create_opts, inner_o, .map_flags = BPF_F_INNER_MAP);
	LIBBPF_OPTS(bpf_map_create_opts, procs_o, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, outer_o);
	struct unwinder_opts o = {0};
	int tmpl;

	if (no_bpf)
		skip();
	tmpl = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unw_tmpl", 4, CHUNK_BYTES, 1, &inner_o);
	assert_true(tmpl >= 0);
	outer_o.inner_map_fd = tmpl;
	c->tables_fd =
		bpf_map_create(BPF_MAP_TYPE_HASH_OF_MAPS, "unw_tables", 4, 4, max_tables, &outer_o);
	assert_true(c->tables_fd >= 0);
	close(tmpl);
	c->procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "unw_procs", 4,
				     sizeof(struct prof_unwind_proc), PROF_MAX_TARGETS, &procs_o);
	assert_true(c->procs_fd >= 0);
	c->files_fd =
		bpf_map_create(BPF_MAP_TYPE_HASH, "unw_files", sizeof(struct prof_unwind_file_key),
			       sizeof(struct prof_unwind_file), PROF_UNWIND_FILES, &procs_o);
	assert_true(c->files_fd >= 0);
	if (base)
		o = *base;
	o.procs_fd = c->procs_fd;
	o.tables_fd = c->tables_fd;
	o.files_fd = c->files_fd;
	assert_int_equal(unwinder__new(&c->u, &o), 0);
}

static void ctx_open(struct ctx *c, const struct unwinder_opts *base)
{
	ctx_open_n(c, base, PROF_UNWIND_TABLES);
}

static void ctx_close(struct ctx *c)
{
	unwinder__free(c->u);
	close(c->procs_fd);
	close(c->tables_fd);
	close(c->files_fd);
}

static void read_entry(const struct ctx *c, uint32_t pid, struct prof_unwind_proc *out)
{
	assert_int_equal(bpf_map_lookup_elem(c->procs_fd, &pid, out), 0);
	assert_int_equal(out->flags, 0);
	for (uint32_t i = 1; i < out->nr; i++)
		assert_true(out->maps[i - 1].end <= out->maps[i].start); /* sorted, disjoint */
}

static const struct prof_unwind_mapping *entry_find(const struct prof_unwind_proc *e, uint64_t a)
{
	for (uint32_t i = 0; i < e->nr; i++)
		if (a >= e->maps[i].start && a < e->maps[i].end)
			return &e->maps[i];
	return NULL;
}

/* fd of the inner map of table id. */
static int table_fd(const struct ctx *c, uint32_t id)
{
	uint32_t inner_id;
	int fd;

	assert_int_equal(bpf_map_lookup_elem(c->tables_fd, &id, &inner_id), 0);
	fd = bpf_map_get_fd_by_id(inner_id);
	assert_true(fd >= 0);
	return fd;
}

static void read_chunk(int fd, uint32_t i, struct prof_unwind_chunk *out)
{
	assert_int_equal(bpf_map_lookup_elem(fd, &i, out), 0);
}

/*
 * The row holding at addr, searched through the kernel maps as include/prof_unwind.h describes:
 * -ENOENT like unwind_table__find when no row informs (a gap, before or after the table).
 */
static int kernel_row(const struct ctx *c, const struct prof_unwind_mapping *m, uint64_t addr,
		      struct prof_unwind_row *out)
{
	static struct prof_unwind_chunk ch;
	uint64_t tpc = addr - m->bias;
	uint32_t pc = (uint32_t)tpc, data = 0;
	long i;
	int fd;

	memset(out, 0, sizeof(*out));
	assert_true(m->table_id != 0);
	if (tpc > UINT32_MAX)
		return -ENOENT;
	fd = table_fd(c, m->table_id);
	read_chunk(fd, 0, &ch);
	if (m->nchunks > 1) {
		struct prof_unwind_index idx;
		uint32_t lo = 0, hi = m->nchunks - 1; /* pcs[< lo] <= pc, pcs[>= hi] > pc */

		memcpy(&idx, &ch, sizeof(idx));
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (idx.pcs[mid] <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0) {
			close(fd);
			return -ENOENT;
		}
		data = lo; /* index entry lo - 1 describes data chunk lo */
		read_chunk(fd, data, &ch);
	}
	close(fd);
	i = prof_unwind__search(ch.rows, PROF_UNWIND_CHUNK_ROWS, pc);
	if (i < 0 || prof_unwind_row__cfa(&ch.rows[i]) == PROF_UNWIND_CFA_NONE)
		return -ENOENT;
	*out = ch.rows[i];
	return 0;
}

/* ---- children ---------------------------------------------------------------------------- */

enum child_flags {
	CHILD_ANON_EXEC = 1 << 0, /* one anonymous executable mapping */
	CHILD_MANY_ANON = 1 << 1, /* ANON_MAPPINGS of them */
};

/* Children alive, killed after each test even when it failed half-way. */
static pid_t children[8];

struct child {
	pid_t pid;
	uint64_t anon; /* address of the (first) anonymous executable mapping */
};

/* A process forked from us (same libc, same addresses) that dlopens lib (if any) and sleeps. */
static void child_start(struct child *c, unsigned flags, const char *lib)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		uint64_t anon = 0;
		char *m;

		close(p[0]);
		if (lib && !dlopen(lib, RTLD_NOW))
			_exit(1);
		if (flags & CHILD_ANON_EXEC) {
			m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
				 0);
			if (m == MAP_FAILED)
				_exit(1);
			anon = (uintptr_t)m;
		}
		if (flags & CHILD_MANY_ANON) {
			/* Every other page executable: ANON_MAPPINGS separate mappings. */
			m = mmap(NULL, 2 * ANON_MAPPINGS * 4096, PROT_NONE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				_exit(1);
			for (int i = 0; i < ANON_MAPPINGS; i++)
				if (mprotect(m + 2 * i * 4096, 4096, PROT_READ | PROT_EXEC))
					_exit(1);
			anon = (uintptr_t)m;
		}
		if (write(p[1], &anon, sizeof(anon)) != sizeof(anon))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	for (size_t i = 0; i < sizeof(children) / sizeof(children[0]); i++)
		if (!children[i]) {
			children[i] = c->pid;
			break;
		}
	assert_int_equal(read(p[0], &c->anon, sizeof(c->anon)), sizeof(c->anon));
	close(p[0]);
}

static void child_stop(struct child *c)
{
	for (size_t i = 0; i < sizeof(children) / sizeof(children[0]); i++)
		if (children[i] == c->pid)
			children[i] = 0;
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

static int children_stop(void **state)
{
	for (size_t i = 0; i < sizeof(children) / sizeof(children[0]); i++)
		if (children[i]) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
			children[i] = 0;
		}
	return 0;
}

/* Start of the executable mapping of pid whose path is path (exactly one such mapping). */
static uint64_t exec_mapping(pid_t pid, const char *path)
{
	char mpath[64], real[PATH_MAX];
	struct maps *m;
	uint64_t start = 0;
	int n = 0;

	/* maps shows the path resolved (libz.so.1 -> /usr/lib/…/libz.so.1.2.13). */
	assert_non_null(realpath(path, real));
	path = real;
	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", pid);
	assert_int_equal(maps__read(&m, mpath), 0);
	for (size_t i = 0; i < m->count; i++)
		if (m->entries[i].exec && strcmp(m->entries[i].path, path) == 0) {
			start = m->entries[i].start;
			n++;
		}
	maps__free(m);
	assert_int_equal(n, 1);
	return start;
}

static void *libc_handle(struct link_map **lm)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	assert_non_null(h);
	assert_int_equal(dlinfo(h, RTLD_DI_LINKMAP, lm), 0);
	return h;
}

static struct unwind_table *table_of(const char *path)
{
	struct unwind_table *t = NULL;
	int fd;

	assert_int_equal(safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL), 0);
	assert_int_equal(unwind_table__build(&t, fd, NULL), 0);
	close(fd);
	return t;
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* glibc's own functions (not ASan's interceptors: looked up in libc's handle), at their entry
 * and inside: the kernel search gives the in-memory table's row. */
static void test_unwinder__libc_rows_through_kernel_maps(void **state)
{
	static const char *const fns[] = {"malloc", "strdup", "fopen"};
	struct prof_unwind_proc e;
	struct link_map *lm;
	struct unwind_table *t;
	struct child ch;
	struct ctx c;
	void *h = libc_handle(&lm);

	ctx_open(&c, NULL);
	child_start(&ch, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)ch.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	read_entry(&c, (uint32_t)ch.pid, &e);
	t = table_of(lm->l_name);
	for (size_t i = 0; i < 3; i++) {
		uint64_t addr = (uintptr_t)dlsym(h, fns[i]);
		const struct prof_unwind_mapping *m = entry_find(&e, addr);
		struct prof_unwind_row kr, mr;

		assert_true(addr != 0);
		assert_non_null(m);
		assert_true(m->table_id != 0);
		assert_true(m->nchunks > 1);
		/* At the entry: CFA = rsp + 8, the return address just pushed. */
		assert_int_equal(kernel_row(&c, m, addr, &kr), 0);
		assert_int_equal(unwind_table__find(t, &mr, addr - lm->l_addr), 0);
		assert_memory_equal(&kr, &mr, sizeof(kr));
		assert_int_equal(prof_unwind_row__cfa(&kr), PROF_UNWIND_CFA_RSP);
		assert_int_equal(kr.cfa_off, 1);
		/* Inside the body, after the prologue has moved rsp. */
		assert_int_equal(kernel_row(&c, m, addr + 24, &kr), 0);
		assert_int_equal(unwind_table__find(t, &mr, addr + 24 - lm->l_addr), 0);
		assert_memory_equal(&kr, &mr, sizeof(kr));
	}
	assert_int_equal(unwinder__stats(c.u)->table_load_failed, 0);
	assert_int_equal(unwinder__stats(c.u)->procs_failed, 0);
	unwind_table__free(t);
	dlclose(h);
	child_stop(&ch);
	ctx_close(&c);
}

/* libc's ~28k rows take 14 data chunks behind an index chunk, laid out exactly. */
static void test_unwinder__large_table_uses_index(void **state)
{
	static struct prof_unwind_chunk ch;
	struct prof_unwind_proc e;
	const struct prof_unwind_mapping *m;
	const struct prof_unwind_row *rows;
	struct prof_unwind_index idx;
	struct link_map *lm;
	struct unwind_table *t;
	uint32_t nr, ndata, key, next, inner_id;
	uint64_t bytes = 0;
	struct child cp;
	struct ctx c;
	void *h = libc_handle(&lm);
	int fd;

	ctx_open(&c, NULL);
	child_start(&cp, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)cp.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	read_entry(&c, (uint32_t)cp.pid, &e);
	m = entry_find(&e, (uintptr_t)dlsym(h, "malloc"));
	assert_non_null(m);
	t = table_of(lm->l_name);
	rows = unwind_table__rows(t, &nr);
	assert_true(nr > PROF_UNWIND_CHUNK_ROWS);
	ndata = (nr + PROF_UNWIND_CHUNK_ROWS - 1) / PROF_UNWIND_CHUNK_ROWS;
	assert_int_equal(m->nchunks, ndata + 1);
	/* bias: table pc = address - bias, with the ELF vaddr = address - l_addr. */
	assert_int_equal(m->bias, lm->l_addr + unwind_table__base(t));

	fd = table_fd(&c, m->table_id);
	read_chunk(fd, 0, &ch);
	memcpy(&idx, &ch, sizeof(idx));
	for (uint32_t k = 0; k < PROF_UNWIND_INDEX_PCS; k++)
		assert_int_equal(idx.pcs[k], k < ndata
						     ? rows[(uint64_t)k * PROF_UNWIND_CHUNK_ROWS].pc
						     : UINT32_MAX);
	for (uint32_t k = 0; k < ndata; k++) {
		read_chunk(fd, k + 1, &ch);
		for (uint32_t r = 0; r < PROF_UNWIND_CHUNK_ROWS; r++) {
			uint64_t i = (uint64_t)k * PROF_UNWIND_CHUNK_ROWS + r;
			const struct prof_unwind_row pad = {UINT32_MAX, PROF_UNWIND_CFA_NONE, 0, 0};

			assert_memory_equal(&ch.rows[r], i < nr ? &rows[i] : &pad, sizeof(pad));
		}
	}
	close(fd);

	/* table_bytes is the kernel size of every inner map loaded. */
	for (int err = bpf_map_get_next_key(c.tables_fd, NULL, &key); !err;
	     err = bpf_map_get_next_key(c.tables_fd, &key, &next), key = next) {
		struct bpf_map_info info = {0};
		uint32_t len = sizeof(info);
		int ifd;

		assert_int_equal(bpf_map_lookup_elem(c.tables_fd, &key, &inner_id), 0);
		ifd = bpf_map_get_fd_by_id(inner_id);
		assert_true(ifd >= 0);
		assert_int_equal(bpf_obj_get_info_by_fd(ifd, &info, &len), 0);
		assert_int_equal(info.value_size, CHUNK_BYTES);
		assert_int_equal(info.map_flags, BPF_F_INNER_MAP);
		bytes += (uint64_t)info.max_entries * CHUNK_BYTES;
		close(ifd);
	}
	assert_int_equal(unwinder__stats(c.u)->table_bytes, bytes);
	unwind_table__free(t);
	dlclose(h);
	child_stop(&cp);
	ctx_close(&c);
}

/* Two processes share libc's table and the vDSO's; a copy of zlib at another path (another
 * inode) shares the original's table through the content comparison. */
static void test_unwinder__tables_shared_across_processes_and_copies(void **state)
{
	struct prof_unwind_proc ea, eb;
	const struct prof_unwind_mapping *ma, *mb;
	struct link_map *lm, *zlm = NULL;
	struct child a, b;
	struct stat s1, s2;
	struct ctx c;
	void *h = libc_handle(&lm), *z = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
	uint64_t malloc_addr = (uintptr_t)dlsym(h, "malloc");

	assert_non_null(z);
	assert_int_equal(dlinfo(z, RTLD_DI_LINKMAP, &zlm), 0);
	assert_int_equal(stat(zlm->l_name, &s1), 0);
	assert_int_equal(stat(zcopy_lib, &s2), 0);
	assert_true(s1.st_ino != s2.st_ino);

	ctx_open(&c, NULL);
	child_start(&a, 0, NULL);
	child_start(&b, 0, zcopy_lib);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)a.pid, NULL), 0);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)b.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	read_entry(&c, (uint32_t)a.pid, &ea);
	read_entry(&c, (uint32_t)b.pid, &eb);

	ma = entry_find(&ea, malloc_addr);
	mb = entry_find(&eb, malloc_addr);
	assert_non_null(ma);
	assert_non_null(mb);
	assert_true(ma->table_id != 0);
	assert_int_equal(ma->table_id, mb->table_id);

	ma = entry_find(&ea, getauxval(AT_SYSINFO_EHDR));
	mb = entry_find(&eb, getauxval(AT_SYSINFO_EHDR));
	assert_non_null(ma);
	assert_non_null(mb);
	assert_true(ma->table_id != 0);
	assert_int_equal(ma->table_id, mb->table_id);

	/* b maps both the original zlib (linked) and the copy: one table for both. */
	ma = entry_find(&eb, exec_mapping(b.pid, zlm->l_name));
	mb = entry_find(&eb, exec_mapping(b.pid, zcopy_lib));
	assert_non_null(ma);
	assert_non_null(mb);
	assert_true(ma->table_id != 0);
	assert_int_equal(ma->table_id, mb->table_id);
	assert_int_equal(ma->nchunks, mb->nchunks);
	assert_true(ma->bias != mb->bias); /* loaded at other addresses */
	/* The copy is the one file whose table was shared; every other file was built once. */
	assert_int_equal(unwinder__stats(c.u)->tables_shared, 1);
	assert_int_equal(unwinder__stats(c.u)->table_load_failed, 0);

	dlclose(z);
	dlclose(h);
	child_stop(&a);
	child_stop(&b);
	ctx_close(&c);
}

/* The vDSO's table comes from process memory; anonymous executable memory has none. */
static void test_unwinder__vdso_table_and_anon_without(void **state)
{
	uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
	const struct prof_unwind_mapping *m;
	struct prof_unwind_proc e;
	struct prof_unwind_row kr, mr;
	struct unwind_table *t = NULL;
	struct elf_file *ef = NULL;
	struct elf_func fn;
	struct child ch;
	struct ctx c;
	size_t size;

	ctx_open(&c, NULL);
	child_start(&ch, CHILD_ANON_EXEC, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)ch.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	read_entry(&c, (uint32_t)ch.pid, &e);

	m = entry_find(&e, ch.anon);
	assert_non_null(m);
	assert_int_equal(m->start, ch.anon);
	assert_int_equal(m->table_id, 0);
	assert_int_equal(m->nchunks, 0);

	m = entry_find(&e, vdso);
	assert_non_null(m);
	assert_int_equal(m->start, vdso);
	assert_true(m->table_id != 0);
	size = m->end - m->start;
	assert_int_equal(unwind_table__build_mem(&t, (const void *)(uintptr_t)vdso, size, NULL), 0);
	assert_int_equal(elf_file__open_mem(&ef, (const void *)(uintptr_t)vdso, size), 0);
	assert_int_equal(elf_file__find_symbol(ef, &fn, "__vdso_clock_gettime"), 0);
	/* The vDSO is mapped whole from offset 0. */
	assert_int_equal(kernel_row(&c, m, vdso + fn.file_offset + 4, &kr), 0);
	assert_int_equal(unwind_table__find(t, &mr, fn.vaddr + 4), 0);
	assert_memory_equal(&kr, &mr, sizeof(kr));
	elf_file__free(ef);
	unwind_table__free(t);
	child_stop(&ch);
	ctx_close(&c);
}

static void test_unwinder__remove_process_deletes_entry(void **state)
{
	struct prof_unwind_proc e;
	struct child ch;
	struct ctx c;
	uint32_t pid;

	ctx_open(&c, NULL);
	child_start(&ch, 0, NULL);
	pid = (uint32_t)ch.pid;
	assert_int_equal(unwinder__add_process(c.u, pid, NULL), 0);
	read_entry(&c, pid, &e); /* written at once, before any build finished */
	assert_true(e.nr > 0);
	assert_int_equal(unwinder__remove_process(c.u, pid), 0);
	assert_int_equal(bpf_map_lookup_elem(c.procs_fd, &pid, &e), -ENOENT);
	assert_int_equal(unwinder__remove_process(c.u, pid), -ENOENT);
	/* Results for its files still arrive and load; no entry comes back. */
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(bpf_map_lookup_elem(c.procs_fd, &pid, &e), -ENOENT);
	child_stop(&ch);
	assert_int_equal(unwinder__add_process(c.u, pid, NULL), -ENOENT);
	ctx_close(&c);
}

/* A file without CFI: counted once, table id 0, never rebuilt. */
static void test_unwinder__file_without_cfi_counted_once(void **state)
{
	struct prof_unwind_proc e;
	const struct prof_unwind_mapping *m;
	struct unwind_table *t = NULL;
	uint64_t failed, malloc_addr;
	struct link_map *lm;
	struct child a, b;
	struct ctx c;
	void *h = libc_handle(&lm);
	int fd;

	malloc_addr = (uintptr_t)dlsym(h, "malloc");
	/* The fixture really has no CFI for the builder. */
	assert_int_equal(safe_open__at(&fd, -1, nocfi_lib, 0, SAFE_OPEN_ELF_MAX, NULL), 0);
	assert_int_equal(unwind_table__build(&t, fd, NULL), -ENODATA);
	close(fd);

	ctx_open(&c, NULL);
	child_start(&a, 0, NULL);
	child_start(&b, 0, nocfi_lib);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)a.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	failed = unwinder__stats(c.u)->table_build_failed;

	assert_int_equal(unwinder__add_process(c.u, (uint32_t)b.pid, NULL), 0);
	assert_int_equal(unwinder__pending(c.u), 1); /* only the new library */
	/* Building: a stack cut there is counted as "not yet" (unwind_no_table_yet). */
	read_entry(&c, (uint32_t)b.pid, &e);
	m = entry_find(&e, exec_mapping(b.pid, nocfi_lib));
	assert_non_null(m);
	assert_int_equal(m->table_id, 0);
	assert_int_equal(m->nchunks, PROF_UNWIND_NONE_YET);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->table_build_failed, failed + 1);
	read_entry(&c, (uint32_t)b.pid, &e);
	m = entry_find(&e, exec_mapping(b.pid, nocfi_lib));
	assert_non_null(m);
	assert_int_equal(m->table_id, 0);
	assert_int_equal(m->nchunks, PROF_UNWIND_NONE_NEVER); /* failed: none will come */
	m = entry_find(&e, malloc_addr);
	assert_non_null(m);
	assert_true(m->table_id != 0);

	/* Refreshing the process builds nothing again. */
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)b.pid, NULL), 0);
	assert_int_equal(unwinder__pending(c.u), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->table_build_failed, failed + 1);
	dlclose(h);
	child_stop(&a);
	child_stop(&b);
	ctx_close(&c);
}

/* Past PROF_UNWIND_MAX_MAPPINGS, anonymous mappings go first and every drop is counted. */
static void test_unwinder__too_many_mappings_keep_files(void **state)
{
	struct prof_unwind_proc e;
	const struct prof_unwind_mapping *m;
	struct link_map *lm;
	uint32_t nexec = 0, nfile = 0;
	char mpath[64];
	struct maps *mp;
	struct child ch;
	struct ctx c;
	void *h = libc_handle(&lm);

	ctx_open(&c, NULL);
	child_start(&ch, CHILD_MANY_ANON, NULL);
	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", ch.pid);
	assert_int_equal(maps__read(&mp, mpath), 0);
	for (size_t i = 0; i < mp->count; i++)
		if (mp->entries[i].exec && strcmp(mp->entries[i].path, "[vsyscall]") != 0) {
			nexec++;
			nfile += mp->entries[i].path[0] != '\0';
		}
	maps__free(mp);
	assert_true(nexec >= ANON_MAPPINGS + 2);

	assert_int_equal(unwinder__add_process(c.u, (uint32_t)ch.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	read_entry(&c, (uint32_t)ch.pid, &e);
	assert_int_equal(e.nr, PROF_UNWIND_MAX_MAPPINGS);
	assert_int_equal(unwinder__stats(c.u)->mappings_dropped, nexec - PROF_UNWIND_MAX_MAPPINGS);
	m = entry_find(&e, (uintptr_t)dlsym(h, "malloc"));
	assert_non_null(m);
	assert_true(m->table_id != 0);
	m = entry_find(&e, getauxval(AT_SYSINFO_EHDR));
	assert_non_null(m);
	/* Every file-backed mapping kept, the anonymous ones fill the rest. */
	nexec = 0;
	for (uint32_t i = 0; i < e.nr; i++)
		nexec += e.maps[i].start >= ch.anon &&
			 e.maps[i].start < ch.anon + 2 * ANON_MAPPINGS * 4096;
	assert_int_equal(nexec, PROF_UNWIND_MAX_MAPPINGS - nfile);
	dlclose(h);
	child_stop(&ch);
	ctx_close(&c);
}

/* With room for one queued build, the files past it are deferred and still all get tables. */
static void test_unwinder__queue_cap_defers_files(void **state)
{
	struct unwinder_opts o = {.max_queued = 1};
	struct prof_unwind_proc e;
	uint32_t nfile = 0;
	char mpath[64];
	struct maps *mp;
	struct child ch;
	struct ctx c;

	ctx_open(&c, &o);
	child_start(&ch, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)ch.pid, NULL), 0);
	/* The vDSO (no descriptor held) and one file queued, the rest deferred. */
	assert_true(unwinder__pending(c.u) > 2);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__pending(c.u), 0);
	read_entry(&c, (uint32_t)ch.pid, &e);
	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", ch.pid);
	assert_int_equal(maps__read(&mp, mpath), 0);
	for (size_t i = 0; i < mp->count; i++) {
		const struct maps_entry *me = &mp->entries[i];
		const struct prof_unwind_mapping *m;

		if (!me->exec || me->path[0] != '/')
			continue;
		nfile++;
		m = entry_find(&e, me->start);
		assert_non_null(m);
		if (m->table_id == 0)
			fail_msg("%s: no table", me->path);
	}
	maps__free(mp);
	assert_true(nfile > 2);
	assert_int_equal(unwinder__stats(c.u)->table_build_failed, 0);
	assert_int_equal(unwinder__stats(c.u)->files_refused, 0);
	child_stop(&ch);
	ctx_close(&c);
}

/* A full table map refuses tables: each refusal counted, those mappings left to frame
 * pointers, every file accounted for exactly once. */
static void test_unwinder__table_map_full_counted(void **state)
{
	const struct unwinder_stats *st;
	struct prof_unwind_proc e;
	uint32_t files, ids[2] = {0}, nids = 0;
	struct child ch;
	struct ctx c;

	ctx_open_n(&c, NULL, 2);
	child_start(&ch, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)ch.pid, NULL), 0);
	files = unwinder__pending(c.u);
	assert_true(files > 3);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	st = unwinder__stats(c.u);
	assert_int_equal(st->tables_built, 2);
	assert_true(st->table_load_failed > 0);
	assert_int_equal(st->tables_built + st->tables_shared + st->table_load_failed +
				 st->table_build_failed,
			 files);
	read_entry(&c, (uint32_t)ch.pid, &e);
	for (uint32_t i = 0; i < e.nr; i++) {
		uint32_t id = e.maps[i].table_id;

		if (id == 0 || id == ids[0] || id == ids[1])
			continue;
		assert_true(nids < 2);
		ids[nids++] = id;
	}
	assert_int_equal(nids, 2);
	child_stop(&ch);
	ctx_close(&c);
}

/* The build hook holds the worker inside a build until the test lets it go. */
struct hold {
	int entered[2], release[2];
};

static void hold_build(void *arg)
{
	struct hold *h = arg;
	char x = 1;

	if (write(h->entered[1], &x, 1) != 1 || read(h->release[0], &x, 1) != 1)
		abort();
}

/* poll returns while a (libcrypto-sized) build is in progress; the table loads afterwards. */
static void test_unwinder__poll_never_waits_for_a_build(void **state)
{
	struct hold hold;
	struct unwinder_opts o = {.build_hook = hold_build, .build_hook_arg = &hold};
	const char *path = access(CRYPTO, R_OK) == 0 ? CRYPTO : LIBC_FALLBACK;
	struct ctx c;
	char x = 0;
	int fd;

	assert_int_equal(pipe(hold.entered), 0);
	assert_int_equal(pipe(hold.release), 0);
	ctx_open(&c, &o);
	assert_int_equal(safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL), 0);
	assert_int_equal(unwinder__prepare(c.u, fd, NULL), 0);
	assert_int_equal(unwinder__prepare(c.u, fd, NULL), 0); /* known already: not queued twice */
	close(fd);
	assert_int_equal(read(hold.entered[0], &x, 1), 1); /* the worker is in the build */

	assert_int_equal(unwinder__poll(c.u), 0);
	assert_int_equal(unwinder__pending(c.u), 1);
	assert_int_equal(unwinder__stats(c.u)->tables_built, 0);
	assert_int_equal(unwinder__wait(c.u, 0), -ETIMEDOUT);

	assert_int_equal(write(hold.release[1], &x, 1), 1);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__pending(c.u), 0);
	assert_int_equal(unwinder__stats(c.u)->tables_built, 1);
	assert_int_equal(unwinder__stats(c.u)->table_build_failed, 0);
	ctx_close(&c);
	close(hold.entered[0]);
	close(hold.entered[1]);
	close(hold.release[0]);
	close(hold.release[1]);
}

/* The build hook records the worker's own nice at each build. */
static void nice_build(void *arg)
{
	errno = 0;
	*(int *)arg = getpriority(PRIO_PROCESS, 0);
}

/* Prepare path and poll (never wait) until its table is in. */
static void build_polled(struct ctx *c, const char *path)
{
	int fd, tries = 0;

	assert_int_equal(safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL), 0);
	assert_int_equal(unwinder__prepare(c->u, fd, NULL), 0);
	close(fd);
	while (unwinder__pending(c->u)) {
		assert_true(unwinder__poll(c->u) >= 0);
		assert_true(++tries < WAIT_MS); /* a build that never ends, not a timing */
		usleep(1000);
	}
}

/*
 * The worker builds at nice 19 while nobody waits on it, at the caller's nice while processes
 * are held for its builds (unwinder__set_urgent) or a caller blocks in unwinder__wait.
 */
static void test_unwinder__worker_background_unless_waited_on(void **state)
{
	int nice = -100;
	struct unwinder_opts o = {.build_hook = nice_build, .build_hook_arg = &nice};
	struct ctx c;
	int fd;

	if (geteuid())
		skip(); /* going back up needs CAP_SYS_NICE */
	unsetenv("BPFTRACE_PROF_WORKER_NICE");
	assert_int_equal(getpriority(PRIO_PROCESS, 0), 0);
	ctx_open(&c, &o);
	build_polled(&c, cfi_libs[0]);
	assert_int_equal(nice, 19);

	unwinder__set_urgent(c.u, true);
	build_polled(&c, cfi_libs[1]);
	assert_int_equal(nice, 0);
	unwinder__set_urgent(c.u, false);

	assert_int_equal(safe_open__at(&fd, -1, cfi_libs[2], 0, SAFE_OPEN_ELF_MAX, NULL), 0);
	assert_int_equal(unwinder__prepare(c.u, fd, NULL), 0);
	close(fd);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(nice, 0);

	build_polled(&c, cfi_libs[3]);
	assert_int_equal(nice, 19); /* lowered again once nobody waits */
	assert_int_equal(unwinder__stats(c.u)->tables_built, 4);
	ctx_close(&c);
}

/* Catching up (a wide scope's start): the first builds at the caller's nice, the ones after
 * they are in at 19. */
static void test_unwinder__catch_up_then_background(void **state)
{
	int nice = -100;
	struct unwinder_opts o = {
		.build_hook = nice_build, .build_hook_arg = &nice, .catch_up = true};
	struct ctx c;

	if (geteuid())
		skip();
	unsetenv("BPFTRACE_PROF_WORKER_NICE");
	ctx_open(&c, &o);
	build_polled(&c, cfi_libs[0]);
	assert_int_equal(nice, 0);
	build_polled(&c, cfi_libs[1]);
	assert_int_equal(nice, 19);
	ctx_close(&c);
}

/* ---- eviction ------------------------------------------------------------------------------ */

/* Tables in the outer map, counted by walking its keys. */
static uint32_t outer_count(const struct ctx *c)
{
	uint32_t key = 0, next, n = 0;
	const uint32_t *prev = NULL;

	while (bpf_map_get_next_key(c->tables_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

static bool outer_has(const struct ctx *c, uint32_t id)
{
	uint32_t inner_id;

	return bpf_map_lookup_elem(c->tables_fd, &id, &inner_id) == 0;
}

/* Every table id named by any process entry is loaded. */
static void assert_entries_name_loaded_tables(const struct ctx *c)
{
	static struct prof_unwind_proc e;
	uint32_t key = 0, next, n = 0;
	const uint32_t *prev = NULL;

	while (bpf_map_get_next_key(c->procs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		assert_int_equal(bpf_map_lookup_elem(c->procs_fd, &key, &e), 0);
		for (uint32_t i = 0; i < e.nr; i++)
			if (e.maps[i].table_id && !outer_has(c, e.maps[i].table_id))
				fail_msg("pid %u names table %u, not loaded", key,
					 e.maps[i].table_id);
		n++;
	}
	assert_true(n > 0);
}

/* The inode entry of path: its table id, or 0 when there is none. */
static uint32_t inode_table(const struct ctx *c, const char *path)
{
	struct prof_unwind_file_key k;
	struct prof_unwind_file v;
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	k.dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
	k.ino = st.st_ino;
	return bpf_map_lookup_elem(c->files_fd, &k, &v) == 0 ? v.table_id : 0;
}

/* A child mapping lib, read by the unwinder, its tables loaded: the table id of lib's mapping. */
static uint32_t child_with(struct ctx *c, struct child *ch, const char *lib)
{
	struct prof_unwind_proc e;
	const struct prof_unwind_mapping *m;

	child_start(ch, 0, lib);
	assert_int_equal(unwinder__add_process(c->u, (uint32_t)ch->pid, NULL), 0);
	assert_int_equal(unwinder__wait(c->u, WAIT_MS), 0);
	read_entry(c, (uint32_t)ch->pid, &e);
	m = entry_find(&e, exec_mapping(ch->pid, lib));
	assert_non_null(m);
	return m->table_id;
}

static void child_gone(struct ctx *c, struct child *ch)
{
	assert_int_equal(unwinder__remove_process(c->u, (uint32_t)ch->pid), 0);
	child_stop(ch);
}

static uint32_t files_count(const struct ctx *c)
{
	struct prof_unwind_file_key k, next, *prev = NULL;
	uint32_t n = 0;

	while (bpf_map_get_next_key(c->files_fd, prev, &next) == 0) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}

/*
 * The tables finished by one poll go into the table map in one batch: the kernel waits an RCU
 * grace period at each insert into a map of maps (10-20 ms here), 300 times for `import torch`
 * one by one.  Three builds done and a fourth held in its hook: the poll inserts three with one
 * wait (load_waits 1), each findable by its inode.
 */
static void test_unwinder__tables_of_one_poll_inserted_together(void **state)
{
	struct hold hold;
	struct unwinder_opts o = {.build_hook = hold_build, .build_hook_arg = &hold};
	struct ctx c;
	char x = 0;
	int fd;

	assert_int_equal(pipe(hold.entered), 0);
	assert_int_equal(pipe(hold.release), 0);
	ctx_open(&c, &o);
	for (int k = 0; k < NLIBS; k++) {
		assert_int_equal(safe_open__at(&fd, -1, cfi_libs[k], 0, SAFE_OPEN_ELF_MAX, NULL),
				 0);
		assert_int_equal(unwinder__prepare(c.u, fd, NULL), 0);
		close(fd);
	}
	/* Builds run in queue order: the fourth's hook entered means three are done. */
	for (int k = 0; k < NLIBS; k++) {
		if (k)
			assert_int_equal(write(hold.release[1], &x, 1), 1);
		assert_int_equal(read(hold.entered[0], &x, 1), 1);
	}
	assert_int_equal(unwinder__poll(c.u), NLIBS - 1);
	assert_int_equal(unwinder__stats(c.u)->tables_built, NLIBS - 1);
	assert_int_equal(unwinder__stats(c.u)->load_waits, 1);
	assert_int_equal(outer_count(&c), NLIBS - 1);
	assert_int_equal(files_count(&c), NLIBS - 1); /* published once inserted */

	assert_int_equal(write(hold.release[1], &x, 1), 1);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->tables_built, NLIBS);
	assert_int_equal(unwinder__stats(c.u)->load_waits, 2);
	assert_int_equal(unwinder__stats(c.u)->table_load_failed, 0);
	ctx_close(&c);
	close(hold.entered[0]);
	close(hold.entered[1]);
	close(hold.release[0]);
	close(hold.release[1]);
}

/*
 * A base process read by the unwinder, then three children each mapping one of cfi_libs[0..2]
 * (their tables' ids in ids, each findable by inode): the tables loaded before the children.
 */
static uint32_t base_and_three_libs(struct ctx *c, struct child *base, struct child *ch,
				    uint32_t *ids)
{
	uint32_t n0;

	child_start(base, 0, NULL);
	assert_int_equal(unwinder__add_process(c->u, (uint32_t)base->pid, NULL), 0);
	assert_int_equal(unwinder__wait(c->u, WAIT_MS), 0);
	n0 = outer_count(c);
	assert_int_equal(n0, unwinder__stats(c->u)->tables_built);
	for (int k = 0; k < 3; k++) {
		ids[k] = child_with(c, &ch[k], cfi_libs[k]);
		assert_true(ids[k] != 0);
		assert_int_equal(inode_table(c, cfi_libs[k]), ids[k]);
	}
	return n0;
}

/*
 * base_and_three_libs's children gone: of the three unused tables the cap (1) keeps the newest,
 * the two others go in one batch, one kernel wait (a grace period), not one each.
 */
static void three_gone_two_evicted(struct ctx *c, struct child *ch, uint32_t n0,
				   const uint32_t *ids)
{
	for (int k = 0; k < 3; k++)
		child_gone(c, &ch[k]);
	assert_int_equal(unwinder__wait(c->u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c->u)->tables_evicted, 2);
	assert_int_equal(unwinder__stats(c->u)->evict_waits, 1);
	assert_int_equal(outer_count(c), n0 + 1);
	assert_true(outer_has(c, ids[2]));
}

/*
 * Processes mapping other libraries come and go: the tables nobody maps are unloaded down to the
 * cap, oldest first, together, their inode entries with them; a new table takes the first evicted
 * id; an evicted library mapped again is rebuilt (under the next evicted id) with the same rows.
 */
static void test_unwinder__unused_tables_evicted_ids_reused(void **state)
{
	struct unwinder_opts o = {.max_unused_tables = 1};
	const struct prof_unwind_mapping *m;
	const struct prof_unwind_row *rows;
	struct prof_unwind_proc e;
	struct unwind_table *t;
	struct child base, ch[NLIBS], again;
	uint32_t ids[NLIBS], n0, built, nr;
	struct ctx c;

	ctx_open(&c, &o);
	n0 = base_and_three_libs(&c, &base, ch, ids);
	assert_int_equal(outer_count(&c), n0 + 3);
	assert_int_equal(unwinder__stats(c.u)->tables_built, n0 + 3);

	three_gone_two_evicted(&c, ch, n0, ids);
	assert_false(outer_has(&c, ids[0]));
	assert_false(outer_has(&c, ids[1]));
	assert_int_equal(inode_table(&c, cfi_libs[0]), 0);
	assert_int_equal(inode_table(&c, cfi_libs[1]), 0);
	assert_int_equal(inode_table(&c, cfi_libs[2]), ids[2]);
	assert_int_equal(unwinder__stats(c.u)->files_forgotten, 2);
	assert_entries_name_loaded_tables(&c);

	/* A new table takes the id evicted first. */
	ids[3] = child_with(&c, &ch[3], cfi_libs[3]);
	assert_int_equal(ids[3], ids[0]);
	assert_int_equal(outer_count(&c), n0 + 2);

	/* libcfi0 again: forgotten, so built again, under the other evicted id. */
	built = unwinder__stats(c.u)->tables_built;
	assert_int_equal(child_with(&c, &again, cfi_libs[0]), ids[1]);
	assert_int_equal(unwinder__stats(c.u)->tables_built, built + 1);
	assert_int_equal(unwinder__stats(c.u)->tables_shared, 0);
	assert_int_equal(inode_table(&c, cfi_libs[0]), ids[1]);
	assert_int_equal(outer_count(&c), n0 + 3);
	assert_entries_name_loaded_tables(&c);
	/* Every row of a fresh build, found through the kernel maps. */
	read_entry(&c, (uint32_t)again.pid, &e);
	m = entry_find(&e, exec_mapping(again.pid, cfi_libs[0]));
	assert_non_null(m);
	t = table_of(cfi_libs[0]);
	rows = unwind_table__rows(t, &nr);
	assert_true(nr > 4);
	for (uint32_t i = 0; i < nr; i++) {
		struct prof_unwind_row kr;
		int err = kernel_row(&c, m, m->bias + rows[i].pc, &kr);

		if (prof_unwind_row__cfa(&rows[i]) == PROF_UNWIND_CFA_NONE) {
			assert_int_equal(err, -ENOENT);
			continue;
		}
		assert_int_equal(err, 0);
		assert_memory_equal(&kr, &rows[i], sizeof(kr));
	}
	assert_int_equal(unwinder__stats(c.u)->table_load_failed, 0);
	assert_int_equal(unwinder__stats(c.u)->procs_failed, 0);
	unwind_table__free(t);
	child_stop(&again);
	child_stop(&ch[3]);
	child_stop(&base);
	ctx_close(&c);
}

/*
 * An eviction batch the kernel stops at its first table (already gone from the outer map) waited
 * for nothing: the waits counted are the one-by-one deletes that took a table (one), not the
 * refused batch and every delete besides (three before).
 */
static void test_unwinder__refused_evict_batch_counts_real_waits(void **state)
{
	struct unwinder_opts o = {.max_unused_tables = 1};
	struct child base, ch[3];
	uint32_t ids[3], n0;
	struct ctx c;

	ctx_open(&c, &o);
	n0 = base_and_three_libs(&c, &base, ch, ids);
	/* The oldest, first in the batch, leaves the outer map behind the unwinder's back. */
	assert_int_equal(bpf_map_delete_elem(c.tables_fd, &ids[0]), 0);
	three_gone_two_evicted(&c, ch, n0, ids);
	child_stop(&base);
	ctx_close(&c);
}

/*
 * An entry we did not write (the BPF fork handler's copy of a parent's entry) keeps the table it
 * names loaded after every process record mapping it is gone; once it goes, the table is
 * evicted at the next pass.
 */
static void test_unwinder__forked_copy_keeps_table(void **state)
{
	struct unwinder_opts o = {.max_unused_tables = 1};
	static struct prof_unwind_proc e;
	struct child base, a, b, d;
	uint32_t id_a, id_b, id_d, n0, fake = 0x3ffffff0;
	struct ctx c;

	ctx_open(&c, &o);
	child_start(&base, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	n0 = outer_count(&c);
	id_a = child_with(&c, &a, cfi_libs[0]);
	read_entry(&c, (uint32_t)a.pid, &e);
	assert_int_equal(bpf_map_update_elem(c.procs_fd, &fake, &e, BPF_NOEXIST), 0);
	child_gone(&c, &a);
	id_b = child_with(&c, &b, cfi_libs[1]);
	child_gone(&c, &b);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	/* Two unused, one of them named by the copy: nothing over the cap. */
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, 0);
	assert_true(outer_has(&c, id_a));
	assert_true(outer_has(&c, id_b));
	assert_entries_name_loaded_tables(&c);

	/* The copy's process exits (its pid was never ours). */
	assert_int_equal(bpf_map_delete_elem(c.procs_fd, &fake), 0);
	assert_int_equal(unwinder__remove_process(c.u, fake), -ENOENT);
	id_d = child_with(&c, &d, cfi_libs[2]);
	child_gone(&c, &d);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, 2);
	assert_false(outer_has(&c, id_a));
	assert_false(outer_has(&c, id_b));
	assert_true(outer_has(&c, id_d));
	assert_int_equal(outer_count(&c), n0 + 1);
	assert_entries_name_loaded_tables(&c);
	child_stop(&base);
	ctx_close(&c);
}

/* The byte cap alone: every unused table is over one byte; the vDSO's and those in use stay. */
static void test_unwinder__unused_bytes_cap(void **state)
{
	struct unwinder_opts o = {.max_unused_bytes = 1};
	struct child base, a;
	uint64_t bytes;
	uint32_t n0, id;
	struct ctx c;

	ctx_open(&c, &o);
	child_start(&base, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	n0 = outer_count(&c);
	bytes = unwinder__stats(c.u)->table_bytes;
	id = child_with(&c, &a, cfi_libs[1]);
	assert_int_equal(unwinder__stats(c.u)->table_bytes, bytes + CHUNK_BYTES);
	child_gone(&c, &a);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_false(outer_has(&c, id));
	assert_int_equal(outer_count(&c), n0);
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, 1);
	assert_int_equal(unwinder__stats(c.u)->table_bytes, bytes);
	/* The base process's tables, the vDSO's among them, all stay. */
	child_gone(&c, &base);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(outer_count(&c), 1);
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, n0);
	ctx_close(&c);
}

/* A full table map makes room by unloading an unused table (under the cap) for a new one. */
static void test_unwinder__full_table_map_evicts_unused(void **state)
{
	struct child base, a, b;
	uint32_t n0, id_a, id_b;
	struct ctx c;

	/* How many tables the base process needs, in a context of its own. */
	ctx_open(&c, NULL);
	child_start(&base, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	n0 = outer_count(&c);
	ctx_close(&c);

	ctx_open_n(&c, NULL, n0 + 1);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(outer_count(&c), n0);
	id_a = child_with(&c, &a, cfi_libs[0]);
	child_gone(&c, &a);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, 0); /* under the default cap */
	id_b = child_with(&c, &b, cfi_libs[1]);
	assert_int_equal(unwinder__stats(c.u)->table_load_failed, 0);
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, 1);
	assert_int_equal(id_b, id_a);
	assert_int_equal(outer_count(&c), n0 + 1);
	assert_entries_name_loaded_tables(&c);
	child_stop(&b);
	child_stop(&base);
	ctx_close(&c);
}

/* Records of files without a table, once no process maps them, are forgotten past the cap,
 * oldest first: mapped again, a forgotten one is tried again, a remembered one is not. */
static void test_unwinder__idle_file_records_bounded(void **state)
{
	struct unwinder_opts o = {.max_idle_files = 1};
	struct child base, ch[3], again;
	uint64_t failed;
	struct ctx c;

	ctx_open(&c, &o);
	child_start(&base, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	failed = unwinder__stats(c.u)->table_build_failed;
	for (int k = 0; k < 3; k++)
		assert_int_equal(child_with(&c, &ch[k], nocfi_libs[k]), 0);
	assert_int_equal(unwinder__stats(c.u)->table_build_failed, failed + 3);
	assert_int_equal(unwinder__stats(c.u)->files_forgotten, 0);
	for (int k = 0; k < 3; k++)
		child_gone(&c, &ch[k]);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->files_forgotten, 2);
	assert_int_equal(unwinder__stats(c.u)->tables_evicted, 0);

	/* The newest is remembered: nothing to build. */
	child_start(&again, 0, nocfi_libs[2]);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)again.pid, NULL), 0);
	assert_int_equal(unwinder__pending(c.u), 0);
	child_gone(&c, &again);
	/* The oldest was forgotten: tried (and counted) again. */
	child_start(&again, 0, nocfi_libs[0]);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)again.pid, NULL), 0);
	assert_int_equal(unwinder__pending(c.u), 1);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(unwinder__stats(c.u)->table_build_failed, failed + 4);
	child_stop(&again);
	child_stop(&base);
	ctx_close(&c);
}

/*
 * The budget for all loaded tables: a table that would pass it first unloads the unused ones
 * (oldest first); when none is left it is refused and counted, its mapping left to frame
 * pointers, and the loaded bytes never pass the budget.
 */
static void test_unwinder__table_budget(void **state)
{
	struct unwinder_opts o = {0};
	const struct unwinder_stats *st;
	struct child base, a, b, d;
	uint64_t bytes;
	uint32_t id_a, id_d;
	struct ctx c;

	/* What the base process's tables take, in a context of its own. */
	ctx_open(&c, NULL);
	child_start(&base, 0, NULL);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	bytes = unwinder__stats(c.u)->table_bytes;
	assert_true(bytes > CHUNK_BYTES);
	ctx_close(&c);

	/* Room for those and one library's table (one chunk). */
	o.max_table_bytes = bytes + CHUNK_BYTES;
	ctx_open(&c, &o);
	st = unwinder__stats(c.u);
	assert_int_equal(unwinder__add_process(c.u, (uint32_t)base.pid, NULL), 0);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_int_equal(st->table_bytes, bytes);
	id_a = child_with(&c, &a, cfi_libs[0]);
	assert_true(id_a != 0);
	assert_int_equal(st->table_bytes, bytes + CHUNK_BYTES);
	assert_int_equal(st->tables_over_budget, 0);

	/* Full, and every table in use: refused, frame pointers there. */
	assert_int_equal(child_with(&c, &b, cfi_libs[1]), 0);
	assert_int_equal(st->tables_over_budget, 1);
	assert_int_equal(st->table_bytes, bytes + CHUNK_BYTES);
	assert_int_equal(st->table_load_failed, 0);
	assert_int_equal(inode_table(&c, cfi_libs[1]), 0);

	/* a's table unused (under the unused caps, so still loaded): unloaded for the next one. */
	child_gone(&c, &a);
	assert_int_equal(unwinder__wait(c.u, WAIT_MS), 0);
	assert_true(outer_has(&c, id_a));
	id_d = child_with(&c, &d, cfi_libs[2]);
	assert_true(id_d != 0);
	assert_int_equal(st->tables_evicted, 1);
	assert_int_equal(inode_table(&c, cfi_libs[0]), 0); /* a's file forgotten with its table */
	assert_int_equal(inode_table(&c, cfi_libs[2]), id_d);
	assert_int_equal(st->tables_over_budget, 1);
	assert_int_equal(st->table_bytes, bytes + CHUNK_BYTES);
	assert_entries_name_loaded_tables(&c);
	child_stop(&d);
	child_stop(&b);
	child_stop(&base);
	ctx_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_unwinder__libc_rows_through_kernel_maps,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__large_table_uses_index, children_stop),
		cmocka_unit_test_teardown(test_unwinder__tables_shared_across_processes_and_copies,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__vdso_table_and_anon_without,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__remove_process_deletes_entry,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__file_without_cfi_counted_once,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__too_many_mappings_keep_files,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__queue_cap_defers_files, children_stop),
		cmocka_unit_test_teardown(test_unwinder__table_map_full_counted, children_stop),
		cmocka_unit_test_teardown(test_unwinder__worker_background_unless_waited_on,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__catch_up_then_background, children_stop),
		cmocka_unit_test_teardown(test_unwinder__poll_never_waits_for_a_build,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__unused_tables_evicted_ids_reused,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__refused_evict_batch_counts_real_waits,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__forked_copy_keeps_table, children_stop),
		cmocka_unit_test_teardown(test_unwinder__unused_bytes_cap, children_stop),
		cmocka_unit_test_teardown(test_unwinder__full_table_map_evicts_unused,
					  children_stop),
		cmocka_unit_test_teardown(test_unwinder__idle_file_records_bounded, children_stop),
		cmocka_unit_test_teardown(test_unwinder__table_budget, children_stop),
		cmocka_unit_test_teardown(test_unwinder__tables_of_one_poll_inserted_together,
					  children_stop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
