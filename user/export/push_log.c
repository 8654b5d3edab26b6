// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/push.h"

#include <stdio.h>

#include "util/log.h"

/* One line: what --push did, loud when something did not get through (yet). */
void push__log(const struct push *p)
{
	struct push_stats st;
	char more[256] = "";
	int n = 0;

	push__stats(p, &st);
	/* Refused credentials, profiles that could not be split or encoded, services folded into
	 * "other": said when they happened, counted here too, each only when it happened. */
	if (st.auth_failed)
		n += snprintf(more + n, sizeof(more) - (size_t)n,
			      ", %llu refused for credentials (401/403)",
			      (unsigned long long)st.auth_failed);
	if (st.build_failed && n < (int)sizeof(more))
		n += snprintf(more + n, sizeof(more) - (size_t)n, ", %llu not built",
			      (unsigned long long)st.build_failed);
	if (st.rejected && n < (int)sizeof(more))
		n += snprintf(more + n, sizeof(more) - (size_t)n,
			      ", %llu rejected in a partial success",
			      (unsigned long long)st.rejected);
	if (st.series_folded && n < (int)sizeof(more))
		snprintf(more + n, sizeof(more) - (size_t)n,
			 ", %llu services folded into \"other\"",
			 (unsigned long long)st.series_folded);
	log__printf(st.failed || st.dropped || st.auth_failed || st.build_failed || st.rejected ||
				    st.spooled > st.spool_sent
			    ? LOG_WARN
			    : LOG_INFO,
		    "push: %llu of %llu profiles sent, %llu retries, %llu spooled, %llu sent from "
		    "the spool, %llu aged out, %llu failed, %llu dropped%s; %llu bytes accepted\n",
		    (unsigned long long)st.sent, (unsigned long long)st.submitted,
		    (unsigned long long)st.retried, (unsigned long long)st.spooled,
		    (unsigned long long)st.spool_sent, (unsigned long long)st.aged_out,
		    (unsigned long long)st.failed, (unsigned long long)st.dropped, more,
		    (unsigned long long)st.sent_bytes);
}
