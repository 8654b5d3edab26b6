// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython in an ELF file: its version, the symbols the BPF walker needs and the structure
 * offsets of that version (sym/python.h).  The table below was measured with offsetof() against
 * each version's own headers; tests/unit/test_python.c measures it again on every run.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "sym/python.h"
#include "util/log.h"

/* Offsets we do not read in a version are 0 (cf_current: 0xffff, the tstate field is the frame). */
#define CF_SELF 0xffff

static const struct py_version versions[] = {
	{
		.major = 3,
		.minor = 8,
		.bpf = {.tss = 1392,
			.gil_holder = 1368,
			.ts_interp = 16,
			.ts_frame = 24,
			.cf_current = CF_SELF,
			.fr_code = 32,
			.fr_back = 24,
			.fr_instr = 104,
			.style = PROF_PY_FRAMEOBJ,
			.instr = PROF_PY_LASTI_BYTES},
		.co_firstlineno = 40,
		.co_filename = 104,
		.co_name = 112,
		.co_linetable = 120,
		.line_table = PY_LNOTAB,
		.ascii_size = 48,
		.compact_size = 72,
		.rt_interp_head = 32,
		.is_tstate_head = 8,
		.is_modules = 56,
		.ts_next = 8,
		.ts_thread_id = 176,
		.tp_basicsize = 32,
		.tp_flags = 168,
		.tp_dictoffset = 288,
		.ma_keys = 32,
		.ma_values = 40,
		.dk_nentries = 32,
		.dk_indices = 40,
		.obj_layout = PY_OBJ_38,
	},
	{
		.major = 3,
		.minor = 9,
		.bpf = {.tss = 584,
			.gil_holder = 568,
			.ts_interp = 16,
			.ts_frame = 24,
			.cf_current = CF_SELF,
			.fr_code = 32,
			.fr_back = 24,
			.fr_instr = 104,
			.style = PROF_PY_FRAMEOBJ,
			.instr = PROF_PY_LASTI_BYTES},
		.co_firstlineno = 40,
		.co_filename = 104,
		.co_name = 112,
		.co_linetable = 120,
		.line_table = PY_LNOTAB,
		.ascii_size = 48,
		.compact_size = 72,
		.rt_interp_head = 32,
		.is_tstate_head = 8,
		.is_modules = 856,
		.ts_next = 8,
		.ts_thread_id = 176,
		.tp_basicsize = 32,
		.tp_flags = 168,
		.tp_dictoffset = 288,
		.ma_keys = 32,
		.ma_values = 40,
		.dk_nentries = 32,
		.dk_indices = 40,
		.obj_layout = PY_OBJ_38,
	},
	{
		.major = 3,
		.minor = 10,
		.bpf = {.tss = 584,
			.gil_holder = 568,
			.ts_interp = 16,
			.ts_frame = 24,
			.cf_current = CF_SELF,
			.fr_code = 32,
			.fr_back = 24,
			.fr_instr = 96,
			.style = PROF_PY_FRAMEOBJ,
			.instr = PROF_PY_LASTI_UNITS},
		.co_firstlineno = 40,
		.co_filename = 104,
		.co_name = 112,
		.co_linetable = 120,
		.line_table = PY_LINETABLE_310,
		.ascii_size = 48,
		.compact_size = 72,
		.rt_interp_head = 32,
		.is_tstate_head = 8,
		.is_modules = 856,
		.ts_next = 8,
		.ts_thread_id = 176,
		.tp_basicsize = 32,
		.tp_flags = 168,
		.tp_dictoffset = 288,
		.ma_keys = 32,
		.ma_values = 40,
		.dk_nentries = 32,
		.dk_indices = 40,
		.obj_layout = PY_OBJ_38,
	},
	{
		.major = 3,
		.minor = 11,
		.bpf = {.tss = 592,
			.gil_holder = 576,
			.ts_interp = 16,
			.ts_frame = 56,
			.cf_current = 8,
			.fr_code = 32,
			.fr_back = 48,
			.fr_instr = 56,
			.fr_entry = 68,
			.co_code_adaptive = 184,
			.style = PROF_PY_ENTRY,
			.instr = PROF_PY_INSTR_PTR},
		.co_firstlineno = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.line_table = PY_LOCATIONS,
		.ascii_size = 48,
		.compact_size = 72,
		.rt_interp_head = 40,
		.is_tstate_head = 16,
		.is_modules = 888,
		.ts_next = 8,
		.ts_thread_id = 152,
		.ts_native_id = 160,
		.tp_basicsize = 32,
		.tp_flags = 168,
		.tp_dictoffset = 288,
		.ht_cached_keys = 872,
		.ma_keys = 32,
		.ma_values = 40,
		.dk_nentries = 24,
		.dk_indices = 32,
		.obj_layout = PY_OBJ_311,
	},
	{
		.major = 3,
		.minor = 12,
		.bpf = {.tss = 1544,
			.ts_interp = 16,
			.ts_frame = 56,
			.cf_current = 0,
			.fr_code = 0,
			.fr_back = 8,
			.fr_instr = 56,
			.fr_entry = 70,
			.co_code_adaptive = 192,
			.interp_gil = 384,
			.gil_locked = 16,
			.gil_last_holder = 8,
			.style = PROF_PY_SHIM,
			.instr = PROF_PY_INSTR_PTR},
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.line_table = PY_LOCATIONS,
		.ascii_size = 40,
		.compact_size = 56,
		.rt_interp_head = 40,
		.is_tstate_head = 72,
		.is_modules = 944,
		.ts_next = 8,
		.ts_thread_id = 136,
		.ts_native_id = 144,
		.tp_basicsize = 32,
		.tp_flags = 168,
		.tp_dictoffset = 288,
		.ht_cached_keys = 880,
		.ma_keys = 32,
		.ma_values = 40,
		.dk_nentries = 24,
		.dk_indices = 32,
		.obj_layout = PY_OBJ_312,
	},
	{
		.major = 3,
		.minor = 13,
		.bpf = {.tss = 2160,
			.ts_interp = 16,
			.ts_frame = 72,
			.cf_current = CF_SELF,
			.fr_code = 0,
			.fr_back = 8,
			.fr_instr = 56,
			.fr_entry = 70,
			.co_code_adaptive = 200,
			.interp_gil = 16,
			.gil_locked = 16,
			.gil_last_holder = 8,
			.style = PROF_PY_SHIM,
			.instr = PROF_PY_INSTR_PTR},
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.line_table = PY_LOCATIONS,
		.ascii_size = 40,
		.compact_size = 56,
		.rt_interp_head = 632,
		.is_next = 7264,
		.is_tstate_head = 7344,
		.is_modules = 7656,
		.ts_next = 8,
		.ts_thread_id = 152,
		.ts_native_id = 160,
		.tp_basicsize = 32,
		.tp_flags = 168,
		.tp_dictoffset = 288,
		.ht_cached_keys = 880,
		.ma_keys = 32,
		.ma_values = 40,
		.dk_nentries = 24,
		.dk_indices = 32,
		.dv_values = 8,
		.obj_layout = PY_OBJ_313,
	},
};

