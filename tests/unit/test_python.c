// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython discovery against the real interpreters installed here: pyenv's 3.6–3.13 and Debian's
 * /usr/bin/python3.11 (found by pyinterp.h).  The oracles are
 * independent of the code under test: structure offsets from a program compiled against each
 * version's own headers, symbols from `readelf -sW`, section bytes through libelf here, and a
 * live interpreter read through /proc/PID/mem.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/python.h"

#include "pyinterp.h"

#define DEBIAN_PY    PYINTERP_DEBIAN
#define DEBIAN_LIBPY "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"

static char tmpdir[64];

static void make_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/prof-test-python.XXXXXX");
		assert_non_null(mkdtemp(tmpdir));
	}
}

static void remove_tmpdir(void)
{
	char cmd[128];

	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		assert_int_equal(system(cmd), 0);
	}
}

/* ---- offsets: each version's headers ------------------------------------------------------- */

/*
 * Prints "name value" for every offset our table holds, compiled against one version's headers
 * (internal ones with Py_BUILD_CORE) and linked with its libpython for PyCode_Type.tp_basicsize.
 */
static const char oracle_src[] =
	"#include <Python.h>\n"
	"#include <stddef.h>\n"
	"#include <stdio.h>\n"
	"#if PY_MINOR_VERSION <= 10\n"
	"#include <frameobject.h>\n"
	"#endif\n"
	"#if PY_MINOR_VERSION == 8\n"
	"#include \"pycore_pystate.h\"\n"
	"#else\n"
	"#include \"pycore_runtime.h\"\n"
	"#include \"pycore_interp.h\"\n"
	"#endif\n"
	"#if PY_MINOR_VERSION >= 11\n"
	"#include \"pycore_frame.h\"\n"
	"#include \"pycore_code.h\"\n"
	"#endif\n"
	"#include \"pycore_gil.h\"\n"
	"#if PY_MINOR_VERSION >= 11\n"
	"#include \"pycore_dict.h\"\n"
	"#endif\n"
	"#define P(n, e) printf(\"%s %zu\\n\", n, (size_t)(e))\n"
	"int main(void)\n"
	"{\n"
	"#if PY_MINOR_VERSION <= 11\n"
	"	P(\"tss\", offsetof(_PyRuntimeState, gilstate.autoTSSkey));\n"
	"	P(\"gil_holder\", offsetof(_PyRuntimeState, gilstate.tstate_current));\n"
	"#else\n"
	"	P(\"tss\", offsetof(_PyRuntimeState, autoTSSkey));\n"
	"	P(\"interp_gil\", offsetof(PyInterpreterState, ceval.gil));\n"
	"	P(\"gil_locked\", offsetof(struct _gil_runtime_state, locked));\n"
	"	P(\"gil_last_holder\", offsetof(struct _gil_runtime_state, last_holder));\n"
	"#endif\n"
	"	P(\"ts_interp\", offsetof(PyThreadState, interp));\n"
	"#if PY_MINOR_VERSION <= 10\n"
	"	P(\"ts_frame\", offsetof(PyThreadState, frame));\n"
	"	P(\"fr_code\", offsetof(PyFrameObject, f_code));\n"
	"	P(\"fr_back\", offsetof(PyFrameObject, f_back));\n"
	"	P(\"fr_instr\", offsetof(PyFrameObject, f_lasti));\n"
	"#else\n"
	"#if PY_MINOR_VERSION <= 12\n"
	"	P(\"ts_frame\", offsetof(PyThreadState, cframe));\n"
	"	P(\"cf_current\", offsetof(_PyCFrame, current_frame));\n"
	"	P(\"fr_code\", offsetof(_PyInterpreterFrame, f_code));\n"
	"	P(\"fr_instr\", offsetof(_PyInterpreterFrame, prev_instr));\n"
	"#else\n"
	"	P(\"ts_frame\", offsetof(PyThreadState, current_frame));\n"
	"	P(\"fr_code\", offsetof(_PyInterpreterFrame, f_executable));\n"
	"	P(\"fr_instr\", offsetof(_PyInterpreterFrame, instr_ptr));\n"
	"	P(\"do_owner\", offsetof(_Py_DebugOffsets, interpreter_frame.owner));\n"
	"#endif\n"
	"	P(\"fr_back\", offsetof(_PyInterpreterFrame, previous));\n"
	"#if PY_MINOR_VERSION == 11\n"
	"	P(\"fr_entry\", offsetof(_PyInterpreterFrame, is_entry));\n"
	"#else\n"
	"	P(\"fr_entry\", offsetof(_PyInterpreterFrame, owner));\n"
	"#endif\n"
	"	P(\"co_code_adaptive\", offsetof(PyCodeObject, co_code_adaptive));\n"
	"	P(\"code_basicsize\", PyCode_Type.tp_basicsize);\n"
	"	P(\"co_qualname\", offsetof(PyCodeObject, co_qualname));\n"
	"#endif\n"
	"	P(\"co_firstlineno\", offsetof(PyCodeObject, co_firstlineno));\n"
	"	P(\"co_filename\", offsetof(PyCodeObject, co_filename));\n"
	"	P(\"co_name\", offsetof(PyCodeObject, co_name));\n"
	"#if PY_MINOR_VERSION <= 9\n"
	"	P(\"co_linetable\", offsetof(PyCodeObject, co_lnotab));\n"
	"#else\n"
	"	P(\"co_linetable\", offsetof(PyCodeObject, co_linetable));\n"
	"#endif\n"
	"	P(\"ascii_size\", sizeof(PyASCIIObject));\n"
	"	P(\"compact_size\", sizeof(PyCompactUnicodeObject));\n"
	"	P(\"unicode_state\", offsetof(PyASCIIObject, state));\n"
	"	P(\"rt_interp_head\", offsetof(_PyRuntimeState, interpreters.head));\n"
	"	P(\"is_next\", offsetof(PyInterpreterState, next));\n"
	"#if PY_MINOR_VERSION <= 10\n"
	"	P(\"is_tstate_head\", offsetof(PyInterpreterState, tstate_head));\n"
	"#else\n"
	"	P(\"is_tstate_head\", offsetof(PyInterpreterState, threads.head));\n"
	"	P(\"ts_native_id\", offsetof(PyThreadState, native_thread_id));\n"
	"	P(\"ht_cached_keys\", offsetof(PyHeapTypeObject, ht_cached_keys));\n"
	"	P(\"dk_nentries\", offsetof(PyDictKeysObject, dk_nentries));\n"
	"	P(\"dk_indices\", offsetof(PyDictKeysObject, dk_indices));\n"
	"	P(\"dv_values\", offsetof(PyDictValues, values));\n"
	"	P(\"managed_dict_flag\", Py_TPFLAGS_MANAGED_DICT);\n"
	"#endif\n"
	"#if PY_MINOR_VERSION <= 11\n"
	"	P(\"is_modules\", offsetof(PyInterpreterState, modules));\n"
	"#else\n"
	"	P(\"is_modules\", offsetof(PyInterpreterState, imports.modules));\n"
	"#endif\n"
	"	P(\"ts_next\", offsetof(PyThreadState, next));\n"
	"	P(\"ts_thread_id\", offsetof(PyThreadState, thread_id));\n"
	"	P(\"tp_basicsize\", offsetof(PyTypeObject, tp_basicsize));\n"
	"	P(\"tp_flags\", offsetof(PyTypeObject, tp_flags));\n"
	"	P(\"tp_dictoffset\", offsetof(PyTypeObject, tp_dictoffset));\n"
	"	P(\"ma_keys\", offsetof(PyDictObject, ma_keys));\n"
	"	P(\"ma_values\", offsetof(PyDictObject, ma_values));\n"
	"	return 0;\n"
	"}\n";

