// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/elf_file.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "proc/safe_open.h"
#include "sym/fde_index.h"
#include "sym/minidebug.h"
#include "util/strarena.h"

#define DEFAULT_DEBUG_DIR "/usr/lib/debug"

struct seg {
	uint64_t offset, vaddr, filesz, memsz;
	bool exec;
};

struct sym {
	struct elf_sym pub;
	uint64_t sec_end; /* end of the symbol's section: bounds a size-0 symbol */
	size_t name_off;  /* into elf_file.names, until the pointers are fixed */
	uint8_t type, bind;
	bool hidden; /* a non-default symbol version ("name@VER", or hidden in .gnu.version) */
	bool sized;  /* st_size != 0 */
};

struct elf_file {
	char *path;	/* NULL when opened from memory or an fd */
	int fd;		/* a dup of the caller's fd, else -1 */
	int dwarf_fd;	/* elf_file_opts.keep_dwarf_fd: a dup while its own DWARF is unread, else -1
			 */
	bool own_dwarf; /* it carries .debug_line itself (built with -g, not stripped) */
	dev_t dev;
	ino_t ino;
	uint16_t type;
	char *build_id;
	struct seg *segs;
	size_t nsegs;
	struct sym *syms; /* by address, preferred alias first */
	size_t nsyms, syms_cap;
	size_t *uniq; /* index of the preferred symbol at each distinct address */
	size_t nuniq;
	struct strarena names;
	enum elf_file_syms src;
	char *debug_path;
	struct fde_index fdes; /* without .symtab: what names a frame no symbol covers */
};

/* Sections a symbol table read needs: the table, its versions (for .dynsym). */
struct symtab_src {
	Elf *elf;
	Elf_Scn *scn;
	GElf_Shdr shdr;
	Elf_Data *versym; /* NULL for .symtab */
};

static const char *debug_dir(const struct elf_file_opts *opts)
{
	return opts && opts->debug_dir ? opts->debug_dir : DEFAULT_DEBUG_DIR;
}

static struct sym *new_sym(struct elf_file *ef)
{
	if (ef->nsyms == ef->syms_cap) {
		size_t ncap = ef->syms_cap ? ef->syms_cap * 2 : 256;
		struct sym *n = realloc(ef->syms, ncap * sizeof(*n));

		if (!n)
			return NULL;
		ef->syms = n;
		ef->syms_cap = ncap;
	}
	return memset(&ef->syms[ef->nsyms], 0, sizeof(struct sym));
}

static bool keep_symbol(const GElf_Sym *s, const GElf_Shdr *sec, const char *name)
{
	int type = GELF_ST_TYPE(s->st_info), bind = GELF_ST_BIND(s->st_info);

	if (!name[0] || !s->st_value || !(sec->sh_flags & SHF_ALLOC))
		return false;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	/* Hand-written assembly often leaves entry points untyped; local labels are not
	 * functions, nor are mapping symbols ("$x") or compiler labels (".L…"). */
	return type == STT_NOTYPE && (bind == STB_GLOBAL || bind == STB_WEAK) &&
	       (sec->sh_flags & SHF_EXECINSTR) && name[0] != '$' && name[0] != '.';
}

static int read_syms(struct elf_file *ef, const struct symtab_src *src)
{
	size_t n = src->shdr.sh_entsize ? src->shdr.sh_size / src->shdr.sh_entsize : 0;
	Elf_Data *data = elf_getdata(src->scn, NULL);

	if (!data)
		return -EINVAL;
	for (size_t i = 1; i < n; i++) {
		GElf_Versym vs = 0;
		GElf_Shdr sec;
		Elf_Scn *scn;
		GElf_Sym s;
		const char *name, *at;
		struct sym *sym;
		size_t len;
		int err;

		if (!gelf_getsym(data, i, &s) || s.st_shndx == SHN_UNDEF ||
		    s.st_shndx >= SHN_LORESERVE)
			continue;
		scn = elf_getscn(src->elf, s.st_shndx);
		name = elf_strptr(src->elf, src->shdr.sh_link, s.st_name);
		if (!scn || !gelf_getshdr(scn, &sec) || !name || !keep_symbol(&s, &sec, name))
			continue;
		sym = new_sym(ef);
		if (!sym)
			return -ENOMEM;
		/* .symtab spells versions in names: "memcpy@GLIBC_2.2.5", "malloc@@GLIBC_2.2.5" */
		at = strchr(name, '@');
		len = at ? (size_t)(at - name) : strlen(name);
		if (at && at[1] != '@')
			sym->hidden = true;
		if (src->versym && gelf_getversym(src->versym, i, &vs) && (vs & 0x8000))
			sym->hidden = true;
		err = strarena__add(&ef->names, &sym->name_off, name, len);
		if (err)
			return err;
		sym->pub.addr = s.st_value;
		sym->pub.size = s.st_size;
		sym->sized = s.st_size != 0;
		sym->sec_end = sec.sh_addr + sec.sh_size;
		sym->type = GELF_ST_TYPE(s.st_info);
		sym->bind = GELF_ST_BIND(s.st_info);
		ef->nsyms++;
	}
	return 0;
}

