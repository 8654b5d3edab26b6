// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pycode against real interpreters (every installed CPython 3.8–3.13 under pyenv, and Debian's
 * /usr/bin/python3.11): each one compiles a test module and prints, per code object, its raw
 * line table and the line co_lines() (3.10+) or dis.findlinestarts (3.8/3.9) gives every
 * instruction; we decode the table and must agree on every instruction.  Then a live
 * interpreter prints the addresses of some code objects and sleeps while we read them with
 * process_vm_readv.  The offsets the reads use come from the interpreter itself (the positions
 * of co_name etc. found in the code object's own bytes through ctypes), checked against the
 * table in notes/python.md.  Hand-made tables and a fake memory image cover the corner cases.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <setjmp.h>
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

/* Until sym/python.c lands its table; when it does, its strong definition wins at link time and
 * the live test cross-checks it. */
__attribute__((weak)) const struct py_version *py_version__find(unsigned major, unsigned minor)
{
	return NULL;
}

/* The module whose line tables are compared: loops, multi-line expressions, try/except/finally,
 * with, jumps over 255 bytes, line gaps of 200 and 3000 lines (also inside a loop), nested
 * functions and classes, comprehensions, a coroutine and a generator. */
static const char lines_py[] =
	"import dis, sys, types\n"
	"\n"
	"def body():\n"
	"    L = []\n"
	"    L += [\"def simple(a, b):\", \"    x = a + b\", \"    y = x * 2\", \"    return y\", "
	"\"\"]\n"
	"    L += [\"def loops(n):\", \"    total = 0\", \"    for i in range(n):\", \"        if "
	"i % 3 == 0:\",\n"
	"          \"            total += i\", \"        elif i % 5:\", \"            total -= "
	"1\", \"        else:\",\n"
	"          \"            continue\", \"    while total > 10:\", \"        total //= 2\", "
	"\"    return total\", \"\"]\n"
	"    L += [\"def multiline(a, b, c):\", \"    value = (a +\", \"             b *\", \"     "
	"        c)\",\n"
	"          \"    data = {\", \"        'x': a,\", \"        'y': [b,\", \"              "
	"c],\", \"    }\",\n"
	"          \"    return func_call(value,\", \"                     data,\", \"             "
	"        key=a)\", \"\"]\n"
	"    L += [\"def handler(x):\", \"    try:\", \"        y = 1 / x\", \"    except "
	"ZeroDivisionError as e:\",\n"
	"          \"        y = 0\", \"    except (TypeError, ValueError):\", \"        y = -1\", "
	"\"    else:\",\n"
	"          \"        y += 1\", \"    finally:\", \"        x = None\", \"    with "
	"open('/dev/null') as f:\",\n"
	"          \"        pass\", \"    return y\", \"\"]\n"
	"    L += [\"def long_jumps(n):\", \"    t = 0\", \"    for i in range(n):\"]\n"
	"    L += [\"        t += i * %d; t -= (i ^ %d); t = t %% 1000003\" % (k, k) for k in "
	"range(80)]\n"
	"    L += [\"    return t\", \"\"]\n"
	"    L += [\"def gaps(a):\", \"    b = a\"] + [\"\"] * 200 + [\"    c = b + 1\"] + [\"    "
	"# gap\"] * 300\n"
	"    L += [\"    d = c * 2\"] + [\"\"] * 3000 + [\"    return d\", \"\"]\n"
	"    L += [\"def gap_loop(n):\", \"    for i in range(n):\", \"        a = i\"] + [\"\"] * "
	"200\n"
	"    L += [\"        b = a\", \"    return b\", \"\"]\n"
	"    L += [\"def outer(a):\", \"    def inner(b):\", \"        return lambda c: a + b + "
	"c\",\n"
	"          \"    class Local:\", \"        def meth(self):\",\n"
	"          \"            return [x for x in range(a) if x]\", \"    return inner, Local\", "
	"\"\"]\n"
	"    L += [\"async def coro(x):\", \"    await x\", \"\", \"def gen(n):\", \"    yield "
	"from range(n)\", \"\"]\n"
	"    L += [\"class Cls:\", \"    def meth(self, v):\", \"        return {k: v for k in "
	"range(v)}\", \"\"]\n"
	"    L += [\"x = simple(1, 2)\", \"if x:\", \"    y = [i for i in range(3)]\", \"\"]\n"
	"    return \"\\n\".join(L) + \"\\n\"\n"
	"\n"
	"def expected(code):\n"
	"    n = len(code.co_code) // 2\n"
	"    lines = [0] * n\n"
	"    if sys.version_info >= (3, 10):\n"
	"        for s, e, l in code.co_lines():\n"
	"            for off in range(s, e, 2):\n"
	"                if off // 2 < n:\n"
	"                    lines[off // 2] = l or 0\n"
	"        table = code.co_linetable\n"
	"    else:\n"
	"        starts = dict(dis.findlinestarts(code))\n"
	"        cur = 0\n"
	"        for i in range(n):\n"
	"            cur = starts.get(2 * i, cur)\n"
	"            lines[i] = cur\n"
	"        table = code.co_lnotab\n"
	"    return table, lines\n"
	"\n"
	"def walk(code):\n"
	"    yield code\n"
	"    for c in code.co_consts:\n"
	"        if isinstance(c, types.CodeType):\n"
	"            yield from walk(c)\n"
	"\n"
	"print(\"V\", sys.version_info[0], sys.version_info[1])\n"
	"top = compile(body(), \"/tmp/pycode_lines_module.py\", \"exec\")\n"
	"for code in walk(top):\n"
	"    table, lines = expected(code)\n"
	"    print(\"C\", code.co_name, code.co_firstlineno, table.hex() or \"-\", len(lines), "
	"*lines)\n";

/* Code objects for the live reads: non-ASCII names of each string kind (Latin-1, UCS-2, UCS-4),
 * a method and a nested function (qualnames from 3.11), names over PYCODE_MAX_STR, a long table,
 * a non-ASCII file name; the offsets of the code-object fields found in its own bytes. */
static const char live_py[] =
	"import ctypes, sys, types\n"
	"\n"
	"def hx(s):\n"
	"    return s.encode(\"utf-8\", \"surrogatepass\").hex()\n"
	"\n"
	"src = \"\\n\" * 4240 + \"\"\"class A:\n"
	"    def anchor(self):\n"
	"        return 1\n"
	"\n"
	"def café(x):\n"
	"    return x\n"
	"\n"
	"def 名前(x):\n"
	"    return x\n"
	"\n"
	"def 𠀀(x):\n"
	"    return x\n"
	"\n"
	"class Cls:\n"
	"    def meth(self):\n"
	"        return 1\n"
	"\n"
	"def outer():\n"
	"    def inner():\n"
	"        return 2\n"
	"    return inner\n"
	"\n"
	"def \"\"\" + \"f\" * 1500 + \"\"\"():\n"
	"    pass\n"
	"\n"
	"def \"\"\" + \"é\" * 700 + \"\"\"():\n"
	"    pass\n"
	"\n"
	"def big(n):\n"
	"    t = 0\n"
	"\"\"\" + \"\".join(\"    t += n * %d\\n\" % k for k in range(300)) + \"\"\"    return t\n"
	"\"\"\"\n"
	"ns = {}\n"
	"exec(compile(src, sys.argv[1] + \"/modül_名.py\", \"exec\"), ns)\n"
	"anchor = ns[\"A\"].anchor.__code__\n"
	"table = anchor.co_lnotab if sys.version_info < (3, 10) else anchor.co_linetable\n"
	"raw = ctypes.string_at(id(anchor), 256)\n"
	"\n"
	"def find(value, size):\n"
	"    hits = [o for o in range(0, 256 - size + 1, size)\n"
	"            if int.from_bytes(raw[o:o + size], \"little\") == value]\n"
	"    return hits[0] if len(hits) == 1 else -1\n"
	"\n"
	"offs = [find(anchor.co_firstlineno, 4), find(id(anchor.co_filename), 8),\n"
	"        find(id(anchor.co_name), 8),\n"
	"        find(id(anchor.co_qualname), 8) if hasattr(anchor, \"co_qualname\") else 0,\n"
	"        find(id(table), 8), sys.getsizeof(\"\") - 1, sys.getsizeof(chr(0x100)) - 4]\n"
	"print(\"V\", sys.version_info[0], sys.version_info[1], *offs)\n"
	"print(\"T\", id(types.CodeType), id(anchor.co_filename))\n"
	"codes = [ns[n].__code__ for n in (\"café\", \"名前\", \"𠀀\", \"big\", \"f\" * 1500, "
	"\"é\" * 700)]\n"
	"codes += [anchor, ns[\"Cls\"].meth.__code__, ns[\"outer\"]().__code__]\n"
	"for c in codes:\n"
	"    t = c.co_lnotab if sys.version_info < (3, 10) else c.co_linetable\n"
	"    name = c.co_qualname if hasattr(c, \"co_qualname\") else c.co_name\n"
	"    print(\"C\", id(c), hx(name), hx(c.co_filename), c.co_firstlineno, t.hex() or \"-\")\n"
	"print(\"R\", flush=True)\n"
	"sys.stdin.read()\n";

/* ------------------------------------------------------------------------------------------ */
/* Interpreters and scripts */

#define MAX_INTERPS 16

struct interp {
	char path[PATH_MAX];
};

static struct interp interps[MAX_INTERPS];
static int n_interps;
static char script_dir[64];
static char lines_path[128], live_path[128];

static void add_interp(const char *path)
{
	char real[PATH_MAX];

	if (access(path, X_OK) || !realpath(path, real))
		return;
	for (int i = 0; i < n_interps; i++)
		if (!strcmp(interps[i].path, real))
			return;
	if (n_interps < MAX_INTERPS)
		snprintf(interps[n_interps++].path, sizeof(interps[0].path), "%s", real);
}

static void add_root(const char *root)
{
	char pat[PATH_MAX];
	glob_t g;

	if (!root || !*root)
		return;
	for (int minor = 8; minor <= 13; minor++) {
		snprintf(pat, sizeof(pat), "%s/versions/3.%d.*/bin/python3.%d", root, minor, minor);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++)
			add_interp(g.gl_pathv[i]);
		globfree(&g);
	}
}