const struct py_version *py_version__find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].major == major && versions[i].minor == minor)
			return &versions[i];
	return NULL;
}

/*
 * 3.13's struct _Py_DebugOffsets (Include/internal/pycore_runtime.h), the first member of
 * _PyRuntime: every field a uint64_t, so a field is named by its index.  Only what we use.
 */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_RUNTIME_SIZE = 3,
	DO_INTERP_CEVAL_GIL = 14,
	DO_INTERP_GIL_STATE = 15,
	DO_INTERP_GIL_LOCKED = 17,
	DO_INTERP_GIL_HOLDER = 18,
	DO_TS_INTERP = 22,
	DO_TS_CURRENT_FRAME = 23,
	DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30,
	DO_FRAME_INSTR_PTR = 31,
	DO_FRAME_OWNER = 33,
	DO_CODE_FILENAME = 35,
	DO_CODE_NAME = 36,
	DO_CODE_QUALNAME = 37,
	DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39,
	DO_CODE_ADAPTIVE = 43,
	DO_UNICODE_STATE = 68,
	DO_UNICODE_ASCII_SIZE = 70,
	DO_COUNT_313 = 73, /* sizeof(_Py_DebugOffsets) / 8 in 3.13 */
};

#define DEBUG_COOKIE	 "xdebugpy"
#define PY_TP_DEALLOC	 48 /* PyTypeObject: tp_dealloc (3.x, 64-bit) */
#define UNICODE_STATE_AT 32