static int bind_rank(uint8_t bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static size_t underscores(const char *s)
{
	return strspn(s, "_");
}

/*
 * Which alias names an address: a typed, sized, exported, default-version name with the fewest
 * leading underscores -- glibc's public names are often weak aliases of internal ones
 * ("strdup" over "__strdup", "malloc" over "__libc_malloc") -- then global over weak, then by
 * name, to be deterministic.
 */
static int cmp_alias(const struct sym *a, const struct sym *b)
{
	int d;

	if ((a->type == STT_NOTYPE) != (b->type == STT_NOTYPE))
		return a->type == STT_NOTYPE ? 1 : -1;
	if (a->sized != b->sized)
		return a->sized ? -1 : 1;
	if ((a->bind == STB_LOCAL) != (b->bind == STB_LOCAL))
		return a->bind == STB_LOCAL ? 1 : -1;
	if (a->hidden != b->hidden)
		return a->hidden ? 1 : -1;
	if (underscores(a->pub.name) != underscores(b->pub.name))
		return underscores(a->pub.name) < underscores(b->pub.name) ? -1 : 1;
	d = bind_rank(a->bind) - bind_rank(b->bind);
	if (d)
		return d;
	return strcmp(a->pub.name, b->pub.name);
}

static int cmp_sym(const void *pa, const void *pb)
{
	const struct sym *a = pa, *b = pb;

	if (a->pub.addr != b->pub.addr)
		return a->pub.addr < b->pub.addr ? -1 : 1;
	return cmp_alias(a, b);
}

static int finish_syms(struct elf_file *ef)
{
	for (size_t i = 0; i < ef->nsyms; i++)
		ef->syms[i].pub.name = ef->names.buf + ef->syms[i].name_off;
	if (!ef->nsyms)
		return 0;
	qsort(ef->syms, ef->nsyms, sizeof(*ef->syms), cmp_sym);
	ef->uniq = malloc(ef->nsyms * sizeof(*ef->uniq));
	if (!ef->uniq)
		return -ENOMEM;
	for (size_t i = 0; i < ef->nsyms; i++)
		if (!i || ef->syms[i].pub.addr != ef->syms[i - 1].pub.addr)
			ef->uniq[ef->nuniq++] = i;
	/* A size-0 symbol extends to the next address that has a symbol, within its section. */
	for (size_t u = 0, i = 0; i < ef->nsyms; i++) {
		struct sym *s = &ef->syms[i];
		uint64_t end = s->sec_end;

		while (u < ef->nuniq && ef->syms[ef->uniq[u]].pub.addr <= s->pub.addr)
			u++;
		if (s->sized)
			continue;
		if (u < ef->nuniq && ef->syms[ef->uniq[u]].pub.addr < end)
			end = ef->syms[ef->uniq[u]].pub.addr;
		s->pub.size = end > s->pub.addr ? end - s->pub.addr : 0;
	}
	return 0;
}

static int hex_build_id(struct elf_file *ef, const unsigned char *desc, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char *id = malloc(2 * len + 1);

	if (!id)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		id[2 * i] = hex[desc[i] >> 4];
		id[2 * i + 1] = hex[desc[i] & 0xf];
	}
	id[2 * len] = '\0';
	free(ef->build_id);
	ef->build_id = id;
	return 0;
}