static void find_interps(void)
{
	char root[PATH_MAX] = "";
	FILE *f;

	add_root(getenv("PYENV_ROOT"));
	f = popen("pyenv root 2>/dev/null", "r");
	if (f) {
		if (fgets(root, sizeof(root), f))
			root[strcspn(root, "\n")] = '\0';
		pclose(f);
		add_root(root);
	}
	add_root("/root/.pyenv");
	add_interp("/usr/bin/python3.11");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	snprintf(script_dir, sizeof(script_dir), "/tmp/test-pycode.XXXXXX");
	if (!mkdtemp(script_dir))
		return -1;
	snprintf(lines_path, sizeof(lines_path), "%s/lines.py", script_dir);
	snprintf(live_path, sizeof(live_path), "%s/live.py", script_dir);
	write_file(lines_path, lines_py);
	write_file(live_path, live_py);
	find_interps();
	fprintf(stderr, "test_pycode: %d interpreters:", n_interps);
	for (int i = 0; i < n_interps; i++)
		fprintf(stderr, " %s", interps[i].path);
	fprintf(stderr, "\n");
	return 0;
}

static int teardown(void **state)
{
	unlink(lines_path);
	unlink(live_path);
	rmdir(script_dir);
	return 0;
}

/* No interpreter: a skip locally, a failure in CI (where they are installed on purpose). */
static void need_interps(void)
{
	const char *ci = getenv("CI");

	if (n_interps)
		return;
	if (ci && !strcmp(ci, "true"))
		fail_msg("no CPython 3.8-3.13 found (pyenv root, /root/.pyenv, "
			 "/usr/bin/python3.11)");
	skip();
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing what the scripts print */

static uint8_t *unhex(const char *s, uint32_t *out_len)
{
	size_t n = strcmp(s, "-") ? strlen(s) / 2 : 0;
	uint8_t *b = malloc(n + 1);

	assert_non_null(b);
	assert_int_equal(strcmp(s, "-") ? strlen(s) % 2 : 0, 0);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		b[i] = v;
	}
	*out_len = n;
	return b;
}