struct measured {
	struct py_version v;
	long code_basicsize, unicode_state, do_owner, managed_dict_flag;
};

/* Compile and run the oracle against pv's headers. */
static void measure(const struct pyinterp *pv, struct measured *m)
{
	char src[128], bin[128], cmd[8 * PATH_MAX], line[128], name[64];
	unsigned long val;
	FILE *f;

	make_tmpdir();
	snprintf(src, sizeof(src), "%s/oracle.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/oracle3.%u", tmpdir, pv->minor);
	f = fopen(src, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(oracle_src, 1, sizeof(oracle_src) - 1, f), sizeof(oracle_src) - 1);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd),
		 "cc -w -o '%s' '%s' -I'%s/include/python3.%u' -I'%s/include/python3.%u/internal' "
		 "-DPy_BUILD_CORE -L'%s/lib' -lpython3.%u -Wl,-rpath,'%s/lib'",
		 bin, src, pv->prefix, pv->minor, pv->prefix, pv->minor, pv->prefix, pv->minor,
		 pv->prefix);
	assert_int_equal(system(cmd), 0);

	/* What the oracle does not print does not apply to the version: 0, cf_current 0xffff. */
	memset(m, 0, sizeof(*m));
	m->v.major = 3;
	m->v.minor = (uint8_t)pv->minor;
	m->v.bpf.cf_current = 0xffff;
	m->code_basicsize = m->unicode_state = m->do_owner = m->managed_dict_flag = -1;
	f = popen(bin, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const struct {
			const char *name;
			uint16_t *dst;
		} fields[] = {
#define F(n, f) {n, &m->v.f}
			F("tss", bpf.tss),
			F("gil_holder", bpf.gil_holder),
			F("ts_interp", bpf.ts_interp),
			F("ts_frame", bpf.ts_frame),
			F("cf_current", bpf.cf_current),
			F("fr_code", bpf.fr_code),
			F("fr_back", bpf.fr_back),
			F("fr_instr", bpf.fr_instr),
			F("fr_entry", bpf.fr_entry),
			F("co_code_adaptive", bpf.co_code_adaptive),
			F("interp_gil", bpf.interp_gil),
			F("gil_locked", bpf.gil_locked),
			F("gil_last_holder", bpf.gil_last_holder),
			F("co_firstlineno", co_firstlineno),
			F("co_filename", co_filename),
			F("co_name", co_name),
			F("co_qualname", co_qualname),
			F("co_linetable", co_linetable),
			F("ascii_size", ascii_size),
			F("compact_size", compact_size),
			F("rt_interp_head", rt_interp_head),
			F("is_next", is_next),
			F("is_tstate_head", is_tstate_head),
			F("is_modules", is_modules),
			F("ts_next", ts_next),
			F("ts_thread_id", ts_thread_id),
			F("ts_native_id", ts_native_id),
			F("tp_basicsize", tp_basicsize),
			F("tp_flags", tp_flags),
			F("tp_dictoffset", tp_dictoffset),
			F("ht_cached_keys", ht_cached_keys),
			F("ma_keys", ma_keys),
			F("ma_values", ma_values),
			F("dk_nentries", dk_nentries),
			F("dk_indices", dk_indices),
			F("dv_values", dv_values),
#undef F
		};
		bool known = false;

		assert_int_equal(sscanf(line, "%63s %lu", name, &val), 2);
		assert_true(val < 0xffff);
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			if (strcmp(name, fields[i].name))
				continue;
			*fields[i].dst = (uint16_t)val;
			known = true;
		}
		if (!strcmp(name, "code_basicsize"))
			m->code_basicsize = (long)val, known = true;
		if (!strcmp(name, "unicode_state"))
			m->unicode_state = (long)val, known = true;
		if (!strcmp(name, "do_owner"))
			m->do_owner = (long)val, known = true;
		if (!strcmp(name, "managed_dict_flag"))
			m->managed_dict_flag = (long)val, known = true;
		assert_true(known);
	}
	assert_int_equal(pclose(f), 0);
}

