// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

int fdpass__send(int sock, const void *msg, size_t len, int fd)
{
	union fd_cmsg u;
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);

		if (n >= 0)
			return (size_t)n == len ? 0 : -EIO;
		if (errno != EINTR)
			return -errno;
	}
}

ssize_t fdpass__recv(int sock, void *msg, size_t len, int *fd)
{
	union fd_cmsg u;
	struct iovec iov = {.iov_base = msg, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u)};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)) && *fd < 0)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	return n;
}
