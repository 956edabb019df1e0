// The sandbox's zygote and init, in C.
//
// Both run from a constructor, before the Go runtime starts, when the
// binary is executed with argv[0] "sandpiper-sandbox-zygote": a Go process
// costs milliseconds of CPU to start and to stop (the bot binary's package
// initialisation alone: about 8 ms), and a sandbox is created for every
// run. The zygote is started once per Sandbox; for each sandbox it forks
// (clone3, no exec) a child in new namespaces, which becomes the sandbox's
// init: it builds the root file system, waits for its one run, forks the
// program with every privilege dropped, supervises it, and reports.
//
// The Go side (local_linux.go, pool_linux.go, protocol_linux.go) decides
// everything: mounts, environment, limits, the seccomp program. This file
// only carries it out. Messages on the pipes are framed as a 32-bit type
// and a 64-bit length, little-endian (host byte order: same machine).

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

// ---------- small helpers ----------

static int result_fd = 3;

static void write_all(int fd, const void *p, size_t n) {
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		c += w;
		n -= (size_t)w;
	}
}

static void send_header(uint32_t type, uint64_t len) {
	char h[12];
	memcpy(h, &type, 4);
	memcpy(h + 4, &len, 8);
	write_all(result_fd, h, sizeof h);
}

static void send_msg(uint32_t type, const void *p, uint64_t len) {
	send_header(type, len);
	if (len > 0)
		write_all(result_fd, p, len);
}

// fail reports a machinery failure to the host and ends init.
static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
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

// failx is fail for a failure that no errno explains.
#define failx(...)         \
	do {               \
		errno = 0; \
		fail(__VA_ARGS__); \
	} while (0)

