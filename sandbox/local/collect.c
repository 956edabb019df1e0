// Collecting the output files: once every process of the run is gone,
// init reports the regular files the program left in /mnt/data (R_FILE),
// but for the input files it left as they were, within the run's limits
// on their number and size, and says what it left out (R_OMIT, R_CUT).
//
// What collect reports of /mnt/data stays small whatever the program left
// there. run.lim's list_*, path_max and omit_* fields (sandbox.go's Max*,
// set by the host) bound the directory entries looked at, the depth, the
// names kept, the length of a reported path and the R_OMIT messages; what
// they leave out is counted and reported in one R_CUT. A cut listing is a
// result, not a failure.

#include "internal.h"

#define ELLIPSIS "\xe2\x80\xa6" // "…", which ends a cut name
#define OMIT_NAME_MAX 1024        // bound on run.lim.omit_name (omit's buffer)

// path is the entry being looked at, relative to /mnt/data: at most
// path_max bytes of its directory, a slash and a name.
static char path[PATH_MAX + 1 + NAME_MAX + 1];

static struct {
	uint64_t path_max, omit_name; // run.lim's, clamped to the buffers
	char **names;                 // max-heap (by strcmp) of the regular files kept
	size_t n;
	uint64_t entries;           // directory entries looked at
	uint64_t omits, omit_bytes; // R_OMIT messages sent, and their bytes
	uint64_t unlisted;          // entries left out without an R_OMIT
	int stopped;                // the walk stopped at run.lim.list_entries
	int skipped;                // a directory was not looked into
	int cut;                    // a cap cut the listing
} ls;

// cut_name copies name to buf (at least max + 1 bytes, max >= 3), cut to
// at most max bytes and ending in "…" when longer, without splitting a
// UTF-8 sequence (it backs off at most three bytes to where one starts);
// it returns the length.
static size_t cut_name(char *buf, const char *name, size_t max) {
	size_t n = strlen(name);
	if (n <= max) {
		memcpy(buf, name, n + 1);
		return n;
	}
	ls.cut = 1;
	size_t k = max - (sizeof ELLIPSIS - 1);
	for (int i = 0; i < 3 && k > 0 && ((unsigned char)name[k] & 0xC0) == 0x80; i++)
		k--;
	memcpy(buf, name, k);
	memcpy(buf + k, ELLIPSIS, sizeof ELLIPSIS);
	return k + sizeof ELLIPSIS - 1;
}

// omit reports a file left out, and why, as "name (why)" with the name
// cut to omit_name bytes, while the R_OMIT messages are within their caps;
// past them it only counts it.
static void omit(const char *name, const char *why) {
	if (ls.omits >= run.lim.omits) {
		ls.unlisted++;
		ls.cut = 1;
		return;
	}
	char buf[OMIT_NAME_MAX + 128];
	size_t n = cut_name(buf, name, ls.omit_name);
	int w = snprintf(buf + n, sizeof buf - n, " (%s)", why);
	if (w < 0)
		w = 0;
	n += (size_t)w < sizeof buf - n ? (size_t)w : sizeof buf - n - 1;
	if (ls.omit_bytes + n > run.lim.omit_bytes) {
		ls.omits = run.lim.omits; // full: the rest are only counted
		ls.unlisted++;
		ls.cut = 1;
		return;
	}
	ls.omits++;
	ls.omit_bytes += n;
	send_msg(R_OMIT, buf, (uint64_t)n);
}

// sift_down moves the name at i down the heap of names kept to its place.
static void sift_down(size_t i) {
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, top = i;
		if (l < ls.n && strcmp(ls.names[l], ls.names[top]) > 0)
			top = l;
		if (r < ls.n && strcmp(ls.names[r], ls.names[top]) > 0)
			top = r;
		if (top == i)
			return;
		char *t = ls.names[i];
		ls.names[i] = ls.names[top];
		ls.names[top] = t;
		i = top;
	}
}