/* 1 when data held a GNU build-id note (now in ef->build_id), 0 when not, or -errno. */
static int find_build_id_note(struct elf_file *ef, Elf_Data *data)
{
	size_t off = 0, name_off, desc_off, next;
	GElf_Nhdr nh;

	while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off))) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    memcmp((char *)data->d_buf + name_off, "GNU", 4) == 0) {
			const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;
			int err = hex_build_id(ef, desc, nh.n_descsz);

			return err ? err : 1;
		}
		off = next;
	}
	return 0;
}

static int read_build_id(struct elf_file *ef, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t nph = 0;
	GElf_Shdr sh;
	int found;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && (found = find_build_id_note(ef, data)))
			return found < 0 ? found : 0;
	}
	/* Files stripped of their section headers still have the PT_NOTE segment. */
	if (elf_getphdrnum(elf, &nph))
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *data;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (data && (found = find_build_id_note(ef, data)))
			return found < 0 ? found : 0;
	}
	return 0;
}

static int read_segments(struct elf_file *ef, Elf *elf)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph))
		return -EINVAL;
	ef->segs = calloc(nph ? nph : 1, sizeof(*ef->segs));
	if (!ef->segs)
		return -ENOMEM;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		ef->segs[ef->nsegs++] = (struct seg){
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.memsz = ph.p_memsz,
			.exec = ph.p_flags & PF_X,
		};
	}
	return 0;
}

static Elf_Scn *find_section(Elf *elf, const char *name, Elf64_Word type, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, out) || (type && out->sh_type != type))
			continue;
		n = elf_strptr(elf, shstrndx, out->sh_name);
		if (n && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

static int crc32_file(int fd, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0)
			return -errno;
		if (!n)
			break;
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	*out = (uint32_t)crc;
	return 0;
}

/*
 * Use the .symtab of debug file path: it must carry the same build id (when we know ours) or,
 * for a .gnu_debuglink candidate (want_crc), the CRC the link records.  0 when used.
 */