static char *unhex_str(const char *s)
{
	uint32_t n;
	char *b = (char *)unhex(s, &n);

	b[n] = '\0';
	return b;
}

static enum py_line_table table_kind(unsigned minor)
{
	return minor <= 9 ? PY_LNOTAB : minor == 10 ? PY_LINETABLE_310 : PY_LOCATIONS;
}

/* ------------------------------------------------------------------------------------------ */
/* Line tables against the interpreters' own answers */

struct line_stats {
	unsigned codes, instrs, mismatches;
};

static void check_code_line(const struct py_version *v, char *rest, const char *interp,
			    struct line_stats *st)
{
	char *save = NULL, *name, *tok;
	struct pycode c = {0};
	unsigned long n;

	name = strtok_r(rest, " \n", &save);
	assert_non_null(name);
	tok = strtok_r(NULL, " \n", &save);
	assert_non_null(tok);
	c.firstlineno = atoi(tok);
	tok = strtok_r(NULL, " \n", &save);
	assert_non_null(tok);
	c.table = unhex(tok, &c.table_len);
	tok = strtok_r(NULL, " \n", &save);
	assert_non_null(tok);
	n = strtoul(tok, NULL, 10);
	for (unsigned long i = 0; i < n; i++) {
		uint32_t instr = v->line_table == PY_LNOTAB ? 2 * i : i;
		int32_t want, got;

		tok = strtok_r(NULL, " \n", &save);
		assert_non_null(tok);
		want = atoi(tok);
		got = pycode__line(v, &c, instr);
		if (got != want && st->mismatches++ < 10)
			fprintf(stderr, "%s: %s instr %u: line %d, interpreter says %d\n", interp,
				name, instr, got, want);
		st->instrs++;
	}
	assert_null(strtok_r(NULL, " \n", &save));
	/* Past the end: no line from 3.10 on (3.8/3.9 tables cannot say "no line"). */
	if (v->line_table != PY_LNOTAB)
		assert_int_equal(pycode__line(v, &c, n + 64), 0);
	st->codes++;
	free(c.table);
}

