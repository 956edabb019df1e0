// The sandbox's init: PID 1 of the sandbox's namespaces. It reads the
// setup, builds the root file system and pivots into it, waits for its one
// run, starts the program (lockdown.c), supervises it until it ends or a
// limit ends it, collects the files it wrote, reports, and exits, which
// takes the namespaces with it.

#include "internal.h"

struct setup setup;
struct run run;

// ---------- the request ----------

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
		case M_BOOTSTRAP:
			if (m.len == 0 || strlen(m.data) != m.len)
				failx("bad bootstrap");
			setup.bootstrap = m.data;
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

// read_run reads the run, first being its first message.
static void read_run(struct msg *first) {
	for (int i = 0;; i++) {
		struct msg m;
		if (i == 0)
			m = *first;
		else
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

// ---------- init ----------

// answer_refusals answers the socket calls the seccomp filter handed to
// init (families outside the allowlist, see seccomp_linux.go) with
// EAFNOSUPPORT, and counts them. The caller sleeps in the kernel until
// then. It answers at most 64 at a time, so that a program calling without
// pause cannot hold off the deadline; the next poll brings it back. When no
// process is left under the filter, it closes the listener and sets *lfd
// to -1.
static void answer_refusals(int *lfd, uint64_t *count) {
	for (int i = 0; i < 64 && *lfd >= 0; i++) {
		struct pollfd p = {.fd = *lfd, .events = POLLIN};
		if (poll(&p, 1, 0) < 0) {
			if (errno == EINTR)
				continue;
			fail("poll seccomp listener");
		}
		if (!(p.revents & POLLIN)) {
			if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) {
				close(*lfd);
				*lfd = -1;
			}
			return;
		}
		// Readable: a call is waiting (or was, and its caller was
		// killed: ENOENT), so this does not block.
		struct seccomp_notif req;
		memset(&req, 0, sizeof req);
		if (ioctl(*lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			fail("receive seccomp notification");
		}
		(*count)++;
		// Nothing of the caller's memory is read, so the id needs no
		// re-validation: a caller gone meanwhile makes this ENOENT.
		int err = (req.data.nr == SYS_socket || req.data.nr == SYS_socketpair) ? EAFNOSUPPORT : ENOSYS;
		struct seccomp_notif_resp resp = {.id = req.id, .val = 0, .error = -err, .flags = 0};
		if (ioctl(*lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
			fail("answer seccomp notification");
	}
}

// supervise waits for the program (pid) to end, reaping orphans on the
// way, and kills every process of the sandbox at the deadline. It returns
// the program's wait status. SIGCHLD is blocked and read from sigfd; the
// seccomp listener *lfd is answered as it turns readable. With wake >= 0,
// it returns early, setting *woke, once wake turns readable.
static int supervise(pid_t pid, int sigfd, int *lfd, uint64_t *refused, uint64_t deadline, int *timed_out, int wake,
                     int *woke) {
	struct pollfd pfd[3] = {{.fd = sigfd, .events = POLLIN}, {.fd = *lfd, .events = POLLIN}, {.fd = wake, .events = POLLIN}};
	for (;;) {
		int st;
		pid_t w;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == pid)
				return st;
		if (w < 0 && errno != EINTR && errno != ECHILD)
			fail("wait");
		struct timespec ts = {0, 50 * 1000 * 1000};
		if (!*timed_out) {
			uint64_t now = now_ns();
			if (now >= deadline) {
				*timed_out = 1;
				kill(-1, SIGKILL);
				continue;
			}
			uint64_t left = watch_memory(now, deadline - now);
			ts.tv_sec = (time_t)(left / 1000000000ULL);
			ts.tv_nsec = (long)(left % 1000000000ULL);
		}
		pfd[1].fd = *lfd; // ignored once negative
		if (ppoll(pfd, 3, &ts, NULL) < 0 && errno != EINTR)
			fail("poll");
		if (pfd[1].revents)
			answer_refusals(lfd, refused);
		struct signalfd_siginfo si;
		while (read(sigfd, &si, sizeof si) > 0) {
		}
		if (wake >= 0 && pfd[2].revents && !*timed_out) {
			*woke = 1;
			return 0;
		}
	}
}

// await_start reads what the program's process (pid) reports on fd until
// its exec closes it: the seccomp listener, passed as a descriptor, or
// errno and the step that failed. It returns the listener; without one it
// reaps the process, puts what failed in err and returns -1, so that the
// caller fails closed, as for any step that failed.
static int await_start(int fd, pid_t pid, char *err, size_t errsize) {
	int listener = -1;
	for (;;) {
		char buf[129];
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf - 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
		ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errsize, "read from %s's process: %s", setup.python, strerror(errno));
			goto failed;
		}
		if (n == 0)
			break; // exec: the program runs
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
			int got;
			memcpy(&got, CMSG_DATA(c), sizeof got);
			if (listener >= 0 || (mh.msg_flags & MSG_CTRUNC)) {
				close(got);
				snprintf(err, errsize, "start %s: unexpected descriptors", setup.python);
				goto failed;
			}
			listener = got;
			continue;
		}
		if (c || n < 4 || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
			snprintf(err, errsize, "start %s: unexpected message", setup.python);
			goto failed;
		}
		int e;
		memcpy(&e, buf, 4);
		// Reap it before reporting.
		waitpid(pid, NULL, 0);
		if (listener >= 0)
			close(listener);
		snprintf(err, errsize, "start %s (%.*s): %s", setup.python, (int)(n - 4), buf + 4, strerror(e));
		return -1;
	}
	if (listener >= 0)
		return listener;
	snprintf(err, errsize, "start %s: the seccomp listener was not passed", setup.python);
failed:
	if (listener >= 0)
		close(listener);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

// ---------- the warm interpreter ----------
//
// Asked by the host (M_WARM) while the sandbox waits for its run, init
// starts the program's process ahead of the run: forked and locked down by
// child() exactly as for a run, under the sandbox's default limits, it
// runs the bootstrap (setup.bootstrap), which imports the modules to
// preload with its output sent to /dev/null, writes "R" on its descriptor
// 3 (a socket whose other end is warm.sock), and waits there for the code.
// "F" and a reason, or the end of the socket, says it failed. When the run
// comes, init sets the run's limits on it (prlimit), places the input
// files, sends the code and closes the socket; the bootstrap closes its
// end and runs the code as python3 -c would. The warm interpreter serves
// this sandbox's one run and no other. Whatever goes wrong with it, the
// run starts cold instead, as if there had been none.

static struct {
	pid_t pid;      // the warm interpreter, 0 if none
	int sock;       // init's end of its descriptor 3
	int listener;   // its seccomp listener
	int ready;      // it said "R"
	int paused;     // stopped by M_PAUSE
	uint64_t since; // when it was started
} warm = {.sock = -1, .listener = -1};

static int events_open = 1; // EVENTS_FD

// send_event tells the host how warming went, on EVENTS_FD. A host that
// stopped listening is no reason to fail (SIGPIPE is blocked).
static void send_event(uint32_t type, const void *p, uint64_t len) {
	if (!events_open)
		return;
	char h[12];
	memcpy(h, &type, 4);
	memcpy(h + 4, &len, 8);
	struct iovec iov[2] = {{.iov_base = h, .iov_len = sizeof h}, {.iov_base = (void *)p, .iov_len = len}};
	// At most a few hundred bytes: one write, atomic on a pipe.
	while (writev(EVENTS_FD, iov, len ? 2 : 1) < 0 && errno == EINTR) {
	}
}

static void close_events(void) {
	if (events_open)
		close(EVENTS_FD);
	events_open = 0;
}

// proc_cpu_ns returns the CPU time process pid has used, or -1.
static int64_t proc_cpu_ns(pid_t pid) {
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	// After the command: state (field 3) ... utime (14), stime (15).
	unsigned long long ticks = 0;
	for (int field = 3; field <= 15 && p; field++) {
		p = strchr(p + 1, ' ');
		if (p && field >= 14)
			ticks += strtoull(p + 1, NULL, 10);
	}
	long hz = sysconf(_SC_CLK_TCK);
	if (!p || hz <= 0)
		return -1;
	return (int64_t)(ticks * (1000000000ULL / (unsigned long long)hz));
}

// warm_close closes init's ends of the warm interpreter.
static void warm_close(void) {
	if (warm.sock >= 0)
		close(warm.sock);
	if (warm.listener >= 0)
		close(warm.listener);
	warm.sock = warm.listener = -1;
	warm.pid = 0;
	warm.ready = warm.paused = 0;
}

// warm_end kills the warm interpreter and reaps it; with why, it tells the
// host that warming failed, and why (with how it ended, when it did).
static void warm_end(const char *why) {
	if (warm.pid <= 0)
		return;
	int st = 0;
	kill(warm.pid, SIGKILL);
	pid_t w;
	while ((w = waitpid(warm.pid, &st, 0)) < 0 && errno == EINTR) {
	}
	warm_close();
	if (!why)
		return;
	char buf[1200];
	int n;
	if (w > 0 && WIFEXITED(st))
		n = snprintf(buf, sizeof buf, "%s (exit %d)", why, WEXITSTATUS(st));
	else if (w > 0 && WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL)
		n = snprintf(buf, sizeof buf, "%s (signal %d)", why, WTERMSIG(st));
	else
		n = snprintf(buf, sizeof buf, "%s", why);
	if (n > 0)
		send_event(E_WARM_FAILED, buf, (uint64_t)n < sizeof buf ? (uint64_t)n : sizeof buf - 1);
}

// warm_start starts the warm interpreter under lim; a failure is the
// warm-up's, not the sandbox's: it is reported as an event.
static void warm_start(const struct limits *lim, sigset_t *unblock) {
	if (warm.pid > 0)
		return;
	if (!setup.bootstrap)
		failx("warm-up asked for without a bootstrap");
	int sp[2], errp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		fail("socketpair");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, errp) < 0)
		fail("socketpair");
	uint64_t since = now_ns();
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		close(errp[0]);
		close(sp[0]);
		if (sigprocmask(SIG_UNBLOCK, unblock, NULL) < 0)
			child_fail(errp[1], "unblock signals");
		child(errp[1], sp[1], lim);
	}
	close(errp[1]);
	close(sp[1]);
	char err[512];
	int listener = await_start(errp[0], pid, err, sizeof err);
	close(errp[0]);
	if (listener < 0) {
		close(sp[0]);
		send_event(E_WARM_FAILED, err, strlen(err));
		return;
	}
	warm.pid = pid;
	warm.sock = sp[0];
	warm.listener = listener;
	warm.since = since;
}