static int try_debug_file(struct elf_file *ef, int root_fd, const char *path, bool want_crc,
			  uint32_t crc)
{
	struct elf_file probe = {.fd = -1};
	struct symtab_src src = {0};
	struct stat st;
	int err, fd;

	/*
	 * Regular files only, size capped (a link to /dev/zero would be CRC'd forever),
	 * non-blocking (a FIFO), and inside the target's root when the candidate lies next to its
	 * file.
	 */
	err = safe_open__at(&fd, root_fd, path, 0, SAFE_OPEN_ELF_MAX, &st);
	if (err)
		return err;
	/* A debuglink in the file's own directory may name the file itself. */
	if (st.st_dev == ef->dev && st.st_ino == ef->ino) {
		err = -ENOENT;
		goto cleanup;
	}
	if (want_crc) {
		uint32_t got;

		err = crc32_file(fd, &got);
		if (err)
			goto cleanup;
		if (got != crc) {
			err = -ESTALE;
			goto cleanup;
		}
	}
	src.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!src.elf || elf_kind(src.elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = read_build_id(&probe, src.elf);
	if (err)
		goto cleanup;
	if (!want_crc && ef->build_id[0] &&
	    (!probe.build_id || strcmp(probe.build_id, ef->build_id))) {
		err = -ESTALE;
		goto cleanup;
	}
	src.scn = find_section(src.elf, ".symtab", SHT_SYMTAB, &src.shdr);
	if (!src.scn) {
		err = -ENOENT;
		goto cleanup;
	}
	err = read_syms(ef, &src);
	if (err)
		goto cleanup;
	if (!ef->nsyms) {
		err = -ENOENT; /* a .symtab without functions: not the debug file we want */
		goto cleanup;
	}
	ef->debug_path = strdup(path);
	err = ef->debug_path ? 0 : -ENOMEM;
cleanup:
	free(probe.build_id);
	if (src.elf)
		elf_end(src.elf);
	close(fd);
	return err;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
}

/* A candidate that failed, whatever the reason (absent, not ours, a directory or FIFO the
 * file's own debuglink names): try the next one, and keep the file's own symbols.  Only running
 * out of memory fails the file. */
static bool debug_miss(int err)
{
	return err && err != -ENOMEM;
}

/* .gnu_debuglink holds a file name, padding to 4 bytes, and the CRC32 of the debug file. */
static int try_debuglink(struct elf_file *ef, Elf *elf, const char *path,
			 const struct elf_file_opts *opts, const char *ddir)
{
	/* Next to a target's file means inside the target's root, when we know it. */
	bool in_root = opts && opts->in_root && opts->target_path;
	const char *tpath = opts && opts->target_path ? opts->target_path : path;
	char *dir = NULL, *tdir = NULL, *cand = NULL;
	const char *link;
	Elf_Data *data;
	size_t len, crc_off;
	GElf_Shdr sh;
	Elf_Scn *scn;
	uint32_t crc;
	int err = -ENOENT;

	scn = find_section(elf, ".gnu_debuglink", SHT_PROGBITS, &sh);
	data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !tpath || (!path && !in_root) || data->d_size < 8)
		return -ENOENT;
	link = data->d_buf;
	len = strnlen(link, data->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (!len || crc_off + 4 > data->d_size || strchr(link, '/'))
		return -ENOENT;
	memcpy(&crc, (const char *)data->d_buf + crc_off, sizeof(crc));
	dir = dir_of(in_root ? tpath : path);
	tdir = dir_of(tpath);
	if (!dir || !tdir) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* gdb's order: next to the file, in its .debug/, under the debug root. */
	for (int i = 0; i < 3 && debug_miss(err); i++) {
		const char *sep = tdir[0] == '/' ? "" : "/";
		int n = i == 0	 ? asprintf(&cand, "%s/%s", dir, link)
			: i == 1 ? asprintf(&cand, "%s/.debug/%s", dir, link)
				 : asprintf(&cand, "%s%s%s/%s", ddir, sep, tdir, link);

		if (n < 0) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = try_debug_file(ef, i < 2 && in_root ? opts->root_fd : -1, cand, true, crc);
		free(cand);
	}
cleanup:
	free(dir);
	free(tdir);
	return err;
}

/* Separate debug symbols: by build id, then by .gnu_debuglink.  0 when found. */
static int load_debug_syms(struct elf_file *ef, Elf *elf, const char *path,
			   const struct elf_file_opts *opts)
{
	const char *ddir = debug_dir(opts);
	char *cand;
	int err;

	if (!ddir[0])
		return -ENOENT;
	if (strlen(ef->build_id) > 2) {
		if (asprintf(&cand, "%s/.build-id/%.2s/%s.debug", ddir, ef->build_id,
			     ef->build_id + 2) < 0)
			return -ENOMEM;
		err = try_debug_file(ef, -1, cand, false, 0);
		free(cand);
		if (!debug_miss(err))
			return err;
	}
	return try_debuglink(ef, elf, path, opts, ddir);
}

static struct elf_file *alloc_file(void)
{
	struct elf_file *ef = calloc(1, sizeof(*ef));

	if (ef)
		ef->fd = ef->dwarf_fd = -1;
	return ef;
}

int elf_file__use_debug_file(struct elf_file *ef, const char *path)
{
	struct elf_file *tmp;
	int err;

	if (ef->src == ELF_FILE_SYMS_SYMTAB || ef->src == ELF_FILE_SYMS_DEBUG_FILE)
		return -EEXIST;
	tmp = alloc_file();
	if (!tmp)
		return -ENOMEM;
	tmp->dev = ef->dev;
	tmp->ino = ef->ino;
	tmp->build_id = strdup(ef->build_id);
	err = tmp->build_id ? try_debug_file(tmp, -1, path, false, 0) : -ENOMEM;
	if (!err)
		err = finish_syms(tmp);
	if (!err) {
		/* The new table in, the old one out with tmp. */
		struct elf_file old = *ef;

		ef->syms = tmp->syms;
		ef->nsyms = tmp->nsyms;
		ef->syms_cap = tmp->syms_cap;
		ef->uniq = tmp->uniq;
		ef->nuniq = tmp->nuniq;
		ef->names = tmp->names;
		ef->debug_path = tmp->debug_path;
		ef->src = ELF_FILE_SYMS_DEBUG_FILE;
		tmp->syms = old.syms;
		tmp->uniq = old.uniq;
		tmp->names = old.names;
		tmp->debug_path = old.debug_path;
	}
	elf_file__free(tmp);
	return err;
}

/*
 * MiniDebugInfo: the .symtab of the xz-compressed ELF in .gnu_debugdata (sym/minidebug.h), the
 * functions .dynsym lacks.  0 (none found: nothing read), or -ENOMEM; a section that does not
 * inflate to an ELF with a .symtab is skipped (counted by the caller as no symbols).
 */
static int load_minidebug(struct elf_file *ef, Elf *elf)
{
	struct symtab_src src = {0};
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t len;
	void *buf;
	int err;

	scn = find_section(elf, ".gnu_debugdata", SHT_PROGBITS, &sh);
	if (!scn || sh.sh_size > MINIDEBUG_MAX_IN)
		return 0;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size != sh.sh_size)
		return 0;
	err = minidebug__inflate(&buf, &len, d->d_buf, d->d_size, MINIDEBUG_MAX_OUT);
	if (err)
		return err == -ENOMEM ? err : 0;
	src.elf = elf_memory(buf, len);
	if (src.elf && elf_kind(src.elf) == ELF_K_ELF)
		src.scn = find_section(src.elf, ".symtab", SHT_SYMTAB, &src.shdr);
	err = src.scn ? read_syms(ef, &src) : 0;
	if (src.elf)
		elf_end(src.elf);
	free(buf);
	return err == -ENOMEM ? err : 0;
}

