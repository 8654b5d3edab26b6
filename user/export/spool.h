/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --push's spool: the profiles that could not be sent yet, on disk in <dir>/spool/ (0700, ours
 * alone), one file per profile written atomically (a 0600 temporary created O_EXCL|O_NOFOLLOW,
 * synced, renamed never over an existing name, the directory synced), named by the profile's
 * start time so that names sort oldest first, bounded in files and bytes, and deleted unsent
 * once older than max_age_s.  Read back oldest first, every length checked: the files are our
 * own format, but in a directory on disk.  Sending is export/push.h's.
 */
#ifndef PROF_SPOOL_H
#define PROF_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_NAME_LEN 64 /* a spool file's name, NUL included */

struct push_label;
struct spool;

/* One profile as push queues, spools and sends it. */
struct spool_rec {
	char *name;		   /* __name__ */
	struct push_label *labels; /* owned strings */
	uint32_t nlabels;
	int64_t from_ns, until_ns;
	uint8_t *data; /* gzip-compressed pprof */
	size_t len;
	char id[37]; /* RawSample.ID: the same on every retry; "" when a spool file had none */
};

/* Frees what r owns, not r. */
void spool_rec__clear(struct spool_rec *r);

struct spool_opts {
	unsigned max_files;
	uint64_t max_bytes;
	unsigned max_age_s;
};

/*
 * Opens <dir>/spool (dir and it created 0700 if missing), refuses one that is not ours or is
 * writable by others, deletes what is older than max_age_s and counts what a previous run left.
 * One line on stderr on failure; 0 or -errno.
 */
int spool__open(struct spool **out, const char *dir, const struct spool_opts *o);
/* NULL is a no-op. */
void spool__free(struct spool *s);
/* "<dir>/spool", for messages. */
const char *spool__path(const struct spool *s);
/* The files in the spool, as last counted. */
uint64_t spool__files(const struct spool *s);
/* r as one more file: 0, -ENOSPC when full (warned once), or -errno (warned). */
int spool__write(struct spool *s, const struct spool_rec *r);
/*
 * Ages the spool out, then reads its oldest file into *r (zeroed by the caller, who clears it),
 * its name into name[SPOOL_NAME_LEN] and its size into *size.  name is "" when there is none,
 * or when the oldest was unreadable (deleted and counted: it would block the spool for ever).
 * 0 or -errno.
 */
int spool__read_oldest(struct spool *s, struct spool_rec *r, char *name, uint64_t *size);
/* Deletes a file read back (sent, or refused for good). */
void spool__remove(struct spool *s, const char *name, uint64_t size);
struct push_stats;
/* What the spool lost by itself, added to out: files aged out (aged_out), unreadable files
 * deleted (dropped). */
void spool__add_stats(const struct spool *s, struct push_stats *out);

#endif /* PROF_SPOOL_H */