// keep adds the regular file at path to the names kept: the first
// run.lim.list_names in lexical order. Past that, the greatest is dropped
// and counted.
static void keep(void) {
	size_t max = (size_t)run.lim.list_names;
	if (ls.n < max) {
		if (!ls.names)
			ls.names = grow(NULL, max, sizeof *ls.names);
		size_t i = ls.n++;
		if (!(ls.names[i] = strdup(path)))
			fail("out of memory");
		while (i > 0 && strcmp(ls.names[(i - 1) / 2], ls.names[i]) < 0) {
			char *t = ls.names[i];
			ls.names[i] = ls.names[(i - 1) / 2];
			ls.names[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
		return;
	}
	ls.unlisted++;
	ls.cut = 1;
	if (max == 0 || strcmp(path, ls.names[0]) >= 0)
		return;
	char *s = strdup(path);
	if (!s)
		fail("out of memory");
	free(ls.names[0]);
	ls.names[0] = s;
	sift_down(0);
}

// walk looks at the entries of the directory dirfd, which is path[:len]
// ("" for /mnt/data) at depth levels below it, depth-first and within the
// caps: it keeps regular files, omits the rest, and never follows a
// symbolic link.
static void walk(int dirfd, size_t len, uint64_t depth) {
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (ls.entries >= run.lim.list_entries) {
			ls.stopped = 1;
			ls.cut = 1;
			break;
		}
		ls.entries++;
		size_t nlen = strlen(e->d_name);
		if (nlen > NAME_MAX) // no file system Linux mounts here has them
			continue;
		size_t plen = len + (len > 0) + nlen;
		if (len > 0)
			path[len] = '/';
		memcpy(path + len + (len > 0), e->d_name, nlen + 1);
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (plen > ls.path_max) {
				ls.cut = ls.skipped = 1;
				omit(path, "path too long; not looked into");
			} else if (depth >= run.lim.list_depth) {
				ls.cut = ls.skipped = 1;
				omit(path, "too deep");
			} else {
				int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					walk(sub, plen, depth + 1);
			}
		} else if (S_ISREG(st.st_mode)) {
			if (plen > ls.path_max) {
				ls.cut = 1;
				omit(path, "path too long");
			} else {
				keep();
			}
		} else {
			omit(path, "not a regular file");
		}
	}
	closedir(d);
}

static int by_name(const void *a, const void *b) {
	return strcmp(*(char *const *)a, *(char *const *)b);
}

// same_as_input reports whether the file at fd holds exactly the input
// file of that name.
static int same_as_input(const char *name, int fd, uint64_t size) {
	for (size_t i = 0; i < run.nfiles; i++) {
		if (strcmp(run.files[i].name, name) != 0)
			continue;
		if (run.files[i].len != size)
			return 0;
		char buf[65536];
		uint64_t off = 0;
		while (off < size) {
			ssize_t r = pread(fd, buf, sizeof buf, (off_t)off);
			if (r <= 0)
				return 0;
			if (memcmp(buf, run.files[i].data + off, (size_t)r) != 0)
				return 0;
			off += (uint64_t)r;
		}
		return 1;
	}
	return 0;
}

// send_data writes the size bytes of the file at fd to the host.
static void send_data(int fd, uint64_t size) {
	char buf[65536];
	uint64_t off = 0;
	while (off < size) {
		ssize_t r = pread(fd, buf, sizeof buf, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) { // cannot happen with every process gone; keep the framing
			memset(buf, 0, sizeof buf);
			r = (ssize_t)((size - off) < sizeof buf ? (size - off) : sizeof buf);
		}
		if ((uint64_t)r > size - off)
			r = (ssize_t)(size - off);
		write_all(result_fd, buf, (size_t)r);
		off += (uint64_t)r;
	}
}

// send_state_file sends the regular file name of STATE_DIR as a message of
// type type, if it is there and holds at most max bytes.
static void send_state_file(int dir, const char *name, uint32_t type, uint64_t max) {
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= max) {
		send_header(type, (uint64_t)st.st_size);
		send_data(fd, (uint64_t)st.st_size);
	}
	close(fd);
}

void collect_state(void) {
	int dir = open(STATE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return;
	send_state_file(dir, "report.json", R_STATE_REPORT, STATE_REPORT_MAX);
	send_state_file(dir, "out", R_STATE, run.state_max);
	close(dir);
}

void collect(void) {
	int root = open("/mnt/data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return;
	int dup_root = fcntl(root, F_DUPFD_CLOEXEC, 0);
	if (dup_root < 0)
		return;
	ls.path_max = run.lim.path_max < PATH_MAX ? run.lim.path_max : PATH_MAX;
	ls.omit_name = run.lim.omit_name < 3 ? 3 : run.lim.omit_name > OMIT_NAME_MAX ? OMIT_NAME_MAX : run.lim.omit_name;
	walk(dup_root, 0, 0);
	if (ls.n > 1)
		qsort(ls.names, ls.n, sizeof *ls.names, by_name);
	uint64_t budget = run.lim.disk, sent = 0;
	for (size_t i = 0; i < ls.n; i++) {
		const char *name = ls.names[i];
		int fd = openat(root, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			omit(name, strerror(errno));
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			omit(name, "not a regular file");
			close(fd);
			continue;
		}
		uint64_t size = (uint64_t)st.st_size;
		if (size > budget) {
			omit(name, "too large");
			close(fd);
			continue;
		}
		if (same_as_input(name, fd, size)) {
			close(fd);
			continue;
		}
		if (sent >= run.lim.files) {
			omit(name, "too many files");
			close(fd);
			continue;
		}
		budget -= size;
		sent++;
		size_t nlen = strlen(name);
		send_header(R_FILE, nlen + 1 + size);
		write_all(result_fd, name, nlen + 1);
		send_data(fd, size);
		close(fd);
	}
	close(root);
	if (ls.cut || ls.unlisted) {
		struct cut_msg cm = {.unlisted = ls.unlisted, .stopped = (uint32_t)ls.stopped, .skipped = (uint32_t)ls.skipped};
		send_msg(R_CUT, &cm, sizeof cm);
	}
}