/* The functions .eh_frame_hdr lists (sym/fde_index.h).  0 (none usable: an empty index) or
 * -ENOMEM. */
static int load_fdes(struct elf_file *ef, Elf *elf)
{
	GElf_Shdr hsh, esh;
	Elf_Scn *hdr = find_section(elf, ".eh_frame_hdr", SHT_PROGBITS, &hsh);
	Elf_Scn *eh = find_section(elf, ".eh_frame", SHT_PROGBITS, &esh);
	Elf_Data *hd = hdr ? elf_getdata(hdr, NULL) : NULL;
	Elf_Data *ed = eh ? elf_getdata(eh, NULL) : NULL;
	int err;

	if (!hd || !hd->d_buf || hd->d_size != hsh.sh_size)
		return 0;
	if (ed && (!ed->d_buf || ed->d_size != esh.sh_size))
		ed = NULL;
	err = fde_index__parse(&ef->fdes, hd->d_buf, hd->d_size, hsh.sh_addr, ed ? ed->d_buf : NULL,
			       ed ? ed->d_size : 0, ed ? esh.sh_addr : 0);
	return err == -ENOMEM ? err : 0;
}

static int load_elf(struct elf_file *ef, Elf *elf, const char *path,
		    const struct elf_file_opts *opts)
{
	struct symtab_src src = {.elf = elf};
	GElf_Ehdr eh;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	ef->type = eh.e_type;
	err = read_segments(ef, elf);
	if (err)
		return err;
	err = read_build_id(ef, elf);
	if (err)
		return err;
	if (!ef->build_id) {
		ef->build_id = strdup("");
		if (!ef->build_id)
			return -ENOMEM;
	}

	ef->own_dwarf = find_section(elf, ".debug_line", SHT_PROGBITS, &src.shdr) != NULL;
	src.scn = find_section(elf, ".symtab", SHT_SYMTAB, &src.shdr);
	if (src.scn) {
		err = read_syms(ef, &src);
		if (err)
			return err;
		ef->src = ELF_FILE_SYMS_SYMTAB;
	}
	if (!ef->nsyms) {
		err = load_debug_syms(ef, elf, path, opts);
		if (err && !debug_miss(err))
			return err;
		if (!err && ef->nsyms)
			ef->src = ELF_FILE_SYMS_DEBUG_FILE;
	}
	if (!ef->nsyms) {
		err = load_minidebug(ef, elf);
		if (err)
			return err;
		if (ef->nsyms)
			ef->src = ELF_FILE_SYMS_MINIDEBUG;
	}
	/* Stripped files keep .dynsym (MiniDebugInfo holds what it lacks: both are read); its
	 * symbol versions sit in .gnu.version. */
	if (!ef->nsyms || ef->src == ELF_FILE_SYMS_MINIDEBUG) {
		GElf_Shdr vsh;
		Elf_Scn *vscn = find_section(elf, ".gnu.version", SHT_GNU_versym, &vsh);

		src.scn = find_section(elf, ".dynsym", SHT_DYNSYM, &src.shdr);
		src.versym = vscn ? elf_getdata(vscn, NULL) : NULL;
		if (src.scn) {
			err = read_syms(ef, &src);
			if (err)
				return err;
			if (ef->src != ELF_FILE_SYMS_MINIDEBUG)
				ef->src = ELF_FILE_SYMS_DYNSYM;
		}
	}
	if (!ef->nsyms)
		ef->src = ELF_FILE_SYMS_NONE;
	if (ef->src != ELF_FILE_SYMS_SYMTAB && ef->src != ELF_FILE_SYMS_DEBUG_FILE) {
		err = load_fdes(ef, elf);
		if (err)
			return err;
	}
	return finish_syms(ef);
}

