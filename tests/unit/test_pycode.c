// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pycode against real interpreters (pyenv's newest CPython 3.8–3.13 each, and Debian's
 * /usr/bin/python3.11, found by pyinterp.h): each one compiles a test module and prints, per code
 * object, its raw line table and the line co_lines() (3.10+) or dis.findlinestarts (3.8/3.9) gives
 * every instruction; we decode the table and must agree on every instruction.  Then a live
 * interpreter prints the addresses of some code objects and sleeps while we read them with
 * process_vm_readv.  The offsets the reads use come from the interpreter itself (the positions
 * of co_name etc. found in the code object's own bytes through ctypes), checked against the
 * table in notes/python.md.  Hand-made tables and a fake memory image cover the corner cases.
 */
#include <errno.h>
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

#include "pyinterp.h"

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

static struct pyinterp interps[MAX_INTERPS];
static int n_interps;
static char script_dir[64];
static char lines_path[128], live_path[128];

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
	n_interps = (int)pyinterp__all(interps, MAX_INTERPS);
	fprintf(stderr, "test_pycode: %d interpreters:", n_interps);
	for (int i = 0; i < n_interps; i++)
		fprintf(stderr, " %s", interps[i].bin);
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

/* No interpreter: a skip locally; any of the seven missing: a failure in CI (where they are
 * installed on purpose). */
static void need_interps(void)
{
	pyinterp__need_all((unsigned)n_interps, PYINTERP_ALL,
			   "CPython 3.8-3.13 (pyenv roots) and " PYINTERP_DEBIAN);
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
	unsigned mismatches = 0;

	need_interps();
	/* Every interpreter runs before the verdict: a failure names all the versions it hits. */
	for (int k = 0; k < n_interps; k++) {
		struct line_stats st = {0};
		struct py_version v = {0};
		char cmd[PATH_MAX + 256];
		unsigned major = 0, minor = 0;
		char *line = NULL;
		size_t cap = 0;
		FILE *f;

		snprintf(cmd, sizeof(cmd), "%s %s", interps[k].bin, lines_path);
		f = popen(cmd, "r");
		assert_non_null(f);
		assert_true(getline(&line, &cap, f) > 0);
		assert_int_equal(sscanf(line, "V %u %u", &major, &minor), 2);
		v.major = major;
		v.minor = minor;
		v.line_table = table_kind(minor);
		while (getline(&line, &cap, f) > 0) {
			assert_memory_equal(line, "C ", 2);
			check_code_line(&v, line + 2, interps[k].bin, &st);
		}
		free(line);
		assert_int_equal(pclose(f), 0);
		fprintf(stderr,
			"test_pycode: %s (3.%u): %u code objects, %u instructions, %u "
			"mismatches\n",
			interps[k].bin, minor, st.codes, st.instrs, st.mismatches);
		mismatches += st.mismatches;
		/* 3.12 inlines comprehensions: fewer code objects there. */
		assert_true(st.codes >= 16);
		assert_true(st.instrs >= 1500);
	}
	assert_int_equal(mismatches, 0);
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
	for (i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		if (notes[i].minor != minor)
			continue;
		assert_int_equal(fl, notes[i].firstlineno);
		assert_int_equal(fn, notes[i].filename);
		assert_int_equal(nm, notes[i].name);
		assert_int_equal(qn, notes[i].qualname);
		assert_int_equal(lt, notes[i].linetable);
		assert_int_equal(as, notes[i].ascii);
		assert_int_equal(cs, notes[i].compact);
		break;
	}
	assert_true(i < sizeof(notes) / sizeof(notes[0]));
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

/* A reader whose object at addr becomes the one at other after its first read there: a code
 * object freed while it was read and its address taken by another. */
struct swap {
	void *pid;
	uint64_t addr, other;
	unsigned reads;
};

static int swap_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct swap *sw = ctx;

	if (addr >= sw->addr && addr < sw->addr + 4096 && sw->reads++ > 0)
		addr = sw->other + (addr - sw->addr);
	return pycode__read_pid(sw->pid, addr, buf, len);
}

static void test_pycode__read_live_interpreters(void **state)
{
	need_interps();
	for (int k = 0; k < n_interps; k++) {
		unsigned long long code_type = 0, str = 0, code = 0, first_code = 0;
		uint64_t names[2];
		unsigned n_codes = 0, n_cut = 0, n_utf8 = 0;
		struct py_version v;
		struct pycode c;
		struct live l;
		char *line = NULL;
		size_t cap = 0;
		void *pid;

		live__start(&l, interps[k].bin);
		pid = (void *)(uintptr_t)l.pid;
		assert_true(getline(&line, &cap, l.out) > 0);
		version_from_line(&v, line);
		assert_true(getline(&line, &cap, l.out) > 0);
		assert_int_equal(sscanf(line, "T %llu %llu", &code_type, &str), 2);
		while (getline(&line, &cap, l.out) > 0 && line[0] == 'C') {
			code = check_live_code(&v, pid, code_type, line, &n_cut, &n_utf8);
			first_code = first_code ? first_code : code;
			n_codes++;
		}
		assert_memory_equal(line, "R\n", 2);
		free(line);
		assert_int_equal(n_codes, 9);
		assert_int_equal(n_cut, 2);  /* "f" * 1500 and "é" * 700 */
		assert_int_equal(n_utf8, 4); /* café, 名前, 𠀀, é… */

		/* The fingerprint's pointers as the head held them; and a code object replaced by
		 * another while it was read is refused, not named after one and fingerprinted as
		 * the other (the second read of its head meets the other object). */
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, code, code_type, &c), 0);
		assert_int_equal(pycode__read_pid(pid, code + v.co_filename, names, sizeof(names)),
				 0);
		assert_memory_equal(c.names, names, sizeof(names));
		pycode__free(&c);
		assert_int_not_equal(first_code, code);
		assert_int_equal(
			pycode__read(&v, swap_read,
				     &(struct swap){.pid = pid, .addr = code, .other = first_code},
				     code, code_type, &c),
			-EAGAIN);
		assert_null(c.name);
		/* Not a code object: a str by its type, a code object with the wrong type given, or
		 * no object at all. */
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, str, code_type, &c),
				 -EINVAL);
		assert_null(c.name);
		assert_int_equal(pycode__read(&v, pycode__read_pid, pid, code, code_type + 8, &c),
				 -EINVAL);
		/* A pid that is not there (pid_max is at most 2^22): the reader says so, the code
		 * object is unreadable. */
		assert_int_equal(pycode__read_pid((void *)(uintptr_t)(1 << 23), code, &c, 8),
				 -ESRCH);
		assert_int_equal(pycode__read_pid(pid, 16, &c, 0), 0);
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
			interps[k].bin, v.minor, n_codes);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Hand-made tables: each form and corner of the three formats */