/* Measure pv's offsets against its headers and compare with our table's entry, field by field. */
static void check_offsets(const struct pyinterp *pv)
{
	const unsigned minor = pv->minor;
	const struct py_version *t = py_version__find(3, minor);
	struct measured m;

	assert_non_null(t);
	measure(pv, &m);
	assert_int_equal(m.unicode_state, 32);
	if (minor >= 11)
		assert_int_equal(m.code_basicsize, m.v.bpf.co_code_adaptive);
	/* How frames chain, what the instruction field holds, the line table's format. */
	m.v.bpf.style = minor <= 10 ? PROF_PY_FRAMEOBJ : minor == 11 ? PROF_PY_ENTRY : PROF_PY_SHIM;
	m.v.bpf.instr = minor <= 9    ? PROF_PY_LASTI_BYTES
			: minor == 10 ? PROF_PY_LASTI_UNITS
				      : PROF_PY_INSTR_PTR;
	m.v.line_table = minor <= 9 ? PY_LNOTAB : minor == 10 ? PY_LINETABLE_310 : PY_LOCATIONS;
	/* Dicts, attributes and ints (user/sym/pythreads.c).  Before 3.11 PyDictKeysObject is
	 * private to Objects/dict-common.h: {refcnt, size, lookup, usable, nentries, indices}, 8
	 * bytes each (test_pythreads reads live dicts with it). */
	m.v.obj_layout = minor <= 10   ? PY_OBJ_38
			 : minor == 11 ? PY_OBJ_311
			 : minor == 12 ? PY_OBJ_312
				       : PY_OBJ_313;
	if (minor <= 10) {
		m.v.dk_nentries = 32;
		m.v.dk_indices = 40;
	} else {
		/* The flag pythreads tests for a managed dict. */
		assert_int_equal(m.managed_dict_flag, 1 << 4);
	}

	assert_int_equal(t->bpf.tss, m.v.bpf.tss);
	assert_int_equal(t->bpf.gil_holder, m.v.bpf.gil_holder);
	assert_int_equal(t->bpf.ts_interp, m.v.bpf.ts_interp);
	assert_int_equal(t->bpf.ts_frame, m.v.bpf.ts_frame);
	assert_int_equal(t->bpf.cf_current, m.v.bpf.cf_current);
	assert_int_equal(t->bpf.fr_code, m.v.bpf.fr_code);
	assert_int_equal(t->bpf.fr_back, m.v.bpf.fr_back);
	assert_int_equal(t->bpf.fr_instr, m.v.bpf.fr_instr);
	assert_int_equal(t->bpf.fr_entry, m.v.bpf.fr_entry);
	assert_int_equal(t->bpf.co_code_adaptive, m.v.bpf.co_code_adaptive);
	assert_int_equal(t->bpf.interp_gil, m.v.bpf.interp_gil);
	assert_int_equal(t->bpf.gil_locked, m.v.bpf.gil_locked);
	assert_int_equal(t->bpf.gil_last_holder, m.v.bpf.gil_last_holder);
	assert_int_equal(t->bpf.style, m.v.bpf.style);
	assert_int_equal(t->bpf.instr, m.v.bpf.instr);
	assert_int_equal(t->co_firstlineno, m.v.co_firstlineno);
	assert_int_equal(t->co_filename, m.v.co_filename);
	assert_int_equal(t->co_name, m.v.co_name);
	assert_int_equal(t->co_qualname, m.v.co_qualname);
	assert_int_equal(t->co_linetable, m.v.co_linetable);
	assert_int_equal(t->line_table, m.v.line_table);
	assert_int_equal(t->ascii_size, m.v.ascii_size);
	assert_int_equal(t->compact_size, m.v.compact_size);
	assert_int_equal(t->rt_interp_head, m.v.rt_interp_head);
	assert_int_equal(t->is_next, m.v.is_next);
	assert_int_equal(t->is_tstate_head, m.v.is_tstate_head);
	assert_int_equal(t->is_modules, m.v.is_modules);
	assert_int_equal(t->ts_next, m.v.ts_next);
	assert_int_equal(t->ts_thread_id, m.v.ts_thread_id);
	assert_int_equal(t->ts_native_id, m.v.ts_native_id);
	assert_int_equal(t->tp_basicsize, m.v.tp_basicsize);
	assert_int_equal(t->tp_flags, m.v.tp_flags);
	assert_int_equal(t->tp_dictoffset, m.v.tp_dictoffset);
	assert_int_equal(t->ht_cached_keys, m.v.ht_cached_keys);
	assert_int_equal(t->ma_keys, m.v.ma_keys);
	assert_int_equal(t->ma_values, m.v.ma_values);
	assert_int_equal(t->dk_nentries, m.v.dk_nentries);
	assert_int_equal(t->dk_indices, m.v.dk_indices);
	assert_int_equal(t->dv_values, m.v.dv_values);
	assert_int_equal(t->obj_layout, m.v.obj_layout);
	/* Nothing else in the entry (padding included) differs. */
	assert_memory_equal(t, &m.v, sizeof(m.v));
	printf("offsets: 3.%u checked against %s\n", minor, pv->prefix);
}