static int load_fd(struct elf_file *ef, int fd, const char *path, const struct elf_file_opts *opts)
{
	struct stat st;
	Elf *elf;
	int err;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	ef->dev = st.st_dev;
	ef->ino = st.st_ino;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	err = load_elf(ef, elf, path, opts);
	elf_end(elf);
	return err;
}

int elf_file__open(struct elf_file **out, const char *path, const struct elf_file_opts *opts)
{
	struct elf_file *ef = alloc_file();
	int err, fd = -1;

	if (!ef)
		return -ENOMEM;
	ef->path = strdup(path);
	if (!ef->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL);
	if (err)
		goto cleanup;
	err = load_fd(ef, fd, path, opts);
	if (err)
		goto cleanup;
	*out = ef;
	ef = NULL;
cleanup:
	if (fd >= 0)
		close(fd);
	elf_file__free(ef);
	return err;
}

int elf_file__open_fd(struct elf_file **out, int fd, const struct elf_file_opts *opts)
{
	struct elf_file *ef = alloc_file();
	int err;

	if (!ef)
		return -ENOMEM;
	if (opts && opts->keep_fd) {
		ef->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (ef->fd < 0) {
			err = -errno;
			goto cleanup;
		}
	}
	err = load_fd(ef, fd, NULL, opts);
	if (err)
		goto cleanup;
	/* Its lines are read when a frame first needs them: from this very file. */
	if (opts && opts->keep_dwarf_fd && ef->own_dwarf && !ef->debug_path) {
		ef->dwarf_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (ef->dwarf_fd < 0) {
			err = -errno;
			goto cleanup;
		}
	}
	*out = ef;
	ef = NULL;
cleanup:
	elf_file__free(ef);
	return err;
}

int elf_file__open_mem(struct elf_file **out, const void *image, size_t size)
{
	struct elf_file *ef = alloc_file();
	const struct elf_file_opts opts = {.debug_dir = ""};
	char *copy = malloc(size ? size : 1);
	Elf *elf = NULL;
	int err;

	if (!ef || !copy) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(copy, image, size);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, size);
	if (!elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = load_elf(ef, elf, NULL, &opts);
	if (err)
		goto cleanup;
	*out = ef;
	ef = NULL;
cleanup:
	if (elf)
		elf_end(elf);
	free(copy);
	elf_file__free(ef);
	return err;
}

void elf_file__free(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->fd >= 0)
		close(ef->fd);
	elf_file__drop_dwarf_fd(ef);
	free(ef->path);
	free(ef->build_id);
	free(ef->segs);
	free(ef->syms);
	free(ef->uniq);
	strarena__release(&ef->names);
	free(ef->debug_path);
	fde_index__release(&ef->fdes);
	free(ef);
}

const char *elf_file__build_id(const struct elf_file *ef)
{
	return ef->build_id;
}

int elf_file__build_id_of(char **out, struct Elf *elf)
{
	struct elf_file probe = {.fd = -1};
	int err = read_build_id(&probe, elf);

	*out = err ? NULL : probe.build_id;
	if (err)
		free(probe.build_id);
	return err;
}

uint16_t elf_file__type(const struct elf_file *ef)
{
	return ef->type;
}

enum elf_file_syms elf_file__syms(const struct elf_file *ef)
{
	return ef->src;
}

const char *elf_file__debug_path(const struct elf_file *ef)
{
	return ef->debug_path;
}

int elf_file__dwarf_fd(const struct elf_file *ef)
{
	return ef->debug_path ? -1 : ef->dwarf_fd;
}

void elf_file__drop_dwarf_fd(struct elf_file *ef)
{
	if (ef->dwarf_fd >= 0)
		close(ef->dwarf_fd);
	ef->dwarf_fd = -1;
}

bool elf_file__has_symbols(const struct elf_file *ef)
{
	return ef->nsyms != 0;
}

size_t elf_file__symbol_count(const struct elf_file *ef)
{
	return ef->nsyms;
}