/* The Python symbols we look for, by index into struct syms. */
enum { SYM_RUNTIME, SYM_EVAL, SYM_COLD, SYM_CODE_TYPE, SYM_VERSION, SYM_N };

static const char *const sym_names[SYM_N] = {
	[SYM_RUNTIME] = "_PyRuntime",
	[SYM_EVAL] = "_PyEval_EvalFrameDefault",
	[SYM_COLD] = "_PyEval_EvalFrameDefault.cold",
	[SYM_CODE_TYPE] = "PyCode_Type",
	[SYM_VERSION] = "Py_Version",
};

struct syms {
	bool found[SYM_N];
	uint64_t addr[SYM_N], size[SYM_N];
};

/* Look the names still missing up in one symbol table section. */
static void syms__scan(struct syms *s, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	size_t entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Sym sym;

	if (!data || !entsz)
		return;
	for (size_t i = 0; i < data->d_size / entsz; i++) {
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		for (int k = 0; k < SYM_N; k++) {
			if (s->found[k] || strcmp(name, sym_names[k]))
				continue;
			s->found[k] = true;
			s->addr[k] = sym.st_value;
			s->size[k] = sym.st_size;
		}
	}
}

/* .symtab first (it has the local .cold symbol), then .dynsym for whatever it lacked. */
static void syms__find(struct syms *out, Elf *elf)
{
	static const Elf64_Word kinds[] = {SHT_SYMTAB, SHT_DYNSYM};
	GElf_Shdr sh;

	memset(out, 0, sizeof(*out));
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn)))
			if (gelf_getshdr(scn, &sh) && sh.sh_type == kinds[k])
				syms__scan(out, elf, scn, &sh);
	}
}

/*
 * Copy len bytes at ELF virtual address addr from the file's section data: an allocated
 * section holding bytes in the file (not .bss).  -ENOENT when no section holds the whole range.
 */
static int read_vaddr(Elf *elf, void *buf, size_t len, uint64_t addr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data = NULL;
		uint64_t off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size ||
		    sh.sh_size - (addr - sh.sh_addr) < len)
			continue;
		off = addr - sh.sh_addr;
		while ((data = elf_getdata(scn, data))) {
			if (!data->d_buf || off < (uint64_t)data->d_off ||
			    off - (uint64_t)data->d_off > data->d_size ||
			    data->d_size - (off - (uint64_t)data->d_off) < len)
				continue;
			memcpy(buf, (const char *)data->d_buf + (off - (uint64_t)data->d_off), len);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * CPython's code_dealloc (static, so no symbol): PyCode_Type's tp_dealloc, an ELF address, or 0;
 * its offset in the file in *off.  In a position-independent file the slot is filled by a
 * R_X86_64_RELATIVE relocation (its addend is the address), else it holds the address itself.
 * Only an address inside an executable segment is taken: a probe goes there.
 */
static uint64_t code_dealloc_of(Elf *elf, uint64_t code_type, uint64_t *off)
{
	uint64_t slot = code_type + PY_TP_DEALLOC, addr = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph;

	while (!addr && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data = NULL;
		GElf_Rela r;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		while (!addr && (data = elf_getdata(scn, data))) {
			for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
				if (!gelf_getrela(data, (int)i, &r) || r.r_offset != slot)
					continue;
				if (GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE)
					addr = (uint64_t)r.r_addend;
				break;
			}
		}
	}
	if (!addr && read_vaddr(elf, &addr, sizeof(addr), slot))
		return 0;
	if (!addr || elf_getphdrnum(elf, &nph))
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_filesz) {
			*off = addr - ph.p_vaddr + ph.p_offset;
			return addr;
		}
	}
	return 0;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* "3.X" at s (the "python" prefix already passed), followed by nothing or an ABI letter / '.'. */