static void test_python__offsets_match_headers(void **state)
{
	unsigned ran = 0;

	for (unsigned minor = 8; minor <= 13; minor++) {
		const struct py_version *t = py_version__find(3, minor);
		struct pyinterp pv;

		/* Every version of the table, installed or not. */
		assert_non_null(t);
		assert_int_equal(t->major, 3);
		assert_int_equal(t->minor, minor);
		if (!pyinterp__pyenv(minor, &pv))
			continue;
		check_offsets(&pv);
		ran++;
	}
	printf("offsets: %u pyenv versions ran\n", ran);
	pyinterp__need_all(ran, 6, "offsets: pyenv CPython 3.8-3.13");
}

/* Debian's 3.11 (python3.11-dev: its headers and libpython3.11.so) has the same layout. */
static void test_python__offsets_match_debian_headers(void **state)
{
	const struct pyinterp pv = {.minor = 11, .prefix = "/usr"};

	pyinterp__need(!access("/usr/include/python3.11/internal/pycore_runtime.h", R_OK),
		       "python3.11-dev missing");
	check_offsets(&pv);
}

static void test_python__unknown_versions_not_in_table(void **state)
{
	assert_null(py_version__find(3, 7));
	assert_null(py_version__find(3, 14));
	assert_null(py_version__find(2, 7));
	assert_null(py_version__find(4, 8));
}