size_t elf_file__bytes(const struct elf_file *ef)
{
	size_t n = sizeof(*ef) + ef->syms_cap * sizeof(*ef->syms) + ef->names.cap +
		   ef->nsegs * sizeof(*ef->segs);

	if (ef->uniq)
		n += ef->nsyms * sizeof(*ef->uniq);
	n += ef->fdes.n * (sizeof(*ef->fdes.start) + sizeof(*ef->fdes.len));
	if (ef->build_id)
		n += strlen(ef->build_id) + 1;
	if (ef->path)
		n += strlen(ef->path) + 1;
	if (ef->debug_path)
		n += strlen(ef->debug_path) + 1;
	return n;
}

int elf_file__vaddr(const struct elf_file *ef, uint64_t *out, uint64_t addr, uint64_t map_start,
		    uint64_t map_offset)
{
	const struct seg *best = NULL;
	uint64_t off;

	if (addr < map_start)
		return -ENOENT;
	off = addr - map_start + map_offset;
	/* Segments may share a file page; the executable one holds code addresses.  Past the
	 * file contents (.bss) the mapping still follows the segment, up to p_memsz. */
	for (int pass = 0; pass < 2 && !best; pass++) {
		for (size_t i = 0; i < ef->nsegs; i++) {
			const struct seg *s = &ef->segs[i];
			uint64_t len = pass ? s->memsz : s->filesz;

			if (off >= s->offset && off - s->offset < len &&
			    (!best || (s->exec && !best->exec)))
				best = s;
		}
	}
	if (!best)
		return -ENOENT;
	*out = off - best->offset + best->vaddr;
	return 0;
}

int elf_file__file_offset(const struct elf_file *ef, uint64_t *out, uint64_t vaddr)
{
	for (size_t i = 0; i < ef->nsegs; i++) {
		const struct seg *s = &ef->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*out = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

bool elf_file__fde(const struct elf_file *ef, uint64_t vaddr, uint64_t *start)
{
	return fde_index__find(&ef->fdes, vaddr, start);
}

const struct elf_sym *elf_file__lookup(const struct elf_file *ef, uint64_t vaddr)
{
	size_t lo = 0, hi = ef->nuniq;
	const struct sym *s;

	/* Last distinct address <= vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ef->syms[ef->uniq[mid]].pub.addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &ef->syms[ef->uniq[lo - 1]];
	return vaddr - s->pub.addr < s->pub.size ? &s->pub : NULL;
}

/* Among symbols of one name: the default version, then the strongest binding. */
static bool better_by_name(const struct sym *a, const struct sym *b)
{
	if (a->hidden != b->hidden)
		return !a->hidden;
	if (a->bind != b->bind)
		return bind_rank(a->bind) < bind_rank(b->bind);
	return a->sized && !b->sized;
}

int elf_file__find_symbol(const struct elf_file *ef, struct elf_func *out, const char *name)
{
	const struct sym *best = NULL;
	uint64_t off;

	for (size_t i = 0; i < ef->nsyms; i++) {
		const struct sym *s = &ef->syms[i];

		if (s->type == STT_NOTYPE || strcmp(s->pub.name, name))
			continue;
		if (!best || better_by_name(s, best))
			best = s;
	}
	if (!best)
		return -ENOENT;
	if (elf_file__file_offset(ef, &off, best->pub.addr))
		return -ERANGE;
	*out = (struct elf_func){
		.vaddr = best->pub.addr,
		.size = best->sized ? best->pub.size : 0,
		.file_offset = off,
		.ifunc = best->type == STT_GNU_IFUNC,
	};
	return 0;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int elf_file__read_at(const struct elf_file *ef, void *buf, size_t len, uint64_t file_offset)
{
	struct stat st;
	int err, fd;

	if (ef->fd >= 0)
		return pread_all(ef->fd, buf, len, file_offset);
	if (!ef->path)
		return -EBADF;
	err = safe_open__at(&fd, -1, ef->path, 0, SAFE_OPEN_ELF_MAX, &st);
	if (err)
		return err;
	/* A package upgrade replaces the file: its bytes would not match our offsets. */
	if (st.st_dev != ef->dev || st.st_ino != ef->ino) {
		err = -ESTALE;
		goto cleanup;
	}
	err = pread_all(fd, buf, len, file_offset);
cleanup:
	close(fd);
	return err;
}
