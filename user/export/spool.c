// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/spool.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/push.h"
#include "proc/safe_open.h"
#include "util/log.h"

#define SPOOL_MAGIC	 "bpftrace-prof push spool 1\n"
#define SPOOL_HEADER_MAX (64 << 10) /* a spool file's metadata */
#define SPOOL_DATA_MAX	 (64 << 20) /* a profile read back from the spool */
#define SPOOL_MAX_LABELS 64

struct spool {
	struct spool_opts o;
	int dfd; /* <dir>/spool */
	char *path;
	uint64_t files, bytes;
	uint32_t seq;
	bool logged_full;
	uint64_t aged_out, unreadable;
};

void spool_rec__clear(struct spool_rec *r)
{
	for (uint32_t i = 0; i < r->nlabels; i++) {
		free((char *)r->labels[i].name);
		free((char *)r->labels[i].value);
	}
	free(r->labels);
	free(r->name);
	free(r->data);
	r->labels = NULL;
	r->name = NULL;
	r->data = NULL;
	r->nlabels = 0;
}

static void spool_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c == '%' || c == 0x7f)
			fprintf(f, "%%%02x", c);
		else
			fputc(c, f);
	}
}

static int spool_header(const struct spool_rec *r, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);

	if (!f)
		return -ENOMEM;
	fputs(SPOOL_MAGIC, f);
	fprintf(f, "id %s\nname ", r->id);
	spool_escape(f, r->name);
	fprintf(f, "\nfrom %" PRId64 "\nuntil %" PRId64 "\n", r->from_ns, r->until_ns);
	for (uint32_t i = 0; i < r->nlabels; i++) {
		fputs("label ", f);
		spool_escape(f, r->labels[i].name);
		fputc(' ', f);
		spool_escape(f, r->labels[i].value);
		fputc('\n', f);
	}
	fprintf(f, "data %zu\n", r->len);
	if (fclose(f) || !*out) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *b = buf;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

int spool__write(struct spool *s, const struct spool_rec *r)
{
	char tmp[64], name[SPOOL_NAME_LEN], *hdr = NULL;
	size_t hlen = 0;
	int fd = -1, err;

	err = spool_header(r, &hdr, &hlen);
	if (err)
		return err;
	if (s->files + 1 > s->o.max_files || s->bytes + hlen + r->len > s->o.max_bytes) {
		if (!s->logged_full)
			pr_warn("push: spool %s full (%" PRIu64 " files, %" PRIu64
				" bytes): dropping profiles\n",
				s->path, s->files, s->bytes);
		s->logged_full = true;
		err = -ENOSPC;
		goto cleanup;
	}
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%u", (int)getpid(), ++s->seq);
	err = safe_open__create(&fd, s->dfd, tmp);
	if (err)
		goto cleanup;
	err = write_all(fd, hdr, hlen);
	if (!err)
		err = write_all(fd, r->data, r->len);
	if (!err && fdatasync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	for (int attempt = 0; !err; attempt++) {
		/* The data's start time first, so names sort oldest first. */
		snprintf(name, sizeof(name), "%019" PRId64 "-%d-%u.spool",
			 r->from_ns > 0 ? r->from_ns : 0, (int)getpid(), ++s->seq);
		if (!renameat2(s->dfd, tmp, s->dfd, name, RENAME_NOREPLACE))
			break;
		err = -errno;
		if (err == -EEXIST && attempt < 8)
			err = 0;
	}
	if (err) {
		unlinkat(s->dfd, tmp, 0);
	} else {
		/* The rename is durable once the directory is: without this a crash can lose a
		 * profile counted as spooled.  Failing, the file is in place all the same. */
		if (fsync(s->dfd))
			pr_warn("push: cannot sync the spool %s: %s\n", s->path, strerror(errno));
		s->files++;
		s->bytes += hlen + r->len;
	}
cleanup:
	if (err && err != -ENOSPC)
		pr_warn("push: cannot write to the spool %s: %s\n", s->path, strerror(-err));
	free(hdr);
	return err;
}

static void spool_unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			char hex[3] = {s[1], s[2], 0};

			*d++ = (char)strtoul(hex, NULL, 16);
			s += 2;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A spool file back into r (zeroed; cleared by the caller whatever this returns). */
static int spool_parse(struct spool_rec *r, char *buf, size_t len)
{
	char *line, *nl, *end = buf + len;
	bool have_data = false;
	int64_t v;

	if (len < sizeof(SPOOL_MAGIC) - 1 || memcmp(buf, SPOOL_MAGIC, sizeof(SPOOL_MAGIC) - 1))
		return -EINVAL;
	r->labels = calloc(SPOOL_MAX_LABELS, sizeof(*r->labels));
	if (!r->labels)
		return -ENOMEM;
	for (line = buf + sizeof(SPOOL_MAGIC) - 1; line < end && !have_data; line = nl + 1) {
		char *arg;

		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl || nl - buf > SPOOL_HEADER_MAX)
			return -EINVAL;
		*nl = 0;
		arg = strchr(line, ' ');
		if (!arg)
			return -EINVAL;
		*arg++ = 0;
		if (!strcmp(line, "id") && strlen(arg) < sizeof(r->id)) {
			strcpy(r->id, arg);
		} else if (!strcmp(line, "name") && !r->name) {
			spool_unescape(arg);
			r->name = strdup(arg);
			if (!r->name)
				return -ENOMEM;
		} else if (!strcmp(line, "from") && !parse_i64(arg, &v)) {
			r->from_ns = v;
		} else if (!strcmp(line, "until") && !parse_i64(arg, &v)) {
			r->until_ns = v;
		} else if (!strcmp(line, "label") && r->nlabels < SPOOL_MAX_LABELS) {
			char *value = strchr(arg, ' ');
			struct push_label *l = &r->labels[r->nlabels];

			if (!value)
				return -EINVAL;
			*value++ = 0;
			spool_unescape(arg);
			spool_unescape(value);
			l->name = strdup(arg);
			l->value = strdup(value);
			r->nlabels++;
			if (!l->name || !l->value)
				return -ENOMEM;
		} else if (!strcmp(line, "data") && !parse_i64(arg, &v)) {
			if (v <= 0 || v != end - (nl + 1))
				return -EINVAL;
			r->len = (size_t)v;
			have_data = true;
		} else {
			return -EINVAL;
		}
	}
	if (!have_data || !r->name || !*r->name)
		return -EINVAL;
	r->data = malloc(r->len);
	if (!r->data)
		return -ENOMEM;
	memcpy(r->data, end - r->len, r->len);
	return 0;
}

