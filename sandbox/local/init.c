// The sandbox's init: PID 1 of the sandbox's namespaces. It reads the
// setup, builds the root file system and pivots into it (root.c), waits
// for its one run, perhaps starting the program's process ahead of it
// (warm.c), starts the program (lockdown.c), supervises it until it ends
// or a limit ends it (the memory limit without a memory cgroup:
// watcher.c), collects the files it wrote (collect.c), reports, and
// exits, which takes the namespaces with it. This file holds the request,
// the supervision and the run itself.

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
		case M_RUNNER:
			if (m.len == 0 || strlen(m.data) != m.len)
				failx("bad runner");
			setup.runner = m.data;
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
		case M_STATE:
			if (m.len < 8 || run.keep_state)
				failx("bad state message");
			memcpy(&run.state_max, m.data, 8);
			run.state = m.data + 8;
			run.state_len = m.len - 8;
			if (run.state_max == 0 || run.state_len > run.state_max || run.state_max > (1ULL << 50))
				failx("bad state message");
			if (!setup.runner)
				failx("a run that keeps state, without a runner");
			run.keep_state = 1;
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

// place_state makes a stateful run's state directory, a tmpfs of its own
// under /tmp (writable by the program, as /tmp is), and writes "max" (the
// bounds, see below) and the state to restore there.
static void place_state(void) {
	if (mkdir(STATE_DIR, 0700) < 0)
		fail("mkdir %s", STATE_DIR);
	char opts[96];
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=16,mode=0700", (unsigned long long)(run.state_max + STATE_SLACK));
	if (mount("sandbox-state", STATE_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		fail("mount %s", STATE_DIR);
	// "max": the state's limit, the run's memory limit and the
	// milliseconds its restore may take (half the run's time), which
	// the runner gives the restore of its own (sandbox/state.py).
	char max[72];
	int n = snprintf(max, sizeof max, "%llu %llu %llu", (unsigned long long)run.state_max, (unsigned long long)run.lim.memory,
	                 (unsigned long long)(run.lim.timeout_ns / 2000000ULL));
	write_file(STATE_DIR "/max", max, (uint64_t)n, 0600);
	if (run.state_len > 0)
		write_file(STATE_DIR "/in", run.state, run.state_len, 0600);
	// The state is in the file now: init's copy would only double what
	// the run's memory holds.
	release_msg(run.state - 8, run.state_len + 8);
	run.state = NULL;
}

// ---------- init ----------

// answer_refusals answers the socket calls the seccomp filter handed to
// init (families outside the allowlist, see seccomp_linux.go) with
// EAFNOSUPPORT, and counts them. The caller sleeps in the kernel until
// then. It answers at most 64 at a time, so that a program calling without
// pause cannot hold off the deadline; the next poll brings it back. When no
// process is left under the filter, it closes the listener and sets *lfd
// to -1.
void answer_refusals(int *lfd, uint64_t *count) {
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
int supervise(pid_t pid, int sigfd, int *lfd, uint64_t *refused, uint64_t deadline, int *timed_out, int wake,
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
int await_start(int fd, pid_t pid, char *err, size_t errsize) {
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
	struct msg first;
	await_run(sigfd, &blocked, &first); // ready: this waits for the one run
	read_run(&first);
	close(0);
	uint64_t start = now_ns();
	struct limits *l = &run.lim;
	uint64_t deadline = start + l->timeout_ns;
	int use_warm = warm_take();
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
	if (run.keep_state)
		place_state();

	watch_init();
	int timed_out = 0, status = 0, started_program = 0;
	uint64_t refused = 0, started = 0;
	// A warm interpreter still importing: the rest of its imports are the
	// run's, as they would be in a cold run, within its deadline.
	if (use_warm)
		use_warm = warm_wait(sigfd, deadline, &timed_out, &status);
	close_events();
	pid_t pid = 0;
	int listener = -1;
	if (!timed_out && use_warm) {
		pid = warm_hand_over(&listener);
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
	if (run.keep_state)
		collect_state();
	uint64_t reported = now_ns() - start;
	send_msg(R_TIMES, &reported, sizeof reported);
	send_msg(R_END, NULL, 0);
	_exit(0);
}