// warm_readable reads what the warm interpreter said: "R", ready; else
// (a reason after "F", or nothing: it ended) it failed.
static void warm_readable(void) {
	char buf[1024];
	ssize_t n;
	while ((n = read(warm.sock, buf, sizeof buf - 1)) < 0 && errno == EINTR) {
	}
	if (n == 1 && buf[0] == 'R' && !warm.ready) {
		warm.ready = 1;
		struct warm_msg wm = {0};
		char st[4096];
		int fd;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/status", (int)warm.pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			ssize_t k = read(fd, st, sizeof st - 1);
			close(fd);
			if (k > 0) {
				st[k] = 0;
				const char *fields[] = {"\nRssAnon:", "\nRssShmem:"};
				for (int i = 0; i < 2; i++) {
					char *f = strstr(st, fields[i]);
					if (f)
						wm.memory += strtoull(f + strlen(fields[i]), NULL, 10) << 10;
				}
			}
		}
		int64_t cpu = proc_cpu_ns(warm.pid);
		wm.cpu_ns = cpu > 0 ? (uint64_t)cpu : 0;
		wm.wall_ns = now_ns() - warm.since;
		send_event(E_WARM_READY, &wm, sizeof wm);
		return;
	}
	if (n > 1 && buf[0] == 'F') {
		buf[n] = 0;
		warm_end(buf + 1);
	} else if (n <= 0) {
		warm_end("the warm-up ended before it was ready");
	} else {
		warm_end("the warm-up said something unexpected");
	}
}

