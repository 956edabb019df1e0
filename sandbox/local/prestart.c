// A one-shot run (sandpiper exec), started before the Go runtime.
//
// Starting a Go process costs tens of milliseconds on some hosts (page
// faults, package initialisation), as much as the program it runs.
// sandpiper-exec's constructor calls sandpiper_prestart_run with the
// code from its arguments and the path of a plan the Go side wrote on an
// earlier run: everything a sandbox needs (the trees to clone, the cgroups
// to make, the setup and the limits for init), made from the same
// configuration. The sandbox is built and the program started from it,
// here, while the runtime starts; the Go side (prestart_linux.go) then
// makes the plan again and takes the sandbox over only if the two are the
// same, byte for byte, else it discards it and runs the program itself.
// Nothing here decides anything: the plan does, and every failure leaves
// the run to the Go side.

#include "internal.h"

#include <limits.h>

struct prestart sandpiper_prestart;

// From the plan, for sandpiper_prestart_finish.
static uint32_t plan_flags;
static struct limits run_limits;

// A plan larger than this is not one the Go side wrote.
#define MAX_PLAN (4 << 20)

struct cursor {
	const char *p, *end;
	int ok;
};

static uint64_t take(struct cursor *c, size_t n) {
	uint64_t v = 0;
	if (!c->ok || (size_t)(c->end - c->p) < n) {
		c->ok = 0;
		return 0;
	}
	memcpy(&v, c->p, n); // host byte order, as written
	c->p += n;
	return v;
}

// bytes returns the next n-byte field (n read as a u32 or u64 first).
static const char *bytes(struct cursor *c, uint64_t n) {
	if (!c->ok || (uint64_t)(c->end - c->p) < n) {
		c->ok = 0;
		return NULL;
	}
	const char *p = c->p;
	c->p += n;
	return p;
}

// str copies the next string (a u32 length and the bytes) into dst.
static void str(struct cursor *c, char *dst, size_t size) {
	uint32_t n = (uint32_t)take(c, 4);
	const char *p = bytes(c, n);
	if (!c->ok || n >= size || memchr(p, 0, n) != NULL) {
		c->ok = 0;
		dst[0] = '\0';
		return;
	}
	memcpy(dst, p, n);
	dst[n] = '\0';
}

