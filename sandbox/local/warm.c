// The warm interpreter, which init starts ahead of the run.
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

#include "internal.h"

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

void close_events(void) {
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
// socket calls; it returns once the run's first message is read, in first.
void await_run(int sigfd, sigset_t *unblock, struct msg *first) {
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
			*first = m;
			return;
		}
	}
}

// warm_take readies the warm interpreter, if there is one, for the run
// (run.lim): resumed, under the run's limits. It returns whether there
// is one; when the limits do not hold it ends it, quietly, and the run
// starts cold.
int warm_take(void) {
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
	return use_warm;
}

// warm_wait waits, supervising it, for a warm interpreter still importing
// to be ready, within the run's deadline, and returns whether the program
// runs in it. When it ended first it is gone, and the run starts cold;
// when the deadline came first (*timed_out), its wait status is in
// *status and there is no run.
int warm_wait(int sigfd, uint64_t deadline, int *timed_out, int *status) {
	int use_warm = 1;
	while (use_warm && !warm.ready) {
		int woke = 0;
		uint64_t ignored = 0;
		int st = supervise(warm.pid, sigfd, &warm.listener, &ignored, deadline, timed_out, warm.sock, &woke);
		if (woke) {
			warm_readable();
			use_warm = warm.pid > 0;
			continue;
		}
		// It ended before it was ready: reaped, or killed at the
		// deadline with everything else.
		use_warm = 0;
		if (*timed_out) {
			warm_close();
			*status = st;
		} else {
			warm_gone(st);
		}
	}
	return use_warm;
}

// warm_hand_over sends the ready warm interpreter the run's code, and
// returns it to be supervised as the program: its pid, and its seccomp
// listener in *listener, now the caller's.
pid_t warm_hand_over(int *listener) {
	warm_send_code();
	*listener = warm.listener;
	warm.listener = -1;
	return warm.pid;
}