// warm_gone reports the warm interpreter's end, reaped with status st,
// with the reason the bootstrap gave ("F..."), if it gave one.
static void warm_gone(int st) {
	char why[1200], reason[1024] = "";
	if (warm.sock >= 0) {
		struct pollfd p = {.fd = warm.sock, .events = POLLIN};
		ssize_t n;
		if (poll(&p, 1, 0) > 0 && (n = read(warm.sock, reason, sizeof reason - 1)) > 1 && reason[0] == 'F')
			reason[n] = 0;
		else
			reason[0] = 0;
	}
	const char *what = reason[0] ? reason + 1
	                   : warm.ready ? "the warm interpreter ended while it waited for the run"
	                                : "the warm-up ended before it was ready";
	int n;
	if (WIFSIGNALED(st))
		n = snprintf(why, sizeof why, "%s (signal %d)", what, WTERMSIG(st));
	else
		n = snprintf(why, sizeof why, "%s (exit %d)", what, WEXITSTATUS(st));
	warm_close();
	if (n > 0)
		send_event(E_WARM_FAILED, why, (uint64_t)n < sizeof why ? (uint64_t)n : sizeof why - 1);
}

// warm_reap reaps the sandbox's ended processes before the run: only the
// warm interpreter can be among them.
static void warm_reap(void) {
	int st;
	pid_t w;
	while ((w = waitpid(-1, &st, WNOHANG)) > 0)
		if (w == warm.pid)
			warm_gone(st);
}

