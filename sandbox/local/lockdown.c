// The program's lock-down, in the process forked by init to become
// Python: limits, no privileges, Landlock, seccomp, then exec.

#include "internal.h"

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

void child_fail(int errfd, const char *what) {
	int e = errno;
	char buf[128];
	memcpy(buf, &e, 4);
	size_t n = strlen(what);
	if (n > sizeof buf - 4)
		n = sizeof buf - 4;
	memcpy(buf + 4, what, n);
	if (write(errfd, buf, 4 + n) < 0) {
	}
	_exit(127);
}

// send_listener passes the seccomp listener to init over errfd (a
// SOCK_SEQPACKET socket): one byte with the descriptor attached.
static int send_listener(int errfd, int listener) {
	char byte = 'L';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &listener, sizeof(int));
	ssize_t n;
	do
		n = sendmsg(errfd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return 0;
	if (n >= 0)
		errno = EIO;
	return -1;
}

// Room over the memory limit, without a memory cgroup, for private
// writable memory (RLIMIT_DATA) and for the address space (RLIMIT_AS) of
// one process; and the bytes of POSIX message queues.
#define DATA_HEADROOM (256ULL << 20)
#define AS_HEADROOM (1ULL << 30)
#define MSGQUEUE_BYTES (64ULL << 10)

// set_limit sets one rlimit, or ends the child naming it.
static void set_limit(int errfd, int res, const char *name, uint64_t soft, uint64_t hard) {
	struct rlimit r = {.rlim_cur = soft, .rlim_max = hard};
	if (setrlimit(res, &r) < 0)
		child_fail(errfd, name);
}

// set_soft sets one rlimit's soft limit, keeping the hard one, or ends the
// child naming it.
static void set_soft(int errfd, int res, const char *name, uint64_t soft) {
	struct rlimit r;
	if (getrlimit(res, &r) < 0)
		child_fail(errfd, name);
	if (soft > r.rlim_max) {
		errno = EPERM;
		child_fail(errfd, name);
	}
	set_limit(errfd, res, name, soft, r.rlim_max);
}

size_t run_rlimits(const struct limits *l, uint64_t cpu_ns, struct rl out[RUN_RLIMITS]) {
	size_t n = 0;
	// CPU time is the process's own, so a warm interpreter's imports do
	// not count against the run's.
	uint64_t cpu = (cpu_ns + l->cputime_ns + 999999999ULL) / 1000000000ULL;
	out[n++] = (struct rl){RLIMIT_CPU, "setrlimit(RLIMIT_CPU)", cpu, cpu + 1};
	// A stateful run's saved state may be larger than the disk limit: its
	// own tmpfs bounds it, and the runner raises the soft limit to the
	// hard one while it saves (sandbox/state.py). The run's other files
	// stay bounded by the work tmpfs's size.
	uint64_t fsize_hard = l->disk;
	if (run.keep_state && run.state_max + STATE_SLACK > fsize_hard)
		fsize_hard = run.state_max + STATE_SLACK;
	out[n++] = (struct rl){RLIMIT_FSIZE, "setrlimit(RLIMIT_FSIZE)", l->disk, fsize_hard};
	out[n++] = (struct rl){RLIMIT_NOFILE, "setrlimit(RLIMIT_NOFILE)", l->open_files, l->open_files};
	// init runs as the same user and counts here too. With a pids cgroup
	// that is the limit (and says it was hit); this one backs it up.
	uint64_t nproc = l->processes + (setup.ncgroups ? 8 : 1);
	out[n++] = (struct rl){RLIMIT_NPROC, "setrlimit(RLIMIT_NPROC)", nproc, nproc};
	// Without a memory cgroup, init's watcher bounds the sandbox's memory
	// as a whole, look by look; these bound each process at once, in
	// between. Both leave room for what is reserved and never used, or
	// shared: numpy, pandas, scipy and matplotlib with one BLAS thread
	// take 380 MB of address space (VmSize), 255 MB of it private and
	// writable (VmData), 125 MB of it used; each thread adds a stack.
	// OpenBLAS spins forever when a thread's buffer cannot be mapped, so
	// the headroom is generous, and BLAS runs one thread.
	if (setup.ncgroups == 0) {
		out[n++] = (struct rl){RLIMIT_DATA, "setrlimit(RLIMIT_DATA)", l->memory + DATA_HEADROOM, l->memory + DATA_HEADROOM};
		out[n++] = (struct rl){RLIMIT_AS, "setrlimit(RLIMIT_AS)", l->memory + AS_HEADROOM, l->memory + AS_HEADROOM};
	}
	return n;
}

void child(int errfd, int warm, const struct limits *l) {
	struct rl rl[RUN_RLIMITS];
	size_t n = run_rlimits(l, 0, rl);
	for (size_t i = 0; i < n; i++) {
		if (warm >= 0)
			set_soft(errfd, rl[i].res, rl[i].name, rl[i].soft);
		else
			set_limit(errfd, rl[i].res, rl[i].name, rl[i].soft, rl[i].hard);
	}
	set_limit(errfd, RLIMIT_CORE, "setrlimit(RLIMIT_CORE)", 0, 0);
	set_limit(errfd, RLIMIT_MEMLOCK, "setrlimit(RLIMIT_MEMLOCK)", 64 << 10, 64 << 10);
	// POSIX message queues hold memory no process maps.
	set_limit(errfd, RLIMIT_MSGQUEUE, "setrlimit(RLIMIT_MSGQUEUE)", MSGQUEUE_BYTES, MSGQUEUE_BYTES);

	if (setsid() < 0)
		child_fail(errfd, "setsid");
	// For a run, init closed its stdin (the request pipe), so /dev/null
	// may well land on descriptor 0 already; a warm interpreter, started
	// before the run, has the request pipe there until dup2.
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || (devnull == 0 ? fcntl(0, F_SETFD, 0) : dup2(devnull, 0)) < 0)
		child_fail(errfd, "stdin");
	if (chdir("/mnt/data") < 0)
		child_fail(errfd, "chdir /mnt/data");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(errfd, "prctl(PR_SET_NO_NEW_PRIVS)");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		child_fail(errfd, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			child_fail(errfd, "prctl(PR_CAPBSET_DROP)");
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		child_fail(errfd, "capset");
	if (restrict_landlock() < 0)
		child_fail(errfd, "landlock");
	// The filter hands refused socket families to init, over a listener
	// that init must hold before the program starts: without it the
	// refusals would go uncounted (the kernel then answers ENOSYS).
	struct sock_fprog prog = {.len = (unsigned short)setup.nfilter, .filter = setup.filter};
	int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (listener < 0)
		child_fail(errfd, "seccomp");
	if (send_listener(errfd, listener) < 0)
		child_fail(errfd, "pass the seccomp listener");
	close(listener);
	char *argv[] = {"python3", "-c", run.code, NULL, NULL};
	if (setup.runner && warm < 0) {
		// The runner runs the code as -c would, with the state when the
		// run keeps one, and serves the chart helper.
		argv[2] = setup.runner;
		argv[3] = run.code;
	}
	if (warm >= 0) {
		// The bootstrap reads the run's code from descriptor 3 and
		// closes it before running it.
		if (dup2(warm, 3) < 0)
			child_fail(errfd, "dup2 the warm interpreter's socket");
		argv[2] = setup.bootstrap;
	}
	execve(setup.python, argv, setup.env);
	child_fail(errfd, "exec");
}