/* ---- inspect: symbols against readelf ------------------------------------------------------ */

struct rsym {
	bool found;
	uint64_t addr, size;
};

/* A defined symbol named name in `readelf -sW path` (any table; the first defined one). */
static struct rsym readelf_sym(const char *path, const char *name)
{
	char cmd[PATH_MAX + 32], line[1024], num[32], val[32], size[32], type[32], bind[32],
		vis[32], ndx[32], nm[512];
	struct rsym r = {0};
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -sW '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %511s", num, val, size, type,
			   bind, vis, ndx, nm) != 8)
			continue;
		if (r.found || strcmp(nm, name) || !strcmp(ndx, "UND"))
			continue;
		r.found = true;
		r.addr = strtoull(val, NULL, 16);
		r.size = strtoull(size, NULL, 0);
	}
	assert_int_equal(pclose(f), 0);
	return r;
}

static int inspect_path(const char *path, const char *hint, struct py_elf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	Elf *elf;

	assert_true(fd >= 0);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	err = python__inspect_elf(elf, hint, out) == 0 ? 0 : -1;
	elf_end(elf);
	close(fd);
	return err;
}

/* out is what python__inspect_elf said of path; check it against readelf. */
static void check_symbols(const char *path, const struct py_elf *e, bool want_cold)
{
	struct rsym rt = readelf_sym(path, "_PyRuntime"),
		    ev = readelf_sym(path, "_PyEval_EvalFrameDefault"),
		    cold = readelf_sym(path, "_PyEval_EvalFrameDefault.cold"),
		    ct = readelf_sym(path, "PyCode_Type"), cd = readelf_sym(path, "code_dealloc");

	assert_true(rt.found && ev.found && ct.found);
	assert_int_equal(e->runtime, rt.addr);
	assert_int_equal(e->runtime_size, rt.size);
	assert_int_equal(e->eval_lo, ev.addr);
	assert_int_equal(e->eval_hi, ev.addr + ev.size);
	assert_int_equal(e->code_type, ct.addr);
	/* PyCode_Type's tp_dealloc, through its relocation: the local symbol where there is one
	 * (the fuzz seeds have neither: 0) */
	if (cd.found)
		assert_int_equal(e->code_dealloc, cd.addr);
	assert_int_equal(cold.found, want_cold);
	if (want_cold) {
		assert_true(cold.size > 0);
		assert_int_equal(e->cold_lo, cold.addr);
		assert_int_equal(e->cold_hi, cold.addr + cold.size);
	} else {
		assert_int_equal(e->cold_lo, 0);
		assert_int_equal(e->cold_hi, 0);
	}
}

/* PyCode_Type.tp_dealloc as the interpreter at path holds it while running. */
static uint64_t live_code_dealloc(const char *path)
{
	char cmd[512];
	unsigned long long v = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "%s -c 'import ctypes; print(ctypes.c_void_p.from_address("
		 "id(type((lambda: 0).__code__)) + 48).value)'",
		 path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%llu", &v), 1);
	pclose(p);
	return v;
}

static void test_python__inspect_pyenv_libpython(void **state)
{
	unsigned ran = 0;

	for (unsigned minor = 8; minor <= 13; minor++) {
		struct pyinterp pv;
		struct py_elf e;

		if (!pyinterp__pyenv(minor, &pv))
			continue;
		/* No hint: the version comes from the file. */
		assert_int_equal(inspect_path(pv.lib, NULL, &e), 0);
		assert_int_equal(e.status, PY_ELF_OK);
		assert_int_equal(e.major, 3);
		assert_int_equal(e.minor, minor);
		/* GCC split a cold part off the 3.11 and 3.12 builds; not the others. */
		check_symbols(pv.lib, &e, minor == 11 || minor == 12);
		assert_int_equal(e.debug_offsets, minor >= 13);
		assert_memory_equal(&e.v, py_version__find(3, minor), sizeof(e.v));
		/* The executable only imports from libpython: not where the interpreter is. */
		assert_int_equal(inspect_path(pv.bin, pv.bin, &e), 0);
		assert_int_equal(e.status, PY_ELF_NOT_PYTHON);
		printf("inspect: %s\n", pv.lib);
		ran++;
	}
	printf("inspect: %u pyenv versions ran\n", ran);
	pyinterp__need_all(ran, 6, "inspect: pyenv CPython 3.8-3.13");
}