static int read_full(int fd, void *p, size_t n) {
	char *c = p;
	while (n > 0) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

struct msg {
	uint32_t type;
	uint64_t len;
	char *data; // NUL-terminated copy
};

static void read_msg(struct msg *m) {
	char h[12];
	errno = 0;
	if (read_full(0, h, sizeof h) < 0)
		fail("read request");
	memcpy(&m->type, h, 4);
	memcpy(&m->len, h + 4, 8);
	if (m->len > (1ULL << 34))
		failx("request message too large");
	m->data = malloc(m->len + 1);
	if (!m->data)
		fail("read request");
	if (m->len > 0 && read_full(0, m->data, m->len) < 0)
		fail("read request");
	m->data[m->len] = 0;
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int mkdir_p(const char *path, mode_t mode) {
	char tmp[4096];
	size_t n = strlen(path);
	if (n >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, n + 1);
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

static int mkdir_parent(const char *path) {
	char tmp[4096];
	size_t n = strlen(path);
	if (n >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, n + 1);
	char *slash = strrchr(tmp, '/');
	if (!slash || slash == tmp)
		return 0;
	*slash = 0;
	return mkdir_p(tmp, 0755);
}

static void write_file(const char *path, const char *data, uint64_t len, mode_t mode) {
	if (mkdir_parent(path) < 0)
		fail("mkdir for %s", path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		fail("create %s", path);
	const char *c = data;
	while (len > 0) {
		ssize_t w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			fail("write %s", path);
		c += w;
		len -= (uint64_t)w;
	}
	close(fd);
}

// safe_name reports whether name is a clean relative path (the host checks
// this too).
static int safe_name(const char *name) {
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

// ---------- the request ----------

struct mount_spec {
	uint32_t kind, is_file;
	uint64_t attr;
	char *target, *link, *source;
};

struct file_spec {
	char *name;
	char *data;
	uint64_t len;
};

static struct {
	char *python;
	char **env;
	size_t nenv;
	struct mount_spec *mounts;
	size_t nmounts;
	struct file_spec *etc, *tmp;
	size_t netc, ntmp;
	uint64_t disk;
	uint32_t ncgroups;
	struct sock_filter *filter;
	size_t nfilter;
} setup;

static struct {
	char *code;
	struct file_spec *files;
	size_t nfiles;
	struct limits lim;
} run;

static void *grow(void *p, size_t n, size_t size) {
	void *q = realloc(p, n * size);
	if (!q)
		fail("out of memory");
	return q;
}

// split_file parses "name\0data".
static struct file_spec split_file(struct msg *m) {
	struct file_spec f;
	size_t n = strnlen(m->data, m->len);
	if (n == m->len)
		failx("file message without a name");
	f.name = m->data;
	f.data = m->data + n + 1;
	f.len = m->len - n - 1;
	return f;
}

static void read_setup(void) {
	for (;;) {
		struct msg m;
		read_msg(&m);
		switch (m.type) {
		case M_PYTHON:
			setup.python = m.data;
			break;
		case M_ENV:
			setup.env = grow(setup.env, setup.nenv + 2, sizeof(char *));
			setup.env[setup.nenv++] = m.data;
			setup.env[setup.nenv] = NULL;
			break;
		case M_MOUNT: {
			struct mount_spec s;
			if (m.len < 16)
				failx("short mount message");
			memcpy(&s.kind, m.data, 4);
			memcpy(&s.is_file, m.data + 4, 4);
			memcpy(&s.attr, m.data + 8, 8);
			char *p = m.data + 16, *end = m.data + m.len;
			char **fields[3] = {&s.target, &s.link, &s.source};
			for (int i = 0; i < 3; i++) {
				if (p > end)
					failx("short mount message");
				*fields[i] = p;
				p += strnlen(p, (size_t)(end - p)) + 1;
			}
			setup.mounts = grow(setup.mounts, setup.nmounts + 1, sizeof s);
			setup.mounts[setup.nmounts++] = s;
			break;
		}
		case M_ETC:
			setup.etc = grow(setup.etc, setup.netc + 1, sizeof(struct file_spec));
			setup.etc[setup.netc++] = split_file(&m);
			break;
		case M_TMP:
			setup.tmp = grow(setup.tmp, setup.ntmp + 1, sizeof(struct file_spec));
			setup.tmp[setup.ntmp++] = split_file(&m);
			break;
		case M_DISK:
			if (m.len != 8)
				failx("bad disk message");
			memcpy(&setup.disk, m.data, 8);
			break;
		case M_CGROUPS:
			if (m.len != 4)
				failx("bad cgroups message");
			memcpy(&setup.ncgroups, m.data, 4);
			break;
		case M_SECCOMP:
			if (m.len == 0 || m.len % sizeof(struct sock_filter) != 0)
				failx("bad seccomp program");
			setup.filter = (struct sock_filter *)m.data;
			setup.nfilter = m.len / sizeof(struct sock_filter);
			break;
		case M_SETUP_END:
			if (!setup.python || !setup.filter || setup.disk == 0)
				failx("incomplete setup");
			return;
		default:
			failx("unexpected message %u in setup", m.type);
		}
	}
}

static void read_run(void) {
	for (;;) {
		struct msg m;
		read_msg(&m);
		switch (m.type) {
		case M_CODE:
			run.code = m.data;
			break;
		case M_FILE:
			run.files = grow(run.files, run.nfiles + 1, sizeof(struct file_spec));
			run.files[run.nfiles++] = split_file(&m);
			break;
		case M_LIMITS:
			if (m.len != sizeof run.lim)
				failx("bad limits message");
			memcpy(&run.lim, m.data, sizeof run.lim);
			break;
		case M_RUN_END:
			if (!run.code || run.lim.timeout_ns == 0)
				failx("incomplete run");
			return;
		default:
			failx("unexpected message %u in run", m.type);
		}
	}
}

// ---------- building the root ----------

#define NEWROOT "/tmp" // a tmpfs in init's own mount namespace covers it
#define WORK "/mnt"    // after the pivot: /mnt/data, /tmp and /dev/shm live here

static int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags) {
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr) {
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof *attr);
}

static void path_in_root(char *buf, size_t size, const char *p) {
	if ((size_t)snprintf(buf, size, "%s%s", NEWROOT, p) >= size) {
		errno = ENAMETOOLONG;
		fail("path %s", p);
	}
}

static void build_root(void) {
	char target[4096], src[4096];
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make mounts private");
	if (mount("sandbox", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") < 0)
		fail("mount root tmpfs");
	int fd = FIRST_MOUNT_FD;
	for (size_t i = 0; i < setup.nmounts; i++) {
		struct mount_spec *m = &setup.mounts[i];
		path_in_root(target, sizeof target, m->target);
		switch (m->kind) {
		case MOUNT_DIR:
			if (mkdir_p(target, 0755) < 0)
				fail("mkdir %s", m->target);
			break;
		case MOUNT_SYMLINK:
			if (mkdir_parent(target) < 0 || symlink(m->link, target) < 0)
				fail("symlink %s", m->target);
			break;
		case MOUNT_TREE:
		case MOUNT_BIND:
			if (mkdir_parent(target) < 0)
				fail("mkdir for %s", m->target);
			if (m->is_file) {
				int f = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
				if (f < 0)
					fail("create %s", m->target);
				close(f);
			} else if (mkdir(target, 0755) < 0 && errno != EEXIST) {
				fail("mkdir %s", m->target);
			}
			if (m->kind == MOUNT_TREE) {
				if (sys_move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
					fail("mount %s", m->target);
				close(fd);
				fd++;
			} else {
				if (mount(m->source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
					fail("bind %s", m->source);
				struct mount_attr attr = {.attr_set = m->attr};
				if (sys_mount_setattr(AT_FDCWD, target, AT_RECURSIVE, &attr) < 0)
					fail("lock %s", m->target);
			}
			break;
		default:
			failx("unknown mount kind %u", m->kind);
		}
	}
	// The cgroup.procs files follow the trees: init joins the run's
	// cgroup now, off the run's path (a migration costs RCU grace
	// periods), and the program inherits it at the fork.
	for (uint32_t i = 0; i < setup.ncgroups; i++, fd++) {
		if (write(fd, "0", 1) != 1)
			fail("join cgroup");
		close(fd);
	}
	for (size_t i = 0; i < setup.netc; i++) {
		if (!safe_name(setup.etc[i].name))
			failx("bad /etc file name");
		snprintf(src, sizeof src, "/etc/%s", setup.etc[i].name);
		path_in_root(target, sizeof target, src);
		write_file(target, setup.etc[i].data, setup.etc[i].len, 0644);
	}

	// The writable part: one tmpfs for /mnt/data, /tmp and /dev/shm, so
	// that the disk limit bounds them all together.
	path_in_root(target, sizeof target, WORK);
	if (mkdir_p(target, 0755) < 0)
		fail("mkdir %s", WORK);
	char opts[128];
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=16384,mode=0755", (unsigned long long)setup.disk);
	if (mount("sandbox-work", target, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		fail("mount work tmpfs");
	static const struct {
		const char *name;
		mode_t mode;
		const char *bind;
	} dirs[] = {{"data", 0755, NULL}, {"tmp", 01777, "/tmp"}, {"shm", 01777, "/dev/shm"}};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(src, sizeof src, "%s%s/%s", NEWROOT, WORK, dirs[i].name);
		if (mkdir(src, dirs[i].mode) < 0 || chmod(src, dirs[i].mode) < 0)
			fail("mkdir %s", src);
		if (!dirs[i].bind)
			continue;
		path_in_root(target, sizeof target, dirs[i].bind);
		if (mkdir_p(target, 0755) < 0)
			fail("mkdir %s", dirs[i].bind);
		if (mount(src, target, NULL, MS_BIND, NULL) < 0)
			fail("bind %s", dirs[i].bind);
	}
	for (size_t i = 0; i < setup.ntmp; i++) {
		if (!safe_name(setup.tmp[i].name))
			failx("bad /tmp file name");
		snprintf(src, sizeof src, "%s%s/tmp/%s", NEWROOT, WORK, setup.tmp[i].name);
		write_file(src, setup.tmp[i].data, setup.tmp[i].len, 0644);
	}

	// A fresh /proc for the new PID namespace.
	path_in_root(target, sizeof target, "/proc");
	if (mkdir_p(target, 0555) < 0)
		fail("mkdir /proc");
	if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("mount /proc");
	// No user namespaces inside: creating one needs no privilege and would
	// hand the program a fresh set of capabilities to probe the kernel with.
	path_in_root(target, sizeof target, "/proc/sys/user/max_user_namespaces");
	int f = open(target, O_WRONLY | O_CLOEXEC);
	if (f < 0 || write(f, "0", 1) != 1)
		fail("disable nested user namespaces");
	close(f);
	static const char *links[][2] = {
		{"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"},
	};
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		path_in_root(target, sizeof target, links[i][1]);
		if (symlink(links[i][0], target) < 0)
			fail("symlink %s", links[i][1]);
	}
	if (sethostname("sandbox", 7) < 0)
		fail("sethostname");
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detached unmount then drops every host mount from this namespace.
	if (chdir(NEWROOT) < 0)
		fail("chdir");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		fail("pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		fail("unmount old root");
	if (chdir("/") < 0)
		fail("chdir /");
	if (mount("", "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		fail("make root read-only");
}

// ---------- the program's lock-down (in the forked child) ----------

static int landlock_abi(void) {
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v < 0 ? 0 : (int)v;
}

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_WRITE                                                                                     \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |        \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | (1ULL << 13) /* REFER */ |          \
	 (1ULL << 14) /* TRUNCATE */)
#define FS_ALL (FS_READ | FS_WRITE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK | (1ULL << 15) /* IOCTL_DEV */)

// Landlock: read and execute anything in the (read-only) root, write only
// under the writable directories, no TCP, no abstract UNIX sockets or
// signals outside the sandbox. As far as the kernel's ABI allows.
static int restrict_landlock(void) {
	int abi = landlock_abi();
	if (abi <= 0)
		return 0; // not in this kernel: the mount namespace still holds
	uint64_t handled = FS_ALL;
	if (abi < 5)
		handled &= ~(1ULL << 15);
	if (abi < 3)
		handled &= ~(1ULL << 14);
	if (abi < 2)
		handled &= ~(1ULL << 13);
	struct {
		uint64_t fs, net, scoped;
	} attr = {handled, 0, 0};
	size_t size = 8;
	if (abi >= 4) {
		attr.net = 1 /* BIND_TCP */ | 2 /* CONNECT_TCP */;
		size = 16;
	}
	if (abi >= 6) {
		attr.scoped = 1 /* ABSTRACT_UNIX_SOCKET */ | 2 /* SIGNAL */;
		size = 24;
	}
	int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rfd < 0)
		return -1;
	static const struct {
		const char *path;
		uint64_t access;
	} rules[] = {
		{"/", FS_READ},
		{"/mnt/data", FS_READ | FS_WRITE},
		{"/tmp", FS_READ | FS_WRITE},
		{"/dev/shm", FS_READ | FS_WRITE},
		{"/dev/null", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE},
		{"/dev/zero", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE},
		{"/dev/random", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE},
		{"/dev/urandom", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE},
	};
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		int fd = open(rules[i].path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			return -1;
		struct landlock_path_beneath_attr pb = {.allowed_access = rules[i].access & handled, .parent_fd = fd};
		if (syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			return -1;
		close(fd);
	}
	if (syscall(SYS_landlock_restrict_self, rfd, 0) < 0)
		return -1;
	close(rfd);
	return 0;
}

static void set_limit(int res, uint64_t soft, uint64_t hard) {
	struct rlimit r = {.rlim_cur = soft, .rlim_max = hard};
	setrlimit(res, &r);
}

// child runs in the forked program process: it drops everything and
// execs Python. On failure it reports errno on errfd.
static void child(int errfd) __attribute__((noreturn));
static void child(int errfd) {
	const char *what = "";
	struct limits *l = &run.lim;
	uint64_t cpu = (l->cputime_ns + 999999999ULL) / 1000000000ULL;
	set_limit(RLIMIT_CPU, cpu, cpu + 1);
	set_limit(RLIMIT_FSIZE, l->disk, l->disk);
	set_limit(RLIMIT_NOFILE, l->open_files, l->open_files);
	// init runs as the same user and counts here too. With a pids cgroup
	// that is the limit (and says it was hit); this one backs it up.
	uint64_t nproc = l->processes + (setup.ncgroups ? 8 : 1);
	set_limit(RLIMIT_NPROC, nproc, nproc);
	set_limit(RLIMIT_CORE, 0, 0);
	set_limit(RLIMIT_MEMLOCK, 64 << 10, 64 << 10);
	// Without a memory cgroup, bound the program's private memory (heap,
	// anonymous mappings, thread stacks). Not RLIMIT_AS: the address space
	// also counts shared libraries and reservations (numpy, pandas and
	// scipy reserve 300 MB of it), and OpenBLAS spins forever when a
	// thread's buffer cannot be mapped.
	if (setup.ncgroups == 0)
		set_limit(RLIMIT_DATA, l->memory, l->memory);

	setsid();
	// init closed its stdin (the request pipe), so /dev/null may well land
	// on descriptor 0 already.
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || (devnull == 0 ? fcntl(0, F_SETFD, 0) : dup2(devnull, 0)) < 0) {
		what = "stdin";
		goto out;
	}
	if (chdir("/mnt/data") < 0) {
		what = "chdir";
		goto out;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		what = "no_new_privs";
		goto out;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
		what = "ambient capabilities";
		goto out;
	}
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) {
			what = "bounding capabilities";
			goto out;
		}
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0) {
		what = "capabilities";
		goto out;
	}
	if (restrict_landlock() < 0) {
		what = "landlock";
		goto out;
	}
	struct sock_fprog prog = {.len = (unsigned short)setup.nfilter, .filter = setup.filter};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		what = "seccomp";
		goto out;
	}
	char *argv[] = {"python3", "-c", run.code, NULL};
	execve(setup.python, argv, setup.env);
	what = "exec";
out:;
	int e = errno;
	char buf[64];
	memcpy(buf, &e, 4);
	size_t n = strlen(what);
	if (n > sizeof buf - 4)
		n = sizeof buf - 4;
	memcpy(buf + 4, what, n);
	if (write(errfd, buf, 4 + n) < 0) {
	}
	_exit(127);
}

// ---------- collecting the output files ----------

struct found {
	char *name; // relative to /mnt/data
};

static struct found *found;
static size_t nfound, capfound;
static uint64_t max_found = 100000;

static void omit(const char *name, const char *why) {
	char buf[4200];
	int n = snprintf(buf, sizeof buf, "%s (%s)", name, why);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	send_msg(R_OMIT, buf, (uint64_t)n);
}

// walk lists the regular files under dirfd (which is rel), depth-first;
// it never follows a symbolic link.
static void walk(int dirfd, const char *rel, int depth) {
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= sizeof path)
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth >= 32) {
				omit(path, "too deep");
				continue;
			}
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk(sub, path, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			if (nfound >= max_found)
				continue;
			if (nfound == capfound) {
				capfound = capfound ? capfound * 2 : 64;
				found = grow(found, capfound, sizeof *found);
			}
			found[nfound].name = strdup(path);
			if (!found[nfound].name)
				fail("out of memory");
			nfound++;
		} else {
			omit(path, "not a regular file");
		}
	}
	closedir(d);
}

static int by_name(const void *a, const void *b) {
	return strcmp(((const struct found *)a)->name, ((const struct found *)b)->name);
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

static void collect(void) {
	int root = open("/mnt/data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return;
	int dup_root = fcntl(root, F_DUPFD_CLOEXEC, 0);
	if (dup_root < 0)
		return;
	walk(dup_root, "", 0);
	qsort(found, nfound, sizeof *found, by_name);
	uint64_t budget = run.lim.disk, sent = 0;
	for (size_t i = 0; i < nfound; i++) {
		const char *name = found[i].name;
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
		close(fd);
	}
	close(root);
}

// ---------- init ----------

static void init_main(void) __attribute__((noreturn));
static void init_main(void) {
	// The zygote's SIGCHLD handler is not init's.
	signal(SIGCHLD, SIG_DFL);
	// Only 0, 1, 2 may reach the program: every other descriptor init
	// was given (the result pipe, mount trees, cgroup files) stays init's.
	syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
	// /proc/1 must not be readable by the program, which has the same uid.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// As the PID namespace's init, it gets no signal from inside that it
	// has no handler for; SIGCHLD is taken with sigtimedwait.
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);

	read_setup();
	build_root();
	read_run(); // ready: this waits for the one run
	close(0);
	uint64_t start = now_ns();
	struct limits *l = &run.lim;
	if (l->disk != setup.disk) {
		char opts[64];
		snprintf(opts, sizeof opts, "size=%llu", (unsigned long long)l->disk);
		if (mount("", WORK, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			fail("resize %s", WORK);
	}
	for (size_t i = 0; i < run.nfiles; i++) {
		if (!safe_name(run.files[i].name))
			failx("input file name %s is not a clean relative path", run.files[i].name);
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "/mnt/data/%s", run.files[i].name) >= sizeof path) {
			errno = ENAMETOOLONG;
			fail("input %s", run.files[i].name);
		}
		write_file(path, run.files[i].data, run.files[i].len, 0644);
	}

	int errp[2];
	if (pipe2(errp, O_CLOEXEC) < 0)
		fail("pipe");
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		close(errp[0]);
		child(errp[1]);
	}
	close(errp[1]);
	char ebuf[65];
	ssize_t en = read(errp[0], ebuf, sizeof ebuf - 1);
	close(errp[0]);
	if (en >= 4) {
		int e;
		memcpy(&e, ebuf, 4);
		ebuf[en] = 0;
		errno = e;
		// Reap it before reporting.
		waitpid(pid, NULL, 0);
		fail("start %s (%.*s)", setup.python, (int)(en - 4), ebuf + 4);
	}
	uint64_t started = now_ns() - start;

	uint64_t deadline = start + l->timeout_ns;
	int status = 0, timed_out = 0;
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		if (w == pid) {
			status = st;
			break;
		}
		if (w > 0)
			continue; // an orphan reaped
		if (w < 0 && errno != EINTR && errno != ECHILD)
			fail("wait");
		uint64_t now = now_ns();
		struct timespec ts = {0, 50 * 1000 * 1000};
		if (!timed_out) {
			if (now >= deadline) {
				timed_out = 1;
				kill(-1, SIGKILL);
				continue;
			}
			uint64_t left = deadline - now;
			ts.tv_sec = (time_t)(left / 1000000000ULL);
			ts.tv_nsec = (long)(left % 1000000000ULL);
		}
		sigtimedwait(&chld, NULL, &ts);
	}
	uint64_t ended = now_ns() - start;
	// Whatever the program left behind goes with it.
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
	}
	// Every process that held the program's stdout and stderr is gone;
	// with init's own copies closed, the host reads them to the end now.
	close(1);
	close(2);

	struct status_msg sm = {0};
	if (WIFEXITED(status)) {
		sm.exited = 1;
		sm.exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		sm.signal = WTERMSIG(status);
		sm.exit_code = 128 + sm.signal;
	}
	sm.timed_out = timed_out;
	struct statfs sf;
	if (statfs(WORK, &sf) == 0 && (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize < (64 << 10))
		sm.disk_full = 1;
	sm.started_ns = started;
	sm.ended_ns = ended;
	send_msg(R_STATUS, &sm, sizeof sm);
	collect();
	uint64_t reported = now_ns() - start;
	send_msg(R_TIMES, &reported, sizeof reported);
	send_msg(R_END, NULL, 0);
	_exit(0);
}

// ---------- the zygote ----------

// spawn forks a new sandbox init in fresh namespaces with fds as its 0, 1,
// 2, ... and returns a pidfd for it.
static int spawn(uint32_t host_id, int *fds, int nfds, char *err, size_t errsize) {
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0) {
		snprintf(err, errsize, "pipe: %s", strerror(errno));
		return -1;
	}
	int pidfd = -1;
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
		     CLONE_NEWCGROUP | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &args, sizeof args);
	if (pid < 0) {
		snprintf(err, errsize, "clone: %s", strerror(errno));
		close(sync[0]);
		close(sync[1]);
		return -1;
	}
	if (pid == 0) {
		close(sync[1]);
		char c;
		if (read(sync[0], &c, 1) != 1)
			_exit(1); // the zygote could not map our ids
		close(sync[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (setresgid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0)
			_exit(1);
		setgroups(0, NULL); // refused (and needless) when the bot is not root
		if (setresuid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0)
			_exit(1);
		// fds[i] -> i, through descriptors above them all.
		int high[64];
		for (int i = 0; i < nfds; i++) {
			high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 256);
			if (high[i] < 0)
				_exit(1);
		}
		for (int i = 0; i < nfds; i++)
			if (dup2(high[i], i) < 0)
				_exit(1);
		syscall(SYS_close_range, (unsigned)nfds, ~0U, 0);
		result_fd = 3;
		init_main();
	}
	close(sync[0]);
	char path[64], map[64], gmap[64];
	int ok = 1;
	int n = snprintf(map, sizeof map, "%d %u 1\n", SANDBOX_ID, host_id);
	// Asked to map another id than its own (root with CAP_SETUID), the
	// sandbox's group is that unprivileged id too; otherwise the kernel
	// lets a process map only its own uid and group, after denying
	// setgroups.
	int privileged = host_id != (uint32_t)geteuid();
	unsigned host_gid = privileged ? host_id : (unsigned)getegid();
	int gn = snprintf(gmap, sizeof gmap, "%d %u 1\n", SANDBOX_ID, host_gid);
	snprintf(path, sizeof path, "/proc/%ld/uid_map", pid);
	int f = open(path, O_WRONLY | O_CLOEXEC);
	if (f < 0 || write(f, map, (size_t)n) != n)
		ok = 0;
	if (f >= 0)
		close(f);
	if (ok && !privileged) {
		snprintf(path, sizeof path, "/proc/%ld/setgroups", pid);
		f = open(path, O_WRONLY | O_CLOEXEC);
		if (f < 0 || write(f, "deny", 4) != 4)
			ok = 0;
		if (f >= 0)
			close(f);
	}
	if (ok) {
		snprintf(path, sizeof path, "/proc/%ld/gid_map", pid);
		f = open(path, O_WRONLY | O_CLOEXEC);
		if (f < 0 || write(f, gmap, (size_t)gn) != gn)
			ok = 0;
		if (f >= 0)
			close(f);
	}
	if (!ok) {
		snprintf(err, errsize, "map ids: %s", strerror(errno));
		kill((pid_t)pid, SIGKILL);
		close(sync[1]);
		if (pidfd >= 0)
			close(pidfd);
		return -1;
	}
	if (write(sync[1], "x", 1) != 1) {
		snprintf(err, errsize, "start init: %s", strerror(errno));
		close(sync[1]);
		close(pidfd);
		return -1;
	}
	close(sync[1]);
	return pidfd;
}

static void reap(int sig) {
	(void)sig;
	int e = errno;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
	errno = e;
}

static void zygote_main(void) __attribute__((noreturn));
static void zygote_main(void) {
	// The host watches each init through its pidfd; the zygote reaps them
	// (so that their CPU time is accounted to it, and through it to the
	// bot).
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = reap;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	for (;;) {
		uint32_t host_id;
		char cbuf[CMSG_SPACE(sizeof(int) * 64)];
		struct iovec iov = {.iov_base = &host_id, .iov_len = sizeof host_id};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		ssize_t n = recvmsg(3, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0); // the host is gone
		int fds[64], nfds = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k && nfds < 64; i++)
				memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		}
		char err[256] = "";
		int pidfd = -1;
		if (n != sizeof host_id || (mh.msg_flags & MSG_CTRUNC) || nfds < 4)
			snprintf(err, sizeof err, "bad request (%d descriptors)", nfds);
		else
			pidfd = spawn(host_id, fds, nfds, err, sizeof err);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		struct iovec riov = {.iov_base = err, .iov_len = strlen(err) + 1};
		char rbuf[CMSG_SPACE(sizeof(int))];
		struct msghdr rh = {.msg_iov = &riov, .msg_iovlen = 1};
		if (pidfd >= 0) {
			memset(rbuf, 0, sizeof rbuf);
			rh.msg_control = rbuf;
			rh.msg_controllen = sizeof rbuf;
			struct cmsghdr *c = CMSG_FIRSTHDR(&rh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
		}
		while (sendmsg(3, &rh, 0) < 0 && errno == EINTR) {
		}
		if (pidfd >= 0)
			close(pidfd);
	}
}

// The constructor runs before the Go runtime: in a zygote, it never
// returns. (program_invocation_name is argv[0], set by the C library
// before constructors run.)
__attribute__((constructor)) static void sandpiper_sandbox_ctor(void) {
	if (program_invocation_name && strcmp(program_invocation_name, ZYGOTE_ARG0) == 0)
		zygote_main();
}
