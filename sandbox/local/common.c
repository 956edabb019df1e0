// Small helpers shared by the zygote and init: framing messages to the
// host, reading the request, making files, and failing closed.

#include "internal.h"

int result_fd = 3;

/* transfer reads n bytes from fd into p, or writes the n bytes at p to
 * fd, through short transfers and EINTR; it returns -1 when one fails or
 * (reading) the input ends first. */
static int transfer(int fd, char *p, size_t n, int writing) {
	while (n > 0) {
		ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int write_full(int fd, const void *p, size_t n) {
	return transfer(fd, (char *)p, n, 1); /* write(2) does not change it */
}

int read_full(int fd, void *p, size_t n) {
	return transfer(fd, p, n, 0);
}

void write_all(int fd, const void *p, size_t n) {
	if (write_full(fd, p, n) < 0)
		_exit(3);
}

void send_header(uint32_t type, uint64_t len) {
	char h[12];
	memcpy(h, &type, 4);
	memcpy(h + 4, &len, 8);
	write_all(result_fd, h, sizeof h);
}

void send_msg(uint32_t type, const void *p, uint64_t len) {
	send_header(type, len);
	if (len > 0)
		write_all(result_fd, p, len);
}

void fail(const char *fmt, ...) {
	char buf[1024];
	int err = errno;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	if (err)
		n += snprintf(buf + n, sizeof buf - (size_t)n, ": %s", strerror(err));
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	send_msg(R_ERR, buf, (uint64_t)n);
	send_msg(R_END, NULL, 0);
	_exit(0);
}


// Messages of at least BIG_MSG bytes (a stateful run's state, large input
// files) live in a mapping of their own, which release_msg unmaps at once:
// given back to the kernel whatever the allocator would do with a free
// (AddressSanitizer's allocator keeps freed memory in quarantine, and init
// would hold a 190 MiB state twice within the run's memory limit).
#define BIG_MSG (1ULL << 20)

static char *msg_alloc(uint64_t n) {
	if (n < BIG_MSG)
		return malloc(n);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void release_msg(char *data, uint64_t len) {
	if (len + 1 < BIG_MSG)
		free(data);
	else
		munmap(data, len + 1);
}

void read_msg(struct msg *m) {
	char h[12];
	errno = 0;
	if (read_full(0, h, sizeof h) < 0)
		fail("read request");
	memcpy(&m->type, h, 4);
	memcpy(&m->len, h + 4, 8);
	if (m->len > (1ULL << 34))
		failx("request message too large");
	m->data = msg_alloc(m->len + 1);
	if (!m->data)
		fail("read request");
	if (m->len > 0 && read_full(0, m->data, m->len) < 0)
		fail("read request");
	m->data[m->len] = 0;
}

uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* mkdir_prefix makes the directory named by the first n bytes of path,
 * and its parents. */
static int mkdir_prefix(const char *path, size_t n, mode_t mode) {
	char tmp[4096];
	if (n == 0 || n >= sizeof tmp) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(tmp, path, n);
	tmp[n] = 0;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int mkdir_p(const char *path, mode_t mode) {
	return mkdir_prefix(path, strlen(path), mode);
}

int mkdir_parent(const char *path) {
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return 0;
	return mkdir_prefix(path, (size_t)(slash - path), 0755);
}

void write_file(const char *path, const char *data, uint64_t len, mode_t mode) {
	if (mkdir_parent(path) < 0)
		fail("mkdir for %s", path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		fail("create %s", path);
	if (write_full(fd, data, (size_t)len) < 0)
		fail("write %s", path);
	close(fd);
}

// safe_name reports whether name is a clean relative path (the host checks
// this too).
int safe_name(const char *name) {
	if (!*name || name[0] == '/')
		return 0;
	const char *p = name;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += n;
		if (*p == '/')
			p++;
	}
	return 1;
}

void *grow(void *p, size_t n, size_t size) {
	void *q = realloc(p, n * size);
	if (!q)
		fail("out of memory");
	return q;
}