// warm_limits sets the run's limits on the warm interpreter, as child()
// sets them on a program's process, counting CPU time from what it has
// used already. It fails when one does not hold (say a hard limit would
// have to rise, which only the host's root may do): the run then starts
// cold, where child() sets them or fails closed naming the one.
static int warm_limits(void) {
	int64_t used = proc_cpu_ns(warm.pid);
	if (used < 0)
		return -1;
	struct rl rl[RUN_RLIMITS];
	size_t n = run_rlimits(&run.lim, (uint64_t)used, rl);
	for (size_t i = 0; i < n; i++) {
		struct rlimit r = {.rlim_cur = rl[i].soft, .rlim_max = rl[i].hard};
		if (prlimit(warm.pid, rl[i].res, &r, NULL) < 0)
			return -1;
	}
	return 0;
}

// warm_send_code gives the warm interpreter the run's code; it returns
// once the code is in the socket (or the interpreter is gone).
static void warm_send_code(void) {
	const char *p = run.code;
	size_t n = strlen(run.code);
	while (n > 0) {
		ssize_t w = send(warm.sock, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; // it died: supervise reports how
		p += w;
		n -= (size_t)w;
	}
	close(warm.sock);
	warm.sock = -1;
}

// await_run waits for the run, starting, pausing and resuming the warm
// interpreter as the host asks meanwhile, and answering its refused
// socket calls; it returns once the run is read.
static void await_run(int sigfd, sigset_t *unblock) {
	uint64_t refused = 0; // the warm-up's: not the run's
	for (;;) {
		struct pollfd p[4] = {
			{.fd = 0, .events = POLLIN},
			{.fd = warm.pid > 0 && !warm.ready ? warm.sock : -1, .events = POLLIN},
			{.fd = sigfd, .events = POLLIN},
			{.fd = warm.listener, .events = POLLIN},
		};
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail("poll");
		}
		if (p[3].revents)
			answer_refusals(&warm.listener, &refused);
		// What it said first: an "F" comes before its exit.
		if (p[1].revents && warm.pid > 0 && !warm.ready)
			warm_readable();
		if (p[2].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof si) > 0) {
			}
			warm_reap();
		}
		if (!p[0].revents)
			continue;
		struct msg m;
		read_msg(&m);
		switch (m.type) {
		case M_WARM: {
			struct limits lim;
			if (m.len != sizeof lim)
				failx("bad warm message");
			memcpy(&lim, m.data, sizeof lim);
			free(m.data);
			warm_start(&lim, unblock);
			break;
		}
		case M_PAUSE:
		case M_RESUME:
			free(m.data);
			if (warm.pid > 0 && warm.paused != (m.type == M_PAUSE)) {
				kill(warm.pid, m.type == M_PAUSE ? SIGSTOP : SIGCONT);
				warm.paused = m.type == M_PAUSE;
			}
			break;
		default:
			read_run(&m);
			return;
		}
	}
}