static int write_setting(const char *dir, const char *name, const char *value) {
	char path[1024];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = write_full(fd, value, strlen(value));
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

void sandpiper_prestart_run(const char *plan_path, const char *code, uint64_t code_len) {
	struct prestart *ps = &sandpiper_prestart;
	memset(ps, 0, sizeof *ps);
	ps->state = PRESTART_NO_PLAN;
	ps->pidfd = ps->stdout_r = ps->stderr_r = ps->result_r = ps->events_r = -1;
	ps->code = code;
	ps->code_len = code_len;
	if (strlen(plan_path) >= sizeof ps->plan_path)
		return;
	strcpy(ps->plan_path, plan_path);

	// The plan: this user's, and no one else may have written it.
	int fd = open(plan_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); // no FIFO holds it up
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    st.st_size <= 0 || st.st_size > MAX_PLAN) {
		close(fd);
		return;
	}
	size_t got = (size_t)st.st_size;
	char *plan = malloc(got);
	if (plan == NULL || read_full(fd, plan, got) < 0) {
		free(plan);
		close(fd);
		return;
	}
	close(fd);
	ps->plan = plan;
	ps->plan_len = got;

	struct cursor c = {plan, plan + got, 1};
	const char *magic = bytes(&c, sizeof PLAN_MAGIC - 1);
	if (!c.ok || memcmp(magic, PLAN_MAGIC, sizeof PLAN_MAGIC - 1) != 0)
		return;
	// The interpreter the plan was made for, unchanged.
	char python[PATH_MAX];
	str(&c, python, sizeof python);
	uint64_t py_size = take(&c, 8);
	int64_t py_sec = (int64_t)take(&c, 8), py_nsec = (int64_t)take(&c, 8);
	uint32_t host_id = (uint32_t)take(&c, 4);
	plan_flags = (uint32_t)take(&c, 4);
	if (!c.ok || stat(python, &st) < 0 || (uint64_t)st.st_size != py_size || st.st_mtim.tv_sec != py_sec ||
	    st.st_mtim.tv_nsec != py_nsec)
		return;

	int fds[64], nfds = 0; // init's descriptors
	int req[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, res[2] = {-1, -1}, ev[2] = {-1, -1};
	int pidfd = -1;
	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(res, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0)
		goto fail;
	fds[nfds++] = req[0];
	fds[nfds++] = out[1];
	fds[nfds++] = errp[1];
	fds[nfds++] = res[1];
	fds[nfds++] = ev[1];
	req[0] = out[1] = errp[1] = res[1] = ev[1] = -1; // closed with fds

	// The mount trees, cloned for this sandbox alone.
	uint32_t ntrees = (uint32_t)take(&c, 4);
	if (!c.ok || ntrees > 32)
		goto fail;
	for (uint32_t i = 0; i < ntrees; i++) {
		char src[PATH_MAX];
		str(&c, src, sizeof src);
		uint64_t attr_set = take(&c, 8);
		if (!c.ok)
			goto fail;
		int t = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (t < 0)
			goto fail;
		fds[nfds++] = t;
		struct mount_attr attr = {.attr_set = attr_set};
		if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
			goto fail;
	}

	// The run's cgroup: p<pid>.exec in each hierarchy, which the Go side's
	// sweep leaves alone while this process lives.
	uint32_t ncg = (uint32_t)take(&c, 4);
	if (!c.ok || ncg > PRESTART_CGROUPS)
		goto fail;
	for (uint32_t i = 0; i < ncg; i++) {
		char parent[400];
		str(&c, parent, sizeof parent);
		uint32_t nset = (uint32_t)take(&c, 4);
		if (!c.ok || nset > 8)
			goto fail;
		char *dir = ps->cgroups[i];
		snprintf(dir, sizeof ps->cgroups[i], "%s/p%d.exec", parent, (int)getpid());
		if (mkdir(dir, 0755) < 0)
			goto fail;
		ps->ncgroups = (int32_t)i + 1;
		for (uint32_t j = 0; j < nset; j++) {
			char file[64], value[64];
			str(&c, file, sizeof file);
			str(&c, value, sizeof value);
			uint32_t optional = (uint32_t)take(&c, 4);
			if (!c.ok || strchr(file, '/') != NULL)
				goto fail;
			if (write_setting(dir, file, value) < 0 && !(optional && errno == ENOENT))
				goto fail;
		}
		char procs[600];
		snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
		int p = open(procs, O_WRONLY | O_CLOEXEC);
		if (p < 0)
			goto fail;
		fds[nfds++] = p;
	}
	uint64_t setup_len = take(&c, 8);
	const char *setup = bytes(&c, setup_len);
	uint64_t tail_len = take(&c, 8);
	const char *tail = bytes(&c, tail_len);
	if (!c.ok || c.p != c.end)
		goto fail;
	// The run's limits, in the message after its code.
	if (tail_len < 12 + sizeof run_limits)
		goto fail;
	memcpy(&run_limits, tail + 12, sizeof run_limits);

	char err[256];
	pidfd = spawn_init(host_id, fds, nfds, err, sizeof err);
	if (pidfd < 0)
		goto fail;
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	nfds = 0;

	// The setup, then the run; init reads them as it goes. A write to an
	// init that died would raise SIGPIPE: ignored meanwhile.
	struct {
		uint32_t type;
		uint64_t len;
	} __attribute__((packed)) hdr = {M_CODE, code_len};
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	int w = write_full(req[1], setup, setup_len) == 0 && write_full(req[1], &hdr, sizeof hdr) == 0 &&
		write_full(req[1], code, code_len) == 0 && write_full(req[1], tail, tail_len) == 0;
	sigaction(SIGPIPE, &old, NULL);
	close(req[1]);
	req[1] = -1;
	if (!w)
		goto fail;

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	ps->started_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	ps->pidfd = pidfd;
	ps->stdout_r = out[0];
	ps->stderr_r = errp[0];
	ps->result_r = res[0];
	ps->events_r = ev[0];
	ps->state = PRESTART_STARTED;
	return;

fail:
	if (pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR) {
		}
		close(pidfd);
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	int ends[] = {req[0], req[1], out[0], out[1], errp[0], errp[1], res[0], res[1], ev[0], ev[1]};
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
		if (ends[i] >= 0)
			close(ends[i]);
	for (int i = ps->ncgroups - 1; i >= 0; i--)
		rmdir(ps->cgroups[i]);
	ps->ncgroups = 0;
}

// How long after the run's timeout the host kills a sandbox whose init
// has not ended it (as the Go side's hostGrace).
#define HOST_GRACE_NS (5 * 1000000000LL)

static int64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// keep reads what is there on fd into b, keeping at most cap bytes; it
// returns 0 at the end of the stream, 1 when there may be more, -1 on an
// error.
static int keep(int fd, struct prestart_buf *b, uint64_t cap) {
	char chunk[65536];
	ssize_t n = read(fd, chunk, sizeof chunk);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -1;
	if (n == 0)
		return 0;
	b->size += (uint64_t)n;
	uint64_t room = cap > b->len ? cap - b->len : 0;
	uint64_t k = (uint64_t)n < room ? (uint64_t)n : room;
	if (k > 0) {
		char *d = realloc(b->data, b->len + k);
		if (d == NULL)
			return -1;
		b->data = d;
		memcpy(d + b->len, chunk, k);
		b->len += k;
	}
	return 1;
}

// counter returns the value after key in a cgroup's "key value" file,
// or 0.
static uint64_t counter(const char *dir, const char *file, const char *key) {
	char path[700], buf[4096];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	size_t kl = strlen(key);
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return strtoull(line + kl + 1, NULL, 10);
	return 0;
}

// simple reports whether the result of a run needs nothing but the
// program's output: what the Go side would print besides is nothing.
static int simple(const struct prestart *ps, struct status_msg *status_out) {
	const char *p = ps->result.data, *end = p + ps->result.len;
	struct status_msg sm;
	memset(&sm, 0, sizeof sm);
	int status = 0, ended = 0;
	while (!ended && end - p >= 12) {
		uint32_t type;
		uint64_t len;
		memcpy(&type, p, 4);
		memcpy(&len, p + 4, 8);
		p += 12;
		if ((uint64_t)(end - p) < len)
			return 0;
		switch (type) {
		case R_STATUS:
			if (len != sizeof sm)
				return 0;
			memcpy(&sm, p, sizeof sm);
			status = 1;
			break;
		case R_TIMES:
			break;
		case R_END:
			ended = 1;
			break;
		default: // an error, a file, an omitted file, a cut listing
			return 0;
		}
		p += len;
	}
	if (!status || !ended || p != end)
		return 0;
	if (sm.timed_out || sm.disk_full || sm.mem_killed || sm.warm)
		return 0;
	if (!sm.exited && (sm.signal == SIGKILL || sm.signal == SIGXCPU))
		return 0;
	if (ps->out.size > ps->out.len || ps->err.size > ps->err.len)
		return 0; // truncated: the Go side says so
	if (ps->ncgroups == 0 && sm.exit_code != 0)
		return 0; // without a cgroup, a failure may be the memory limit's
	for (int i = 0; i < ps->ncgroups; i++) {
		const char *d = ps->cgroups[i];
		if (counter(d, "memory.events", "oom_kill") || counter(d, "memory.oom_control", "oom_kill") ||
		    counter(d, "pids.events", "max"))
			return 0;
	}
	*status_out = sm;
	return 1;
}

// sweep removes the groups of one-shot runs whose processes are gone,
// beside the run's own: p<pid>.exec under each hierarchy's parent.
static void sweep_exec_groups(const struct prestart *ps) {
	for (int i = 0; i < ps->ncgroups; i++) {
		char parent[512];
		strcpy(parent, ps->cgroups[i]);
		char *slash = strrchr(parent, '/');
		if (slash == NULL)
			continue;
		*slash = '\0';
		DIR *d = opendir(parent);
		if (d == NULL)
			continue;
		for (struct dirent *e; (e = readdir(d)) != NULL;) {
			char *rest;
			if (e->d_name[0] != 'p')
				continue;
			long pid = strtol(e->d_name + 1, &rest, 10);
			if (rest == e->d_name + 1 || strcmp(rest, ".exec") != 0 || pid <= 0)
				continue;
			if (pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
				unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		}
		closedir(d);
	}
}

int sandpiper_prestart_finish(void) {
	struct prestart *ps = &sandpiper_prestart;
	if (ps->state != PRESTART_STARTED || !(plan_flags & PLAN_FINISH))
		return -1;
	int fds[3] = {ps->stdout_r, ps->stderr_r, ps->result_r};
	struct prestart_buf *bufs[3] = {&ps->out, &ps->err, &ps->result};
	// The result carries the files the program wrote: at most the disk.
	uint64_t caps[3] = {run_limits.output, run_limits.output, run_limits.disk + (16 << 20)};
	int open_fds = 3;
	int64_t deadline = mono_ns() + (int64_t)run_limits.timeout_ns + HOST_GRACE_NS;
	while (open_fds > 0) {
		struct pollfd pfd[4];
		int idx[4], n = 0;
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0) {
				pfd[n] = (struct pollfd){.fd = fds[i], .events = POLLIN};
				idx[n++] = i;
			}
		int64_t left = (deadline - mono_ns()) / 1000000 + 1; // ms
		int r = poll(pfd, (nfds_t)n, left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0 && !ps->killed) {
				// Init did not end the run in time: kill the whole
				// sandbox, and read what is left.
				syscall(SYS_pidfd_send_signal, ps->pidfd, SIGKILL, NULL, 0);
				ps->killed = 1;
				deadline = mono_ns() + HOST_GRACE_NS;
				continue;
			}
			break;
		}
		for (int j = 0; j < n; j++) {
			if (!(pfd[j].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int i = idx[j];
			int k = keep(fds[i], bufs[i], caps[i]);
			if (k <= 0) {
				if (k < 0 && i == 2)
					bufs[i]->size = bufs[i]->len + 1; // broken: not simple
				fds[i] = -1;
				open_fds--;
			}
		}
	}
	int *mine[] = {&ps->stdout_r, &ps->stderr_r, &ps->result_r, &ps->events_r};
	for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
		close(*mine[i]);
		*mine[i] = -1;
	}
	ps->state = PRESTART_FINISHED;
	struct status_msg sm;
	if (open_fds > 0 || ps->killed || ps->result.size > ps->result.len || !simple(ps, &sm))
		return -1;
	write_full(1, ps->out.data, ps->out.len);
	write_full(2, ps->err.data, ps->err.len);
	// Init exits after its report; its group goes once it has, here or
	// at the next one-shot run's sweep.
	struct pollfd pf = {.fd = ps->pidfd, .events = POLLIN};
	if (poll(&pf, 1, 0) == 1)
		for (int i = ps->ncgroups - 1; i >= 0; i--)
			rmdir(ps->cgroups[i]);
	sweep_exec_groups(ps);
	return sm.exit_code;
}