static int32_t line_of(enum py_line_table kind, const uint8_t *table, uint32_t len, int32_t first,
		       uint32_t instr)
{
	struct py_version v = {.major = 3, .line_table = kind};
	struct pycode c = {.firstlineno = first, .table = (uint8_t *)table, .table_len = len};

	return pycode__line(&v, &c, instr);
}

static void test_pycode__lnotab_increments(void **state)
{
	/* (6, +1) (0, +2) (4, -1) (250, +127) (10, -128), and a stray odd byte. */
	static const uint8_t t[] = {6, 1, 0, 2, 4, 0xff, 250, 127, 10, 0x80, 7};
	static const struct {
		uint32_t offset;
		int32_t line;
	} want[] = {{0, 10},   {5, 10},	   {6, 13},    {9, 13},	  {10, 12},
		    {259, 12}, {260, 139}, {269, 139}, {270, 11}, {100000, 11}};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(line_of(PY_LNOTAB, t, sizeof(t), 10, want[i].offset),
				 want[i].line);
	/* An empty table: everything on the first line; a line below 0: none. */
	assert_int_equal(line_of(PY_LNOTAB, NULL, 0, 42, 8), 42);
	assert_int_equal(line_of(PY_LNOTAB, (const uint8_t[]){0, 0x80}, 2, 3, 0), 0);
}