static bool parse_3x(const char *s, uint8_t *major, uint8_t *minor)
{
	unsigned m = 0;
	int digits = 0;

	if (s[0] != '3' || s[1] != '.')
		return false;
	for (s += 2; *s >= '0' && *s <= '9' && digits < 3; s++, digits++)
		m = m * 10 + (unsigned)(*s - '0');
	if (!digits || m > 255 || (*s && *s != '.' && *s != 'm' && *s != 'd' && *s != 'u'))
		return false;
	*major = 3;
	*minor = (uint8_t)m;
	return true;
}

static bool version_from_soname(Elf *elf, uint8_t *major, uint8_t *minor)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Dyn dyn;

	while ((scn = elf_nextscn(elf, scn))) {
		size_t entsz = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !entsz)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < data->d_size / entsz; i++) {
			const char *name;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_SONAME)
				continue;
			name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (name && !strncmp(name, "libpython", 9) &&
			    parse_3x(name + 9, major, minor))
				return true;
		}
	}
	return false;
}

static bool version_from_name(const char *hint, uint8_t *major, uint8_t *minor)
{
	const char *base;

	if (!hint)
		return false;
	base = strrchr(hint, '/');
	base = base ? base + 1 : hint;
	return !strncmp(base, "python", 6) && parse_3x(base + 6, major, minor);
}

/* Py_Version (3.11+): PY_VERSION_HEX, 0x030B02F0 for 3.11.2. */
static bool version_from_symbol(Elf *elf, const struct syms *s, uint8_t *major, uint8_t *minor)
{
	uint8_t b[8] = {0};
	uint64_t v;

	if (!s->found[SYM_VERSION] || s->size[SYM_VERSION] < 4 ||
	    read_vaddr(elf, b, 4, s->addr[SYM_VERSION]))
		return false;
	v = le64(b);
	if ((v >> 24 & 0xff) != 3)
		return false;
	*major = 3;
	*minor = (uint8_t)(v >> 16 & 0xff);
	return true;
}

/* Put one _Py_DebugOffsets field into dst, noting a difference from what the table said. */
static bool take(uint16_t *dst, uint64_t val, const char *what, bool ok)
{
	if (val == *dst)
		return ok;
	pr_debug("python: _Py_DebugOffsets.%s is %llu, our table says %u\n", what,
		 (unsigned long long)val, *dst);
	*dst = val > UINT16_MAX ? UINT16_MAX : (uint16_t)val;
	return false;
}

/*
 * 3.13: the offsets from _Py_DebugOffsets in the file's initialized _PyRuntime, over the
 * table's entry in out->v.  1: they match the table; 0: they differ (out->v holds the file's);
 * -errno: unreadable or not a 3.13 default build.
 */