static void test_pycode__line_tables_match_interpreters(void **state)
{
	need_interps();
	for (int k = 0; k < n_interps; k++) {
		struct line_stats st = {0};
		struct py_version v = {0};
		char cmd[PATH_MAX + 256];
		unsigned major = 0, minor = 0;
		char *line = NULL;
		size_t cap = 0;
		FILE *f;

		snprintf(cmd, sizeof(cmd), "%s %s", interps[k].path, lines_path);
		f = popen(cmd, "r");
		assert_non_null(f);
		assert_true(getline(&line, &cap, f) > 0);
		assert_int_equal(sscanf(line, "V %u %u", &major, &minor), 2);
		v.major = major;
		v.minor = minor;
		v.line_table = table_kind(minor);
		while (getline(&line, &cap, f) > 0) {
			assert_memory_equal(line, "C ", 2);
			check_code_line(&v, line + 2, interps[k].path, &st);
		}
		free(line);
		assert_int_equal(pclose(f), 0);
		fprintf(stderr,
			"test_pycode: %s (3.%u): %u code objects, %u instructions, %u "
			"mismatches\n",
			interps[k].path, minor, st.codes, st.instrs, st.mismatches);
		assert_int_equal(st.mismatches, 0);
		/* 3.12 inlines comprehensions: fewer code objects there. */
		assert_true(st.codes >= 16);
		assert_true(st.instrs >= 1500);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Reading code objects from a live interpreter */

/* Code-object offsets of notes/python.md, to check what the interpreter's bytes said. */
static const struct {
	uint8_t minor;
	uint16_t firstlineno, filename, name, qualname, linetable, ascii, compact;
} notes[] = {
	{8, 40, 104, 112, 0, 120, 48, 72},    {9, 40, 104, 112, 0, 120, 48, 72},
	{10, 40, 104, 112, 0, 120, 48, 72},   {11, 72, 112, 120, 128, 136, 48, 72},
	{12, 68, 112, 120, 128, 136, 40, 56}, {13, 68, 112, 120, 128, 136, 40, 56},
};

struct live {
	pid_t pid;
	FILE *out; /* its stdout */
	int in;	   /* its stdin: closing it ends the script */
};

static void live__start(struct live *l, const char *python)
{
	int in[2], out[2];

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	l->pid = fork();
	assert_true(l->pid >= 0);
	if (!l->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl(python, python, live_path, script_dir, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	l->in = in[1];
	l->out = fdopen(out[0], "r");
	assert_non_null(l->out);
}

static void live__stop(struct live *l)
{
	int status = 0;

	close(l->in);
	fclose(l->out);
	assert_int_equal(waitpid(l->pid, &status, 0), l->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void version_from_line(struct py_version *v, const char *line)
{
	int major, minor, fl, fn, nm, qn, lt, as, cs;
	const struct py_version *table;
	size_t i;

	assert_int_equal(sscanf(line, "V %d %d %d %d %d %d %d %d %d", &major, &minor, &fl, &fn, &nm,
				&qn, &lt, &as, &cs),
			 9);
	/* -1: the value was not found exactly once among the code object's bytes. */
	assert_true(fl > 0 && fn > 0 && nm > 0 && qn >= 0 && lt > 0 && as > 0 && cs > 0);
	memset(v, 0, sizeof(*v));
	v->major = major;
	v->minor = minor;
	v->co_firstlineno = fl;
	v->co_filename = fn;
	v->co_name = nm;
	v->co_qualname = qn;
	v->co_linetable = lt;
	v->line_table = table_kind(minor);
	v->ascii_size = as;
	v->compact_size = cs;
	for (i = 0; i < sizeof(notes) / sizeof(notes[0]) && notes[i].minor != minor; i++)
		;
	assert_true(i < sizeof(notes) / sizeof(notes[0]));
	assert_int_equal(fl, notes[i].firstlineno);
	assert_int_equal(fn, notes[i].filename);
	assert_int_equal(nm, notes[i].name);
	assert_int_equal(qn, notes[i].qualname);
	assert_int_equal(lt, notes[i].linetable);
	assert_int_equal(as, notes[i].ascii);
	assert_int_equal(cs, notes[i].compact);
	table = py_version__find(major, minor);
	if (!table)
		return;
	assert_int_equal(table->co_firstlineno, fl);
	assert_int_equal(table->co_filename, fn);
	assert_int_equal(table->co_name, nm);
	assert_int_equal(table->co_qualname, qn);
	assert_int_equal(table->co_linetable, lt);
	assert_int_equal(table->line_table, v->line_table);
	assert_int_equal(table->ascii_size, as);
	assert_int_equal(table->compact_size, cs);
}

/* What a name over PYCODE_MAX_STR bytes reads back as: cut before the character that would not
 * fit. */
static void cut_utf8(char *s)
{
	size_t n = strlen(s);

	if (n <= PYCODE_MAX_STR)
		return;
	n = PYCODE_MAX_STR;
	while (n && ((uint8_t)s[n] & 0xc0) == 0x80)
		n--;
	s[n] = '\0';
}

static uint64_t check_live_code(const struct py_version *v, void *pid, uint64_t code_type,
				const char *line, unsigned *n_cut, unsigned *n_utf8)
{
	char addr_s[32], name_s[4096], file_s[512], table_s[PYCODE_MAX_TABLE];
	struct pycode c;
	unsigned long long addr;
	char *name, *file;
	uint8_t *table;
	uint32_t table_len;
	int first;

	assert_int_equal(sscanf(line, "C %31s %4095s %511s %d %65535s", addr_s, name_s, file_s,
				&first, table_s),
			 5);
	addr = strtoull(addr_s, NULL, 10);
	name = unhex_str(name_s);
	file = unhex_str(file_s);
	table = unhex(table_s, &table_len);
	if (strlen(name) > PYCODE_MAX_STR)
		(*n_cut)++;
	for (const char *p = name; *p; p++)
		if ((uint8_t)*p >= 0x80) {
			(*n_utf8)++;
			break;
		}
	cut_utf8(name);
	assert_int_equal(pycode__read(v, pycode__read_pid, pid, addr, code_type, &c), 0);
	assert_string_equal(c.name, name);
	assert_string_equal(c.filename, file);
	assert_int_equal(c.firstlineno, first);
	assert_int_equal(c.table_len, table_len);
	assert_memory_equal(c.table, table, table_len);
	/* 3.11+ start with a RESUME on the def line. */
	if (v->line_table == PY_LOCATIONS)
		assert_int_equal(pycode__line(v, &c, 0), first);
	pycode__free(&c);
	assert_null(c.name);
	free(name);
	free(file);
	free(table);
	return addr;
}

static void test_pycode__read_live_interpreters(void **state)
{
	need_interps();
	for (int k = 0; k < n_interps; k++) {
		unsigned long long code_type = 0, str = 0, code = 0;
		unsigned n_codes = 0, n_cut = 0, n_utf8 = 0;
		struct py_version v;
		struct pycode c;
		struct live l;
		char *line = NULL;
		size_t cap = 0;
		void *pid;

		live__start(&l, interps[k].path);
		pid = (void *)(uintptr_t)l.pid;
		assert_true(getline(&line, &cap, l.out) > 0);
		version_from_line(&v, line);
		assert_true(getline(&line, &cap, l.out) > 0);
		assert_int_equal(sscanf(line, "T %llu %llu", &code_type, &str), 2);
		while (getline(&line, &cap, l.out) > 0 && line[0] == 'C') {
			code = check_live_code(&v, pid, code_type, line, &n_cut, &n_utf8);
			n_codes++;
		}
		assert_memory_equal(line, "R\n", 2);
		free(line);
		assert_int_equal(n_codes, 9);
		assert_int_equal(n_cut, 2);  /* "f" * 1500 and "é" * 700 */
		assert_int_equal(n_utf8, 4); /* café, 名前, 𠀀, é… */

		/* Not a code object: a str by its type, a code object with the wrong type given, or
		 * no object at all. */
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, str, code_type, &c),
				 -EINVAL);
		assert_null(c.name);
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, code, code_type + 8, &c),
				 -EINVAL);
		/* A pid that is not there (pid_max is below 2^22). */
		assert_int_equal(pycode__read(&v, pycode__read_pid, (void *)(uintptr_t)(1 << 23),
					      code, code_type, &c),
				 -EFAULT);
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, 16, 0, &c), -EFAULT);
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, 1ULL << 46, 0, &c),
				 -EFAULT);
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, UINT64_MAX - 8, 0, &c),
				 -EFAULT);
		assert_null(c.table);
		live__stop(&l);
		fprintf(stderr, "test_pycode: %s (3.%u): read %u live code objects\n",
			interps[k].path, v.minor, n_codes);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pycode__line_tables_match_interpreters),
		cmocka_unit_test(test_pycode__read_live_interpreters),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