static void test_pycode__linetable_310_ranges(void **state)
{
	/* Byte ranges: [0,4) +1; an empty entry +3; [4,10) no line; [10,12) same line;
	 * [12,266) +127; [266,268) -2. */
	static const uint8_t t[] = {4, 1, 0, 3, 6, 0x80, 2, 0, 254, 127, 2, 0xfe};
	static const struct {
		uint32_t unit;
		int32_t line;
	} want[] = {{0, 6},   {1, 6},	  {2, 0},     {4, 0},	{5, 9},
		    {6, 136}, {132, 136}, {133, 134}, {134, 0}, {1u << 30, 0}};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(line_of(PY_LINETABLE_310, t, sizeof(t), 5, want[i].unit),
				 want[i].line);
}

static void test_pycode__locations_forms(void **state)
{
	static const uint8_t t[] = {
		0x81, 0x12,	  /* short form (code 0), 2 units: same line */
		0xd8, 0x04, 0x08, /* one-line form +1 (code 11), 1 unit */
		0xea, 0x07,	  /* no columns (13), 3 units, svarint -3 */
		0xf0, 0x50, 0x5c, 0x02, 0x00, 0x01, 0x02, /* long (14): +5000 in 3 chunks */
		0xff,					  /* no location (15), 8 units */
		0xc8, 0x00,				  /* short form (code 9), 1 unit */
		0xe0, 0x00, 0x01,			  /* one-line form +2 (code 12) */
	};
	static const struct {
		uint32_t unit;
		int32_t line;
	} want[] = {{0, 100}, {1, 100}, {2, 101},   {3, 98},	{5, 98}, {6, 5098},
		    {7, 0},   {14, 0},	{15, 5098}, {16, 5100}, {17, 0}, {UINT32_MAX, 0}};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(line_of(PY_LOCATIONS, t, sizeof(t), 100, want[i].unit),
				 want[i].line);
	/* Not starting with an entry byte; a line that goes below 0; a varint cut by the end;
	 * an unknown table kind. */
	assert_int_equal(line_of(PY_LOCATIONS, (const uint8_t[]){0x05, 0x81}, 2, 1, 0), 0);
	assert_int_equal(line_of(PY_LOCATIONS, (const uint8_t[]){0xe8, 0x0b}, 2, 1, 0), 0);
	assert_int_equal(line_of(PY_LOCATIONS, (const uint8_t[]){0xe8, 0x42}, 2, 7, 0), 8);
	assert_int_equal(line_of(0, t, sizeof(t), 100, 0), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* A fake process: one memory image, code object and strings laid out as 3.12 does */

#define IMG_BASE 0x7f0000001000ULL
#define IMG_SIZE 0x8000
#define IMG_TYPE 0x5555000c0de0ULL
#define AT_FILE	 0x400
#define AT_NAME	 0x800
#define AT_QUAL	 0x1000
#define AT_TABLE 0x2000

struct image {
	uint8_t mem[IMG_SIZE];
	unsigned reads;
};

static const struct py_version v312 = {
	.major = 3,
	.minor = 12,
	.co_firstlineno = 68,
	.co_filename = 112,
	.co_name = 120,
	.co_qualname = 128,
	.co_linetable = 136,
	.line_table = PY_LOCATIONS,
	.ascii_size = 40,
	.compact_size = 56,
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;

	im->reads++;
	if (addr < IMG_BASE || addr - IMG_BASE > IMG_SIZE || len > IMG_SIZE - (addr - IMG_BASE))
		return -EFAULT;
	memcpy(buf, im->mem + (addr - IMG_BASE), len);
	return 0;
}

static void put64(struct image *im, size_t off, uint64_t v)
{
	memcpy(im->mem + off, &v, sizeof(v));
}

static void put32(struct image *im, size_t off, uint32_t v)
{
	memcpy(im->mem + off, &v, sizeof(v));
}

/* A str at off: length in code points, state from kind/compact/ascii, then its data. */
static void put_str(struct image *im, size_t off, int kind, int compact, int ascii, uint64_t length,
		    const void *data, size_t data_len)
{
	put64(im, off + 16, length);
	put32(im, off + 32, kind << 2 | compact << 5 | ascii << 6 | 1 /* interned */);
	memcpy(im->mem + off + (ascii ? v312.ascii_size : v312.compact_size), data, data_len);
}

static void image_init(struct image *im)
{
	static const uint16_t qual[] = {0x100, 0x540d}; /* "Ā名" */

	memset(im, 0, sizeof(*im));
	put64(im, 8, IMG_TYPE);
	put32(im, v312.co_firstlineno, 77);
	put64(im, v312.co_filename, IMG_BASE + AT_FILE);
	put64(im, v312.co_name, IMG_BASE + AT_NAME);
	put64(im, v312.co_qualname, IMG_BASE + AT_QUAL);
	put64(im, v312.co_linetable, IMG_BASE + AT_TABLE);
	put_str(im, AT_FILE, 1, 1, 1, 4, "a.py", 4);
	put_str(im, AT_NAME, 1, 1, 1, 1, "n", 1);
	put_str(im, AT_QUAL, 2, 1, 0, 2, qual, sizeof(qual));
	put64(im, AT_TABLE + 16, 3);
	memcpy(im->mem + AT_TABLE + 32, "\x80\xd8\x01", 3);
}

static int image_code(struct image *im, struct pycode *c)
{
	return pycode__read(&v312, image_read, im, IMG_BASE, IMG_TYPE, c);
}

static void test_pycode__read_fake_image(void **state)
{
	struct image *im = malloc(sizeof(*im));
	struct py_version v = v312;
	struct pycode c;

	assert_non_null(im);
	image_init(im);
	assert_int_equal(image_code(im, &c), 0);
	assert_string_equal(c.name, "\xc4\x80\xe5\x90\x8d");
	assert_string_equal(c.filename, "a.py");
	assert_int_equal(c.firstlineno, 77);
	assert_int_equal(c.table_len, 3);
	assert_memory_equal(c.table, "\x80\xd8\x01", 3);
	assert_int_equal(pycode__line(&v312, &c, 0), 77);
	assert_int_equal(pycode__line(&v312, &c, 1), 78);
	pycode__free(&c);
	assert_null(c.table);
	pycode__free(NULL);

	/* Without co_qualname (<= 3.10) the name is co_name. */
	v.co_qualname = 0;
	assert_int_equal(pycode__read(&v, image_read, im, IMG_BASE, 0, &c), 0);
	assert_string_equal(c.name, "n");
	pycode__free(&c);

	/* Another type, no image, an address that wraps, a broken version entry. */
	assert_int_equal(pycode__read(&v312, image_read, im, IMG_BASE, IMG_TYPE + 1, &c), -EINVAL);
	assert_null(c.name);
	assert_int_equal(pycode__read(&v312, image_read, im, 0x1000, 0, &c), -EFAULT);
	assert_int_equal(pycode__read(&v312, image_read, im, UINT64_MAX - 16, 0, &c), -EFAULT);
	v = v312;
	v.co_linetable = 600;
	assert_int_equal(pycode__read(&v, image_read, im, IMG_BASE, 0, &c), -EINVAL);
	assert_int_equal(pycode__read(NULL, image_read, im, IMG_BASE, 0, &c), -EINVAL);
	free(im);
}

static void test_pycode__read_refuses_bad_objects(void **state)
{
	struct image *im = malloc(sizeof(*im));
	struct pycode c;

	assert_non_null(im);
	/* A legacy (not compact) string, an unknown kind, "ASCII" of 2-byte kind, a negative
	 * length, a NULL pointer. */
	image_init(im);
	put32(im, AT_FILE + 32, 1 << 2 | 1 << 6);
	assert_int_equal(image_code(im, &c), -EINVAL);
	image_init(im);
	put32(im, AT_QUAL + 32, 3 << 2 | 1 << 5);
	assert_int_equal(image_code(im, &c), -EINVAL);
	image_init(im);
	put32(im, AT_QUAL + 32, 2 << 2 | 1 << 5 | 1 << 6);
	assert_int_equal(image_code(im, &c), -EINVAL);
	image_init(im);
	put64(im, AT_FILE + 16, (uint64_t)-1);
	assert_int_equal(image_code(im, &c), -EINVAL);
	image_init(im);
	put64(im, v312.co_filename, 0);
	assert_int_equal(image_code(im, &c), -EINVAL);
	assert_null(c.name);

	/* Tables: over the cap, a negative size, a size running past the mapping, a pointer
	 * outside it. */
	image_init(im);
	put64(im, AT_TABLE + 16, PYCODE_MAX_TABLE + 1);
	assert_int_equal(image_code(im, &c), -E2BIG);
	put64(im, AT_TABLE + 16, (uint64_t)-3);
	assert_int_equal(image_code(im, &c), -EINVAL);
	put64(im, AT_TABLE + 16, PYCODE_MAX_TABLE);
	assert_int_equal(image_code(im, &c), -EFAULT);
	image_init(im);
	put64(im, v312.co_linetable, IMG_BASE + IMG_SIZE - 8);
	assert_int_equal(image_code(im, &c), -EFAULT);
	assert_null(c.filename);
	free(im);
}

static void test_pycode__read_strings_cut_and_cleaned(void **state)
{
	struct image *im = malloc(sizeof(*im));
	uint16_t ucs2[600];
	uint32_t ucs4[3] = {0x1f600, 0x110000, 'x'};
	char want[PYCODE_MAX_STR + 1];
	struct pycode c;

	assert_non_null(im);
	/* A length of 2^40 with 2000 bytes there: the first PYCODE_MAX_STR are read. */
	image_init(im);
	memset(im->mem + AT_FILE + v312.ascii_size, 'x', 2000);
	put64(im, AT_FILE + 16, 1ULL << 40);
	assert_int_equal(image_code(im, &c), 0);
	assert_int_equal(strlen(c.filename), PYCODE_MAX_STR);
	pycode__free(&c);

	/* 600 three-byte characters: cut after 341 (1023 bytes), never inside one. */
	for (int i = 0; i < 600; i++)
		ucs2[i] = 0x540d;
	put_str(im, AT_QUAL, 2, 1, 0, 600, ucs2, sizeof(ucs2));
	assert_int_equal(image_code(im, &c), 0);
	assert_int_equal(strlen(c.name), 1023);
	for (int i = 0; i < 341; i++)
		memcpy(want + 3 * i, "\xe5\x90\x8d", 3);
	want[1023] = '\0';
	assert_string_equal(c.name, want);
	pycode__free(&c);

	/* NUL, a lone surrogate, a high byte in an ASCII string, a code point past U+10FFFF:
	 * each a '?'; a 4-byte character as UTF-8. */
	ucs2[0] = 'a';
	ucs2[1] = 0;
	ucs2[2] = 0xd800;
	ucs2[3] = 0xe9;
	put_str(im, AT_QUAL, 2, 1, 0, 4, ucs2, 8);
	put_str(im, AT_FILE, 1, 1, 1, 3, "b\xffz", 3);
	assert_int_equal(image_code(im, &c), 0);
	assert_string_equal(c.name, "a??\xc3\xa9");
	assert_string_equal(c.filename, "b?z");
	pycode__free(&c);
	put_str(im, AT_QUAL, 4, 1, 0, 3, ucs4, sizeof(ucs4));
	put_str(im, AT_FILE, 1, 1, 0, 2, "\xe9\x41", 2); /* Latin-1 */
	assert_int_equal(image_code(im, &c), 0);
	assert_string_equal(c.name, "\xf0\x9f\x98\x80?x");
	assert_string_equal(c.filename, "\xc3\xa9"
					"A");
	pycode__free(&c);
	/* An empty string and an empty table. */
	put_str(im, AT_FILE, 1, 1, 1, 0, "", 0);
	put64(im, AT_TABLE + 16, 0);
	assert_int_equal(image_code(im, &c), 0);
	assert_string_equal(c.filename, "");
	assert_int_equal(c.table_len, 0);
	assert_non_null(c.table);
	assert_int_equal(pycode__line(&v312, &c, 0), 0);
	pycode__free(&c);
	free(im);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pycode__lnotab_increments),
		cmocka_unit_test(test_pycode__linetable_310_ranges),
		cmocka_unit_test(test_pycode__locations_forms),
		cmocka_unit_test(test_pycode__read_fake_image),
		cmocka_unit_test(test_pycode__read_refuses_bad_objects),
		cmocka_unit_test(test_pycode__read_strings_cut_and_cleaned),
		cmocka_unit_test(test_pycode__line_tables_match_interpreters),
		cmocka_unit_test(test_pycode__read_live_interpreters),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