static int read_debug_offsets(Elf *elf, struct py_elf *out)
{
	uint8_t raw[DO_COUNT_313 * 8];
	uint64_t f[DO_COUNT_313], gil;
	struct py_version *v = &out->v;
	bool ok = true;
	int err;

	if (out->runtime_size && out->runtime_size < sizeof(raw))
		return -ERANGE;
	err = read_vaddr(elf, raw, sizeof(raw), out->runtime);
	if (err)
		return err;
	if (memcmp(raw, DEBUG_COOKIE, 8))
		return -EBADMSG;
	for (int i = 0; i < DO_COUNT_313; i++)
		f[i] = le64(raw + i * 8);
	if ((f[DO_VERSION] >> 24 & 0xff) != out->major ||
	    (f[DO_VERSION] >> 16 & 0xff) != out->minor) {
		pr_debug("python: _Py_DebugOffsets.version %#llx, not %u.%u\n",
			 (unsigned long long)f[DO_VERSION], out->major, out->minor);
		return -EBADMSG;
	}
	/* A free-threaded build lays its objects out differently: not what we walk. */
	if (f[DO_FREE_THREADED]) {
		pr_debug("python: a free-threaded build\n");
		return -EOPNOTSUPP;
	}
	if (out->runtime_size && f[DO_RUNTIME_SIZE] != out->runtime_size) {
		pr_debug("python: _Py_DebugOffsets.runtime_state.size %llu, symbol size %llu\n",
			 (unsigned long long)f[DO_RUNTIME_SIZE],
			 (unsigned long long)out->runtime_size);
		ok = false;
	}
	if (f[DO_UNICODE_STATE] != UNICODE_STATE_AT) {
		pr_debug("python: _Py_DebugOffsets.unicode_object.state is %llu\n",
			 (unsigned long long)f[DO_UNICODE_STATE]);
		ok = false;
	}
	/* The GIL's fields are given from the interpreter state; we read them through the pointer.
	 */
	gil = f[DO_INTERP_GIL_STATE];
	if (f[DO_INTERP_GIL_LOCKED] < gil || f[DO_INTERP_GIL_HOLDER] < gil) {
		pr_debug("python: _Py_DebugOffsets: GIL fields before the GIL\n");
		return -EBADMSG;
	}
	ok = take(&v->bpf.interp_gil, f[DO_INTERP_CEVAL_GIL], "interpreter_state.ceval_gil", ok);
	ok = take(&v->bpf.gil_locked, f[DO_INTERP_GIL_LOCKED] - gil,
		  "interpreter_state.gil_runtime_state_locked", ok);
	ok = take(&v->bpf.gil_last_holder, f[DO_INTERP_GIL_HOLDER] - gil,
		  "interpreter_state.gil_runtime_state_holder", ok);
	ok = take(&v->bpf.ts_interp, f[DO_TS_INTERP], "thread_state.interp", ok);
	ok = take(&v->bpf.ts_frame, f[DO_TS_CURRENT_FRAME], "thread_state.current_frame", ok);
	ok = take(&v->bpf.fr_back, f[DO_FRAME_PREVIOUS], "interpreter_frame.previous", ok);
	ok = take(&v->bpf.fr_code, f[DO_FRAME_EXECUTABLE], "interpreter_frame.executable", ok);
	ok = take(&v->bpf.fr_instr, f[DO_FRAME_INSTR_PTR], "interpreter_frame.instr_ptr", ok);
	ok = take(&v->bpf.fr_entry, f[DO_FRAME_OWNER], "interpreter_frame.owner", ok);
	ok = take(&v->bpf.co_code_adaptive, f[DO_CODE_ADAPTIVE], "code_object.co_code_adaptive",
		  ok);
	ok = take(&v->co_filename, f[DO_CODE_FILENAME], "code_object.filename", ok);
	ok = take(&v->co_name, f[DO_CODE_NAME], "code_object.name", ok);
	ok = take(&v->co_qualname, f[DO_CODE_QUALNAME], "code_object.qualname", ok);
	ok = take(&v->co_linetable, f[DO_CODE_LINETABLE], "code_object.linetable", ok);
	ok = take(&v->co_firstlineno, f[DO_CODE_FIRSTLINENO], "code_object.firstlineno", ok);
	ok = take(&v->ascii_size, f[DO_UNICODE_ASCII_SIZE], "unicode_object.asciiobject_size", ok);
	return ok;
}

/* The version from Py_Version, else the soname, else the name the file runs under. */
static bool find_version(Elf *elf, const struct syms *s, const char *name_hint, struct py_elf *out)
{
	return version_from_symbol(elf, s, &out->major, &out->minor) ||
	       version_from_soname(elf, &out->major, &out->minor) ||
	       version_from_name(name_hint, &out->major, &out->minor);
}