static void test_python__inspect_debian_static_python(void **state)
{
	struct py_elf e;

	pyinterp__need(!access(DEBIAN_PY, R_OK), DEBIAN_PY " missing");
	/* Stripped: .dynsym only, no .cold symbol there. */
	assert_int_equal(inspect_path(DEBIAN_PY, DEBIAN_PY, &e), 0);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_int_equal(e.major, 3);
	assert_int_equal(e.minor, 11);
	check_symbols(DEBIAN_PY, &e, false);
	/* Not position-independent: the running interpreter's tp_dealloc is the ELF address. */
	assert_int_equal(e.code_dealloc, live_code_dealloc(DEBIAN_PY));
	assert_false(e.debug_offsets);
	assert_memory_equal(&e.v, py_version__find(3, 11), sizeof(e.v));

	/* Debian's shared libpython (libpython3.11-dev), stripped too. */
	if (access(DEBIAN_LIBPY, R_OK))
		return;
	assert_int_equal(inspect_path(DEBIAN_LIBPY, NULL, &e), 0);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_int_equal(e.minor, 11);
	check_symbols(DEBIAN_LIBPY, &e, false);
	assert_memory_equal(&e.v, py_version__find(3, 11), sizeof(e.v));
}

static void test_python__inspect_old_versions_unsupported(void **state)
{
	unsigned ran = 0;

	for (unsigned minor = 6; minor <= 7; minor++) {
		struct pyinterp pv;
		struct py_elf e;

		if (!pyinterp__pyenv(minor, &pv))
			continue;
		/* No Py_Version before 3.11: the soname libpython3.Xm says it. */
		assert_int_equal(inspect_path(pv.lib, NULL, &e), 0);
		assert_int_equal(e.status, PY_ELF_UNSUPPORTED);
		assert_int_equal(e.major, 3);
		assert_int_equal(e.minor, minor);
		ran++;
	}
	printf("inspect: %u of 3.6/3.7 ran\n", ran);
	pyinterp__need_all(ran, 2, "inspect: pyenv CPython 3.6 and 3.7");
}

static void test_python__inspect_not_python(void **state)
{
	struct py_elf e;

	memset(&e, 0xa5, sizeof(e));
	assert_int_equal(inspect_path("/bin/true", "python3.11", &e), 0);
	assert_int_equal(e.status, PY_ELF_NOT_PYTHON);
	assert_int_equal(e.major, 0);
	assert_int_equal(e.runtime, 0);
	assert_int_equal(e.eval_lo, 0);
}

static void test_python__inspect_not_elf(void **state)
{
	static char junk[] = "#!/bin/sh\necho not an ELF file\n";
	struct py_elf e;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_memory(junk, sizeof(junk));
	assert_non_null(elf);
	assert_int_equal(python__inspect_elf(elf, NULL, &e), -ENOEXEC);
	elf_end(elf);
	assert_int_equal(python__inspect_elf(NULL, NULL, &e), -ENOEXEC);
}

/* ---- inspect: patched copies of real files ------------------------------------------------- */

struct image {
	char *buf;
	size_t size;
};

static struct image load(const char *path)
{
	struct image im = {0};
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	im.size = (size_t)st.st_size;
	im.buf = malloc(im.size);
	assert_non_null(im.buf);
	assert_int_equal(read(fd, im.buf, im.size), (ssize_t)im.size);
	close(fd);
	return im;
}

/* File offset of ELF virtual address addr, from the section headers (libelf, not the code). */
static size_t file_offset(const struct image *im, uint64_t addr)
{
	Elf *elf = elf_memory(im->buf, im->size);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t off = 0;

	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_NOBITS && (sh.sh_flags & SHF_ALLOC) && addr >= sh.sh_addr &&
		    addr < sh.sh_addr + sh.sh_size)
			off = (size_t)(addr - sh.sh_addr + sh.sh_offset);
	}
	elf_end(elf);
	assert_true(off > 0 && off < im->size);
	return off;
}

static void inspect_image(const struct image *im, const char *hint, struct py_elf *out)
{
	Elf *elf = elf_memory(im->buf, im->size);

	assert_non_null(elf);
	assert_int_equal(python__inspect_elf(elf, hint, out), 0);
	elf_end(elf);
}

