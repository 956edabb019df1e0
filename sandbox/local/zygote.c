// The sandbox's zygote, in C.
//
// It runs from a constructor, before the Go runtime starts, when the
// binary is executed with argv[0] "sandpiper-sandbox-zygote": a Go process
// costs milliseconds of CPU to start and to stop (the bot binary's package
// initialisation alone: about 8 ms), and a sandbox is created for every
// run. The zygote is started once per Sandbox; for each sandbox it forks
// (clone3, no exec) a child in new namespaces, which becomes the sandbox's
// init (init.c).
//
// The Go side (local_linux.go, pool_linux.go, protocol_linux.go) decides
// everything: mounts, environment, limits, the seccomp program. The C
// files only carry it out, and fail closed: every call that sets up
// isolation or a limit is checked, and a failure ends the run with an
// error naming the call. Messages on the pipes are framed as a 32-bit type
// and a 64-bit length, in host byte order (same machine).
//
// The files: zygote.c (this one), init.c (the sandbox's PID 1) with
// root.c (its root), warm.c (its warm interpreter), watcher.c (its memory
// watcher) and collect.c (the output files), lockdown.c (the program's
// process before exec), common.c (helpers), internal.h.

#include "internal.h"

// spawn forks a new sandbox init in fresh namespaces with fds as its 0, 1,
// 2, ... and returns a pidfd for it.
static int spawn(uint32_t host_id, int *fds, int nfds, char *err, size_t errsize) {
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0) {
		snprintf(err, errsize, "pipe: %s", strerror(errno));
		return -1;
	}
	// Asked to map another id than its own (root with CAP_SETUID), the
	// sandbox's group is that unprivileged id too; otherwise the kernel
	// lets a process map only its own uid and group, after denying
	// setgroups.
	int privileged = host_id != (uint32_t)geteuid();
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
		// fds[i] -> i, through descriptors above them all; from then on
		// descriptor 3 is the result pipe, and a failure is reported.
		int high[64];
		for (int i = 0; i < nfds; i++) {
			high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 256);
			if (high[i] < 0)
				_exit(1);
		}
		for (int i = 0; i < nfds; i++)
			if (dup2(high[i], i) < 0)
				_exit(1);
		result_fd = 3;
		if (syscall(SYS_close_range, (unsigned)nfds, ~0U, 0) < 0)
			fail("close_range");
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			fail("prctl(PR_SET_PDEATHSIG)");
		if (setresgid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0)
			fail("setresgid");
		// Drop the zygote's supplementary groups. A process that may map
		// only its own ids has setgroups denied, and keeps its own.
		if (setgroups(0, NULL) < 0 && (privileged || errno != EPERM))
			fail("setgroups");
		if (setresuid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0)
			fail("setresuid");
		init_main();
	}
	close(sync[0]);
	char path[64], map[64], gmap[64];
	int ok = 1;
	int n = snprintf(map, sizeof map, "%d %u 1\n", SANDBOX_ID, host_id);
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
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		_exit(2); // the host sees the zygote gone, and says so
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
		if (n != sizeof host_id || (mh.msg_flags & MSG_CTRUNC) || nfds < FIRST_MOUNT_FD)
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