int python__inspect_elf(Elf *elf, const char *name_hint, struct py_elf *out)
{
	const struct py_version *v;
	struct syms s;
	GElf_Ehdr eh;
	int err;

	memset(out, 0, sizeof(*out));
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	syms__find(&s, elf);
	/* Every CPython since 3.6 has its evaluation loop under this name. */
	if (!s.found[SYM_EVAL])
		return 0;
	/*
	 * A CPython we cannot walk still gets its version told (3.6 has no _PyRuntime); our
	 * offsets and the values we read from the file are x86-64's.
	 */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64) {
		if (!version_from_soname(elf, &out->major, &out->minor))
			version_from_name(name_hint, &out->major, &out->minor);
		pr_debug("python: CPython for machine %u: not walked\n", eh.e_machine);
		out->status = PY_ELF_UNSUPPORTED;
		return 0;
	}
	if (!find_version(elf, &s, name_hint, out)) {
		out->status = s.found[SYM_RUNTIME] ? PY_ELF_UNKNOWN_VERSION : PY_ELF_NOT_PYTHON;
		return 0;
	}
	v = py_version__find(out->major, out->minor);
	if (!v) {
		out->status = PY_ELF_UNSUPPORTED;
		return 0;
	}
	if (!s.found[SYM_RUNTIME] || !s.found[SYM_CODE_TYPE] || !s.size[SYM_EVAL] ||
	    s.addr[SYM_EVAL] + s.size[SYM_EVAL] < s.addr[SYM_EVAL]) {
		pr_debug("python: %u.%u without _PyRuntime, PyCode_Type or an evaluation loop "
			 "size\n",
			 out->major, out->minor);
		memset(out, 0, sizeof(*out));
		return 0;
	}
	out->runtime = s.addr[SYM_RUNTIME];
	out->runtime_size = s.size[SYM_RUNTIME];
	out->eval_lo = s.addr[SYM_EVAL];
	out->eval_hi = s.addr[SYM_EVAL] + s.size[SYM_EVAL];
	out->code_type = s.addr[SYM_CODE_TYPE];
	out->code_dealloc = code_dealloc_of(elf, out->code_type, &out->code_dealloc_offset);
	if (s.found[SYM_COLD] && s.size[SYM_COLD] &&
	    s.addr[SYM_COLD] + s.size[SYM_COLD] > s.addr[SYM_COLD]) {
		out->cold_lo = s.addr[SYM_COLD];
		out->cold_hi = s.addr[SYM_COLD] + s.size[SYM_COLD];
	}
	out->v = *v;
	/* A _PyRuntime smaller than the fields we read is not the layout we know. */
	if (out->runtime_size && (out->runtime_size < (uint64_t)v->bpf.tss + 8 ||
				  out->runtime_size < (uint64_t)v->bpf.gil_holder + 8)) {
		pr_debug("python: _PyRuntime of %llu bytes is too small for %u.%u\n",
			 (unsigned long long)out->runtime_size, out->major, out->minor);
		out->status = PY_ELF_BAD_OFFSETS;
		return 0;
	}
	if (out->minor >= 13) {
		err = read_debug_offsets(elf, out);
		if (err <= 0) {
			if (err)
				pr_debug("python: _Py_DebugOffsets of %u.%u unusable: %s\n",
					 out->major, out->minor, strerror(-err));
			out->status = PY_ELF_BAD_OFFSETS;
			return 0;
		}
		out->debug_offsets = true;
	}
	out->status = PY_ELF_OK;
	return 0;
}

/* Exactly len bytes at addr in pid: 0, -ESRCH, -EPERM or -EFAULT (a short read). */
static int read_mem(pid_t pid, void *buf, size_t len, uint64_t addr)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int python__validate(pid_t pid, const struct py_elf *e, uint64_t runtime_addr)
{
	struct {
		int32_t initialized;
		uint32_t key;
	} tss;
	uint8_t head[16];
	int err;

	if (!e || e->status != PY_ELF_OK)
		return -EINVAL;
	if (e->minor >= 13) {
		err = read_mem(pid, head, sizeof(head), runtime_addr);
		if (err)
			return err;
		if (memcmp(head, DEBUG_COOKIE, 8) || (le64(head + 8) >> 24 & 0xff) != e->major ||
		    (le64(head + 8) >> 16 & 0xff) != e->minor) {
			pr_debug("python: pid %d: no _Py_DebugOffsets of %u.%u at %#llx\n", pid,
				 e->major, e->minor, (unsigned long long)runtime_addr);
			return -EINVAL;
		}
	}
	err = read_mem(pid, &tss, sizeof(tss), runtime_addr + e->v.bpf.tss);
	if (err)
		return err;
	/* Not initialized yet (early in startup): nothing to contradict. */
	if (tss.initialized == 0)
		return 0;
	if (tss.initialized != 1 || tss.key >= PROF_PY_TSD_KEYS) {
		pr_debug("python: pid %d: thread-state key {%d, %u} unusable\n", pid,
			 tss.initialized, tss.key);
		return -EINVAL;
	}
	return 0;
}