/* A 3.13 whose _Py_DebugOffsets says another frame layout: not walked with our table. */
static void test_python__debug_offsets_contradicting_table(void **state)
{
	struct pyinterp pv;
	struct measured m;
	struct image im;
	struct py_elf e;
	uint64_t owner;
	size_t at;

	pyinterp__need(pyinterp__pyenv(13, &pv), "no pyenv CPython 3.13 installed");
	measure(&pv, &m);
	assert_true(m.do_owner > 0);
	im = load(pv.lib);
	inspect_image(&im, NULL, &e);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_true(e.debug_offsets);

	at = file_offset(&im, e.runtime) + (size_t)m.do_owner;
	memcpy(&owner, im.buf + at, sizeof(owner));
	assert_int_equal(owner, py_version__find(3, 13)->bpf.fr_entry);
	owner += 2;
	memcpy(im.buf + at, &owner, sizeof(owner));
	inspect_image(&im, NULL, &e);
	assert_int_equal(e.status, PY_ELF_BAD_OFFSETS);
	assert_int_equal(e.minor, 13);
	assert_false(e.debug_offsets);

	/* No cookie: not a _Py_DebugOffsets at all. */
	owner -= 2;
	memcpy(im.buf + at, &owner, sizeof(owner));
	im.buf[file_offset(&im, e.runtime)] = 'X';
	inspect_image(&im, NULL, &e);
	assert_int_equal(e.status, PY_ELF_BAD_OFFSETS);
	free(im.buf);
}

/* Py_Version says 3.14: a CPython we do not walk, whatever else the file says. */
static void test_python__py_version_3_14_unsupported(void **state)
{
	const uint32_t v314 = 0x030e00f0;
	struct pyinterp pv;
	struct rsym ver;
	struct image im;
	struct py_elf e;

	pyinterp__need(pyinterp__pyenv(12, &pv), "no pyenv CPython 3.12 installed");
	ver = readelf_sym(pv.lib, "Py_Version");
	assert_true(ver.found);
	im = load(pv.lib);
	memcpy(im.buf + file_offset(&im, ver.addr), &v314, sizeof(v314));
	inspect_image(&im, "python3.12", &e);
	assert_int_equal(e.status, PY_ELF_UNSUPPORTED);
	assert_int_equal(e.major, 3);
	assert_int_equal(e.minor, 14);
	free(im.buf);
}

/* Without Py_Version nor a libpython soname, the name the file runs under says the version. */
static void test_python__version_from_name_hint(void **state)
{
	struct pyinterp pv;
	struct image im;
	struct py_elf e;
	int patched = 0;

	pyinterp__need(pyinterp__pyenv(10, &pv), "no pyenv CPython 3.10 installed");
	im = load(pv.lib);
	for (char *p = im.buf;
	     (p = memmem(p, im.size - (size_t)(p - im.buf), "libpython3.10.so", 16));
	     p++, patched++)
		p[9] = 'X';
	assert_true(patched > 0);
	inspect_image(&im, "/usr/local/bin/python3.10", &e);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_int_equal(e.minor, 10);
	inspect_image(&im, "python3.9", &e);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_int_equal(e.minor, 9);
	inspect_image(&im, "/usr/bin/python3", &e);
	assert_int_equal(e.status, PY_ELF_UNKNOWN_VERSION);
	assert_int_equal(e.major, 0);
	inspect_image(&im, NULL, &e);
	assert_int_equal(e.status, PY_ELF_UNKNOWN_VERSION);
	inspect_image(&im, "python3.7m", &e);
	assert_int_equal(e.status, PY_ELF_UNSUPPORTED);
	assert_int_equal(e.minor, 7);
	free(im.buf);
}

/* The fuzz seeds (tests/fuzz/fuzz_python_elf.c says how they were built) are what they claim. */
static void test_python__fuzz_seeds(void **state)
{
	static const struct {
		const char *file;
		enum py_elf_status status;
		unsigned minor;
		bool cold, debug_offsets;
	} seeds[] = {
		{"py313-stripped.so", PY_ELF_OK, 13, false, true},
		{"py311-cold-symtab.so", PY_ELF_OK, 11, true, false},
		{"py310-soname.so", PY_ELF_OK, 10, false, false},
		{"py37m-soname.so", PY_ELF_UNSUPPORTED, 7, false, false},
		{"py314-version.so", PY_ELF_UNSUPPORTED, 14, false, false},
	};
	char path[256];

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		struct py_elf e;

		snprintf(path, sizeof(path), "tests/fuzz/corpus/python_elf/%s", seeds[i].file);
		assert_int_equal(inspect_path(path, NULL, &e), 0);
		assert_int_equal(e.status, seeds[i].status);
		assert_int_equal(e.major, 3);
		assert_int_equal(e.minor, seeds[i].minor);
		if (seeds[i].status != PY_ELF_OK)
			continue;
		check_symbols(path, &e, seeds[i].cold);
		assert_int_equal(e.debug_offsets, seeds[i].debug_offsets);
		assert_memory_equal(&e.v, py_version__find(3, seeds[i].minor), sizeof(e.v));
	}
}

/* ---- validate: live interpreters ----------------------------------------------------------- */