static void spool_forget(struct spool *s, uint64_t size)
{
	if (s->files)
		s->files--;
	s->bytes = s->bytes > size ? s->bytes - size : 0;
}

/*
 * Walks the spool: deletes files older than max_age_s (and leftover temporaries of that age),
 * recounts files and bytes, and names the oldest file left ("" when none).
 */
static int spool_scan(struct spool *s, char *oldest)
{
	time_t limit = time(NULL) - (time_t)s->o.max_age_s;
	uint64_t files = 0, bytes = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	oldest[0] = 0;
	fd = openat(s->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		bool tmp = !strncmp(de->d_name, ".tmp-", 5);
		struct stat st;

		if (!tmp && (de->d_name[0] == '.' || n < 7 || n >= SPOOL_NAME_LEN ||
			     strcmp(de->d_name + n - 6, ".spool")))
			continue;
		if (fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtime < limit) {
			if (!unlinkat(s->dfd, de->d_name, 0) && !tmp)
				s->aged_out++;
			continue;
		}
		if (tmp)
			continue;
		files++;
		bytes += (uint64_t)st.st_size;
		if (!oldest[0] || strcmp(de->d_name, oldest) < 0)
			strcpy(oldest, de->d_name);
	}
	closedir(d);
	s->files = files;
	s->bytes = bytes;
	return 0;
}

int spool__read_oldest(struct spool *s, struct spool_rec *r, char *name, uint64_t *size)
{
	char *buf = NULL;
	struct stat st;
	int fd, err;

	err = spool_scan(s, name);
	if (err || !name[0])
		return err;
	fd = openat(s->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		name[0] = 0;
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size > SPOOL_HEADER_MAX + SPOOL_DATA_MAX) {
		err = -EINVAL;
	} else {
		buf = malloc((size_t)st.st_size + 1);
		if (!buf)
			err = -ENOMEM;
		else if (read(fd, buf, (size_t)st.st_size) != st.st_size)
			err = -EIO;
	}
	close(fd);
	if (!err)
		err = spool_parse(r, buf, (size_t)st.st_size);
	free(buf);
	if (err == -ENOMEM) {
		name[0] = 0;
		return err;
	}
	if (err) {
		/* Not ours or damaged: it would block the spool for ever. */
		pr_warn("push: spool file %s/%s unreadable, deleted\n", s->path, name);
		if (!unlinkat(s->dfd, name, 0))
			spool_forget(s, (uint64_t)st.st_size);
		s->unreadable++;
		name[0] = 0;
		return 0;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

void spool__remove(struct spool *s, const char *name, uint64_t size)
{
	if (!unlinkat(s->dfd, name, 0))
		spool_forget(s, size);
}

const char *spool__path(const struct spool *s)
{
	return s->path;
}

uint64_t spool__files(const struct spool *s)
{
	return s->files;
}

void spool__add_stats(const struct spool *s, struct push_stats *out)
{
	out->aged_out += s->aged_out;
	out->dropped += s->unreadable;
}

/* <dir>/spool, ours and not writable by others: our own files are read back from it. */
static int open_dir(struct spool *s, const char *dir)
{
	struct stat st;
	int dfd, err;

	if (mkdir(dir, 0700) && errno != EEXIST)
		goto fail;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		goto fail;
	if (mkdirat(dfd, "spool", 0700) && errno != EEXIST) {
		err = -errno;
		close(dfd);
		errno = -err;
		goto fail;
	}
	s->dfd = openat(dfd, "spool", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = -errno;
	close(dfd);
	if (s->dfd < 0) {
		errno = -err;
		goto fail;
	}
	/* Our own files are read back from here: nobody else may write in it. */
	if (fstat(s->dfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		pr_err("push spool %s/spool is not ours or is writable by others\n", dir);
		return -EPERM;
	}
	if (asprintf(&s->path, "%s/spool", dir) < 0) {
		s->path = NULL;
		return -ENOMEM;
	}
	return 0;
fail:
	err = -errno;
	pr_err("cannot use %s/spool for --push: %s\n", dir, strerror(-err));
	return err;
}

int spool__open(struct spool **out, const char *dir, const struct spool_opts *o)
{
	char oldest[SPOOL_NAME_LEN];
	struct spool *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->dfd = -1;
	err = open_dir(s, dir);
	if (!err)
		err = spool_scan(s, oldest); /* age out, count what a previous run left */
	if (err) {
		spool__free(s);
		return err;
	}
	*out = s;
	return 0;
}

void spool__free(struct spool *s)
{
	if (!s)
		return;
	if (s->dfd >= 0)
		close(s->dfd);
	free(s->path);
	free(s);
}