void init_main(void) {
	// As the PID namespace's init, it gets no signal from inside that it
	// has no handler for; SIGCHLD is blocked and read from a signalfd
	// (the zygote's SIGCHLD handler is not init's). SIGPIPE is blocked
	// too: a host that stopped reading the events is no reason to die.
	// The program's process unblocks both.
	if (signal(SIGCHLD, SIG_DFL) == SIG_ERR)
		fail("reset SIGCHLD");
	sigset_t chld, blocked;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	blocked = chld;
	sigaddset(&blocked, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &blocked, NULL) < 0)
		fail("block SIGCHLD");
	// Only 0, 1, 2 may reach the program: every other descriptor init
	// was given (the result and events pipes, mount trees, cgroup files)
	// stays init's.
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail("close_range");
	// /proc/1 must not be readable by the program, which has the same uid.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail("prctl(PR_SET_DUMPABLE)");
	int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		fail("signalfd");

	read_setup();
	build_root();
	await_run(sigfd, &blocked); // ready: this waits for the one run
	close(0);
	uint64_t start = now_ns();
	struct limits *l = &run.lim;
	uint64_t deadline = start + l->timeout_ns;
	int use_warm = warm.pid > 0;
	if (use_warm) {
		if (warm.paused)
			kill(warm.pid, SIGCONT);
		warm.paused = 0;
		if (warm_limits() < 0) {
			warm_end(NULL); // quietly: these limits are the run's
			use_warm = 0;
		}
	}
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

	watch_init();
	int timed_out = 0, status = 0, started_program = 0;
	uint64_t refused = 0, started = 0;
	// A warm interpreter still importing: the rest of its imports are the
	// run's, as they would be in a cold run, within its deadline.
	while (use_warm && !warm.ready) {
		int woke = 0;
		uint64_t ignored = 0;
		int st = supervise(warm.pid, sigfd, &warm.listener, &ignored, deadline, &timed_out, warm.sock, &woke);
		if (woke) {
			warm_readable();
			use_warm = warm.pid > 0;
			continue;
		}
		// It ended before it was ready: reaped, or killed at the
		// deadline with everything else.
		use_warm = 0;
		if (timed_out) {
			warm_close();
			status = st;
		} else {
			warm_gone(st);
		}
	}
	close_events();
	pid_t pid = 0;
	int listener = -1;
	if (!timed_out && use_warm) {
		warm_send_code();
		pid = warm.pid;
		listener = warm.listener;
		warm.listener = -1;
		started_program = 1;
	} else if (!timed_out) {
		// The program's process reports on a socket (closed at its
		// exec): the seccomp listener, and what failed if anything did.
		int errp[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, errp) < 0)
			fail("socketpair");
		pid = fork();
		if (pid < 0)
			fail("fork");
		if (pid == 0) {
			close(errp[0]);
			if (sigprocmask(SIG_UNBLOCK, &blocked, NULL) < 0)
				child_fail(errp[1], "unblock SIGCHLD");
			child(errp[1], -1, &run.lim);
		}
		close(errp[1]);
		char err[512];
		listener = await_start(errp[0], pid, err, sizeof err);
		if (listener < 0)
			failx("%s", err);
		close(errp[0]);
		started_program = 1;
	}
	if (started_program) {
		started = now_ns() - start;
		status = supervise(pid, sigfd, &listener, &refused, deadline, &timed_out, -1, NULL);
	}
	uint64_t ended = now_ns() - start;
	// Calls waiting when the program ended are answered (and counted);
	// whatever the program left behind goes with it.
	if (listener >= 0)
		answer_refusals(&listener, &refused);
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
	}
	if (listener >= 0)
		close(listener);
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
	sm.warm = started_program && use_warm;
	struct statfs sf;
	if (statfs(WORK, &sf) == 0 && (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize < (64 << 10))
		sm.disk_full = 1;
	sm.started_ns = started;
	sm.ended_ns = ended;
	sm.refused_sockets = refused;
	watch_report(&sm);
	send_msg(R_STATUS, &sm, sizeof sm);
	collect();
	uint64_t reported = now_ns() - start;
	send_msg(R_TIMES, &reported, sizeof reported);
	send_msg(R_END, NULL, 0);
	_exit(0);
}
