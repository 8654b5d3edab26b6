// A clean C program for the leak gate (tests/e2e/test_heap.sh): it frees what it allocates, and
// uses the C library's caches that live until exit (locale, the passwd database, stdio's
// buffer, the time zone), which the built-in leak rules suppress.  Exits 0.
#include <locale.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	char *s = strdup("freed");
	time_t t = time(NULL);
	char when[64];

	setlocale(LC_ALL, "");
	if (!getpwuid(getuid()))
		return 1;
	strftime(when, sizeof(when), "%c", localtime(&t));
	printf("%s %d\n", s, strlen(when) > 0);
	free(s);
	return 0;
}
