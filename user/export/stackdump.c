// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/stackdump.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "util/json.h"
#include "profile/profile.h"
#include "util/escape.h"

static const char *const kind_names[] = {
	[PROFILE_FRAME_KERNEL] = "kernel",
	[PROFILE_FRAME_NATIVE] = "native",
	[PROFILE_FRAME_INTERP] = "python", /* the only interpreter dump walks */
	[PROFILE_FRAME_CUT] = "cut",	   /* the middle of a deep stack: "[N frames cut]" */
};

/* What a frame says besides its name: its source file and line, its object file. */
struct frame_info {
	const char *name, *file, *module;
	int64_t line;
	uint64_t address;
	enum profile_frame_kind kind;
	bool known; /* the address has a function */
};

static void frame_info(struct frame_info *out, const struct profile *p, uint32_t loc_id, char *buf,
		       size_t len)
{
	const struct profile_location *loc = NULL;
	const char *base;

	*out = (struct frame_info){.file = "", .module = ""};
	out->name = profile__location_name(p, loc_id, buf, len);
	out->kind = profile__location_kind(p, loc_id);
	if (!loc_id || loc_id > p->nlocations)
		return;
	loc = &p->locations[loc_id - 1];
	out->address = loc->address;
	out->line = loc->line;
	if (loc->function_id && loc->function_id <= p->nfunctions) {
		const struct profile_function *fn = &p->functions[loc->function_id - 1];

		out->file = fn->file ? fn->file : "";
		out->known = true;
	}
	if (loc->mapping_id && loc->mapping_id <= p->nmappings) {
		const char *file = p->mappings[loc->mapping_id - 1].file;

		base = file ? strrchr(file, '/') : NULL;
		out->module = base ? base + 1 : file ? file : "";
	}
}

/* Names, paths and notes come from the target (comm, thread names, symbols, /proc/PID/exe):
 * escaped on their way to the terminal. */
static void put(FILE *f, const char *s)
{
	escape__write(f, s, strlen(s));
}

static void thread_line(FILE *f, const struct stackdump_thread *t)
{
	fprintf(f, "  Thread %" PRIu32 " \"", t->tid);
	put(f, t->comm ? t->comm : "");
	fputc('"', f);
	if (t->thread_name && *t->thread_name) {
		fputs(" [", f);
		put(f, t->thread_name);
		fputc(']', f);
	}
	fprintf(f, " (%s", t->state);
	if (t->syscall_nr >= 0) {
		if (t->syscall)
			fprintf(f, " in %s", t->syscall);
		else
			fprintf(f, " in system call %" PRId64, t->syscall_nr);
	}
	if (t->gil)
		fprintf(f, ", gil %s", t->gil);
	fputc(')', f);
	if (t->note) {
		fputs(": ", f);
		put(f, t->note);
	}
	fputc('\n', f);
}

int stackdump__write_text(FILE *f, const struct profile *p, const struct stackdump_process *procs,
			  size_t n)
{
	char buf[256];

	for (size_t i = 0; i < n; i++) {
		const struct stackdump_process *pr = &procs[i];

		fprintf(f, "%sProcess %" PRIu32 " (", i ? "\n" : "", pr->pid);
		put(f, pr->name);
		fputc(')', f);
		if (*pr->exe) {
			fputs(": ", f);
			put(f, pr->exe);
		}
		fputc('\n', f);
		for (size_t j = 0; j < pr->nthreads; j++) {
			const struct stackdump_thread *t = &pr->threads[j];

			thread_line(f, t);
			for (uint32_t k = 0; k < t->nlocs; k++) {
				struct frame_info fi;

				frame_info(&fi, p, t->locs[k], buf, sizeof(buf));
				fputs("    ", f);
				put(f, fi.name);
				if (*fi.file) {
					fputs(" (", f);
					put(f, fi.file);
					if (fi.line > 0)
						fprintf(f, ":%" PRId64, fi.line);
					fputc(')', f);
				}
				/* (an unknown address names its object already) */
				if (fi.kind == PROFILE_FRAME_KERNEL) {
					fputs(" [kernel]", f);
				} else if (fi.kind == PROFILE_FRAME_NATIVE && *fi.module &&
					   fi.known) {
					fputs(*fi.module == '[' ? " " : " [", f);
					put(f, fi.module);
					if (*fi.module != '[')
						fputc(']', f);
				}
				fputc('\n', f);
			}
		}
	}
	return ferror(f) ? -EIO : 0;
}

static void json_str(FILE *f, const char *s)
{
	if (!s)
		fputs("null", f);
	else
		json__write_string(f, s, strlen(s));
}

static void json_key(FILE *f, const char *key, const char *value)
{
	json__write_string(f, key, strlen(key));
	fputc(':', f);
	json_str(f, value);
}

static void json_thread(FILE *f, const struct profile *p, const struct stackdump_thread *t)
{
	char buf[256];

	fprintf(f, "{\"tid\":%" PRIu32 ",", t->tid);
	json_key(f, "name", t->comm ? t->comm : "");
	fputc(',', f);
	json_key(f, "thread_name", t->thread_name);
	fputc(',', f);
	json_key(f, "state", t->state);
	fputc(',', f);
	json_key(f, "syscall", t->syscall_nr >= 0 ? t->syscall : NULL);
	fprintf(f, ",\"syscall_nr\":");
	if (t->syscall_nr >= 0)
		fprintf(f, "%" PRId64, t->syscall_nr);
	else
		fputs("null", f);
	fputc(',', f);
	json_key(f, "gil", t->gil);
	fputc(',', f);
	json_key(f, "note", t->note);
	fputs(",\"frames\":[", f);
	for (uint32_t k = 0; k < t->nlocs; k++) {
		struct frame_info fi;

		frame_info(&fi, p, t->locs[k], buf, sizeof(buf));
		fputs(k ? ",{" : "{", f);
		json_key(f, "function", fi.name);
		fputc(',', f);
		json_key(f, "kind", kind_names[fi.kind]);
		fputc(',', f);
		json_key(f, "module", fi.module);
		fputc(',', f);
		json_key(f, "file", fi.file);
		fprintf(f, ",\"line\":%" PRId64 ",\"address\":\"0x%" PRIx64 "\"}", fi.line,
			fi.address);
	}
	fputs("]}", f);
}

int stackdump__write_json(FILE *f, const struct profile *p, const struct stackdump_process *procs,
			  size_t n)
{
	bool first = true;

	fputs("{\"processes\":[", f);
	for (size_t i = 0; i < n; i++) {
		const struct stackdump_process *pr = &procs[i];

		fprintf(f, "%s{\"pid\":%" PRIu32 ",", i ? "," : "", pr->pid);
		json_key(f, "name", pr->name);
		fputc(',', f);
		json_key(f, "exe", pr->exe);
		fputs(",\"threads\":[", f);
		for (size_t j = 0; j < pr->nthreads; j++) {
			if (j)
				fputc(',', f);
			json_thread(f, p, &pr->threads[j]);
		}
		fputs("]}", f);
	}
	fputs("],\"counters\":{", f);
	for (uint32_t i = 0; i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];

		if (!profile_counter__is_drop(c) || !c->value)
			continue;
		if (!first)
			fputc(',', f);
		first = false;
		json__write_string(f, c->name, strlen(c->name));
		fprintf(f, ":%" PRIu64, c->value);
	}
	fputs("}}\n", f);
	return ferror(f) ? -EIO : 0;
}