struct live {
	pid_t pid;
};

/* Start bin sleeping; return once it has printed (so the interpreter is initialized). */
static struct live start_python(const char *bin)
{
	static const char script[] =
		"import sys, "
		"time\nsys.stdout.write('ready\\n')\nsys.stdout.flush()\ntime.sleep(120)\n";
	struct live l = {0};
	char buf[16] = "";
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	l.pid = fork();
	assert_true(l.pid >= 0);
	if (l.pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(bin, bin, "-c", script, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], buf, 6), 6);
	close(fds[0]);
	assert_memory_equal(buf, "ready\n", 6);
	return l;
}

static void stop_python(const struct live *l)
{
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
}

static void validate_one(const char *bin, const char *elf_path, unsigned minor)
{
	struct {
		int32_t initialized;
		uint32_t key;
	} tss;
	char mem[64];
	struct py_elf e;
	struct live l;
	uint64_t bias, rt, map_start, wrong;
	int fd, err;

	assert_int_equal(inspect_path(elf_path, bin, &e), 0);
	assert_int_equal(e.status, PY_ELF_OK);
	assert_int_equal(e.minor, minor);
	l = start_python(bin);
	bias = pyinterp__load_bias(l.pid, elf_path, &map_start);
	rt = bias + e.runtime;

	/* The key is set up by now: read it ourselves through /proc/PID/mem. */
	snprintf(mem, sizeof(mem), "/proc/%d/mem", l.pid);
	fd = open(mem, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &tss, sizeof(tss), (off_t)(rt + e.v.bpf.tss)), sizeof(tss));
	close(fd);
	assert_int_equal(tss.initialized, 1);
	assert_true(tss.key < PROF_PY_TSD_KEYS);

	err = python__validate(l.pid, &e, rt);
	assert_int_equal(err, 0);
	/* Unmapped. */
	err = python__validate(l.pid, &e, 0x1000);
	assert_int_equal(err, -EFAULT);
	/* Mapped, but what is read there is the ELF header: no "xdebugpy" cookie (3.13), and
	 * "\x7fELF" as the key's initialized flag. */
	wrong = e.minor >= 13 ? map_start : map_start - e.v.bpf.tss;
	err = python__validate(l.pid, &e, wrong);
	assert_int_equal(err, -EINVAL);
	stop_python(&l);
	/* Gone. */
	assert_int_equal(python__validate(l.pid, &e, rt), -ESRCH);
	printf("validate: %s (3.%u) ok\n", bin, minor);
}

static void test_python__validate_live(void **state)
{
	unsigned ran = 0;

	for (unsigned minor = 12; minor <= 13; minor++) {
		struct pyinterp pv;

		if (!pyinterp__pyenv(minor, &pv))
			continue;
		validate_one(pv.bin, pv.lib, minor);
		ran++;
	}
	if (!access(DEBIAN_PY, X_OK)) {
		validate_one(DEBIAN_PY, DEBIAN_PY, 11);
		ran++;
	}
	printf("validate: %u interpreters ran\n", ran);
	pyinterp__need_all(ran, 3, "validate: pyenv CPython 3.12 and 3.13, " DEBIAN_PY);
}

static void test_python__validate_refuses_what_inspect_did_not_accept(void **state)
{
	struct py_elf e = {.status = PY_ELF_UNSUPPORTED, .major = 3, .minor = 14};

	assert_int_equal(python__validate(getpid(), &e, 0x1000), -EINVAL);
	assert_int_equal(python__validate(getpid(), NULL, 0x1000), -EINVAL);
}

static int teardown(void **state)
{
	remove_tmpdir();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python__offsets_match_headers),
		cmocka_unit_test(test_python__offsets_match_debian_headers),
		cmocka_unit_test(test_python__unknown_versions_not_in_table),
		cmocka_unit_test(test_python__inspect_pyenv_libpython),
		cmocka_unit_test(test_python__inspect_debian_static_python),
		cmocka_unit_test(test_python__inspect_old_versions_unsupported),
		cmocka_unit_test(test_python__inspect_not_python),
		cmocka_unit_test(test_python__inspect_not_elf),
		cmocka_unit_test(test_python__debug_offsets_contradicting_table),
		cmocka_unit_test(test_python__py_version_3_14_unsupported),
		cmocka_unit_test(test_python__version_from_name_hint),
		cmocka_unit_test(test_python__fuzz_seeds),
		cmocka_unit_test(test_python__validate_live),
		cmocka_unit_test(test_python__validate_refuses_what_inspect_did_not_accept),
	};

	return cmocka_run_group_tests_name("python", tests, NULL, teardown);
}
