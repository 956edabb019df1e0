// Init's memory watcher.
//
// Without a memory cgroup, init bounds the memory of the sandbox as a
// whole: every few tens of milliseconds it adds up what the sandbox holds
// and, past the limit, kills every process. What a process maps is its
// proportional share (PSS) of the anonymous and shared memory it maps, so
// pages that forked processes share count once, and shared libraries not
// at all (huge pages from the host's pool count in full); its page tables
// count too. What the kernel holds for the sandbox that no process maps:
// System V shared memory segments; socket buffers, UNIX (from sock_diag,
// as the kernel counts them against the sender) and netlink (from
// /proc/net/netlink), with what each socket itself takes; and pipes, at
// the most each may hold (PIPE_BUFFERS pages: the seccomp filter refuses
// larger ones), one for every open descriptor that is not a socket's (a
// regular file's descriptor counts as a pipe: few programs hold many).
// memfd_create is refused. Files in /tmp, /mnt/data and /dev/shm are
// bounded by the disk limit instead.
//
// With a memory cgroup, the kernel counts the sandbox's memory, pipes and
// UNIX socket buffers included (kmem; measured on 6.18 with cgroup v1),
// but not netlink sockets' buffers: a program answered by many route
// dumps would hold them outside its limit. The watcher then counts those
// alone and ends the run past UNCHARGED_MAX.
//
// The exact share walks a process's page tables (smaps_rollup: about 12
// microseconds of CPU per MB resident), so a look first adds up the
// resident anonymous and shared memory from /proc/PID/status, which costs
// the same for any size and never counts less; only when that passes the
// limit does it read the exact share, of the largest processes first,
// until the sum fits. Open descriptors are counted, not looked at (the
// size of /proc/PID/fd). The next look comes sooner the nearer the sum is
// to the limit: by the time a run touching WATCH_RATE could have used what
// is left, but never sooner than WATCH_MIN_NS or later than WATCH_MAX_NS.
// What looks cost does not space them out: a run can make each cost
// milliseconds (processes that share gigabytes after a fork) and fill a
// gigabyte a second meanwhile, and the limit must hold all the same. A
// run near its limit thus costs init up to a CPU of its own while it
// lasts; without a cgroup, CPU is not bounded anyway.

#include "internal.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#define WATCH_MIN_NS (5ULL * 1000 * 1000)   // the least time between two looks
#define WATCH_MAX_NS (200ULL * 1000 * 1000) // the most
#define WATCH_RATE 4ULL                     // bytes per ns (4 GB/s) a run is assumed to touch: how soon the headroom may go
#define UNCHARGED_RATE 1ULL                 // the same for netlink buffers (filled a dump request at a time; measured: 0.7 GB/s)
#define UNCHARGED_FIRST_NS (20ULL * 1000 * 1000) // with a memory cgroup, the first look: most runs end before
#define UNCHARGED_MAX (32ULL << 20)         // with a memory cgroup: the most the sandbox may hold that it does not charge
#define PIPE_BUFFERS 16ULL                  // pages a pipe holds at most (the kernel's default; larger ones are refused)
#define SOCKET_BYTES 2048ULL                // what a socket itself takes besides its buffers (measured: 2.2 KiB a UNIX socket)

struct watched {
	pid_t pid;
	uint64_t upper; // resident anonymous, shared and huge-page memory: at least its share
};

static struct {
	int on;
	int all;       // no memory cgroup: count everything, not only what a cgroup would not
	int proc;      // the sandbox's /proc
	int diag;      // a NETLINK_SOCK_DIAG socket, in the sandbox's network namespace
	uint64_t pipe; // what a pipe may hold: PIPE_BUFFERS pages
	uint64_t next; // when to look next
	uint64_t killed;
	uint64_t cpu_ns; // what the looks cost
	struct watched *procs;
	size_t cap;
} watch = {.diag = -1};

// What a look found of the sandbox's sockets.
struct sockets {
	uint64_t bytes; // their buffers, and what they take themselves
	uint64_t count;
};

static int unix_sockets(struct sockets *s);

// watch_init prepares the watcher, before the program starts: for
// everything without a memory cgroup, for what the cgroup does not charge
// with one. It fails closed when it cannot count.
void watch_init(void) {
	watch.proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (watch.proc < 0)
		fail("open /proc for the memory watcher");
	watch.on = 1;
	if (setup.ncgroups != 0)
		return;
	watch.all = 1;
	long page = sysconf(_SC_PAGESIZE);
	watch.pipe = PIPE_BUFFERS * (uint64_t)(page > 0 ? page : 4096);
	watch.diag = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	struct sockets probe;
	if (watch.diag < 0 || unix_sockets(&probe) < 0)
		fail("count UNIX sockets' memory for the memory watcher (sock_diag with UNIX_DIAG_MEMINFO; is unix_diag in the kernel?)");
}

// read_at reads a small /proc file of pid ("status") into buf,
// NUL-terminated; it returns the length, or -1 (the process is gone).
static ssize_t read_at(pid_t pid, const char *file, char *buf, size_t size) {
	char path[64];
	snprintf(path, sizeof path, "%d/%s", (int)pid, file);
	int fd = openat(watch.proc, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, buf, size - 1, 0);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

// field_kb returns the value of "\nName:   N kB" in buf, in bytes (0 when
// absent: a zombie has no memory).
static uint64_t field_kb(const char *buf, const char *name) {
	const char *p = strstr(buf, name);
	if (!p)
		return 0;
	p += strlen(name);
	while (*p == ' ' || *p == '\t')
		p++;
	return strtoull(p, NULL, 10) << 10;
}

// open_files returns how many descriptors pid holds open: the size of its
// /proc/PID/fd (Linux 6.2 and later), else its entries.
static uint64_t open_files(pid_t pid) {
	char path[64];
	snprintf(path, sizeof path, "%d/fd", (int)pid);
	struct stat st;
	if (fstatat(watch.proc, path, &st, 0) < 0)
		return 0; // gone
	if (st.st_size > 0)
		return (uint64_t)st.st_size;
	int dir = openat(watch.proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 0;
	uint64_t n = 0;
	char buf[4096];
	long got;
	while ((got = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0)
		for (long off = 0; off < got;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			off += e->d_reclen;
			n += e->d_name[0] != '.';
		}
	close(dir);
	return n;
}

// unix_sockets adds up what the network namespace's UNIX sockets hold
// (the buffers queued by each, as the kernel counts them against its send
// buffer) and take; it returns -1 when sock_diag cannot say.
static int unix_sockets(struct sockets *s) {
	*s = (struct sockets){0};
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} q = {
		.nlh = {.nlmsg_len = sizeof q, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.req = {.sdiag_family = AF_UNIX, .udiag_states = ~0U, .udiag_show = UDIAG_SHOW_MEMINFO},
	};
	if (send(watch.diag, &q, sizeof q, 0) != (ssize_t)sizeof q)
		return -1;
	static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	for (;;) {
		ssize_t n = recv(watch.diag, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
				return -1;
			s->count++;
			s->bytes += SOCKET_BYTES;
			struct unix_diag_msg *m = NLMSG_DATA(h);
			int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
			for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
				if (a->rta_type == UNIX_DIAG_MEMINFO && RTA_PAYLOAD(a) >= (SK_MEMINFO_WMEM_ALLOC + 1) * sizeof(uint32_t))
					s->bytes += ((uint32_t *)RTA_DATA(a))[SK_MEMINFO_WMEM_ALLOC];
		}
	}
}

// each_line calls fn with every line of the /proc file path but its
// header, NUL-terminated (a line of 8 KiB or more is skipped); it returns
// -1 when the file cannot be opened.
static int each_line(const char *path, void (*fn)(char *line, void *arg), void *arg) {
	int fd = openat(watch.proc, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[8192];
	size_t have = 0;
	int header = 1;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = 0;
			if (!header)
				fn(line, arg);
			header = 0;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			have = 0; // a line this long is no socket's or segment's
	}
	close(fd);
	return 0;
}

// add_netlink adds a line of /proc/net/netlink (sk Eth Pid Groups Rmem
// Wmem ...) to a struct sockets.
static void add_netlink(char *line, void *arg) {
	struct sockets *s = arg;
	unsigned long long rmem, wmem;
	if (sscanf(line, "%*s %*s %*s %*s %llu %llu", &rmem, &wmem) == 2) {
		s->count++;
		s->bytes += SOCKET_BYTES + rmem + wmem;
	}
}

// netlink_sockets adds up what the network namespace's netlink sockets
// hold (their receive and send memory) and take, from /proc/net/netlink
// (the kernel's own sockets among them). No memory cgroup charges their
// buffers.
static void netlink_sockets(struct sockets *s) {
	*s = (struct sockets){0};
	if (each_line("net/netlink", add_netlink, s) < 0)
		fail("open /proc/net/netlink for the memory watcher");
}

// add_segment adds the resident memory of a line of /proc/sysvipc/shm
// (its 15th column) to a uint64_t.
static void add_segment(char *line, void *arg) {
	char *p = line;
	for (int col = 0; col < 14 && p; col++) {
		p += strspn(p, " ");
		p = strchr(p, ' ');
	}
	if (p)
		*(uint64_t *)arg += strtoull(p, NULL, 10);
}

// sysv_bytes adds up the resident memory of the IPC namespace's System V
// shared memory segments, attached or not.
static uint64_t sysv_bytes(void) {
	uint64_t sum = 0;
	each_line("sysvipc/shm", add_segment, &sum);
	return sum;
}

static int by_upper(const void *a, const void *b) {
	uint64_t x = ((const struct watched *)a)->upper, y = ((const struct watched *)b)->upper;
	return x < y ? 1 : x > y ? -1 : 0;
}

static uint64_t thread_cpu_ns(void) {
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

// kill_all ends the run: every process but init, once total was counted.
static void kill_all(uint64_t total) {
	kill(-1, SIGKILL);
	watch.killed = total;
	watch.on = 0;
}

// watch_look adds up the sandbox's memory once; past limit it kills every
// process but init. It returns the sum, as far as it had to be made exact.
// With a memory cgroup it adds up only what the cgroup does not charge,
// against UNCHARGED_MAX.
static uint64_t watch_look(uint64_t limit) {
	struct sockets un, nl;
	netlink_sockets(&nl);
	if (!watch.all) {
		if (nl.bytes > limit)
			kill_all(nl.bytes);
		return nl.bytes;
	}
	size_t n = 0;
	uint64_t total = 0, files = 0, extra = 0;
	char buf[4096];
	if (lseek(watch.proc, 0, SEEK_SET) < 0)
		return 0;
	long got;
	while ((got = syscall(SYS_getdents64, watch.proc, buf, sizeof buf)) > 0) {
		for (long off = 0; off < got;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			off += e->d_reclen;
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (*end || pid <= 1) // not a process, or init itself
				continue;
			if (n == watch.cap) {
				watch.cap = watch.cap ? watch.cap * 2 : 64;
				watch.procs = grow(watch.procs, watch.cap, sizeof *watch.procs);
			}
			watch.procs[n].pid = (pid_t)pid;
			watch.procs[n].upper = 0;
			n++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		char st[4096];
		if (read_at(watch.procs[i].pid, "status", st, sizeof st) > 0) {
			watch.procs[i].upper = field_kb(st, "\nRssAnon:") + field_kb(st, "\nRssShmem:") + field_kb(st, "\nHugetlbPages:");
			extra += field_kb(st, "\nVmPTE:");
		}
		total += watch.procs[i].upper;
		files += open_files(watch.procs[i].pid);
	}
	if (unix_sockets(&un) < 0)
		fail("count UNIX sockets' memory for the memory watcher");
	// Every descriptor that is not a socket's may be a pipe's.
	uint64_t pipes = files > un.count + nl.count ? files - un.count - nl.count : 0;
	extra += sysv_bytes() + un.bytes + nl.bytes + pipes * watch.pipe;
	total += extra;
	if (total <= limit)
		return total;
	qsort(watch.procs, n, sizeof *watch.procs, by_upper);
	for (size_t i = 0; i < n && total > limit; i++) {
		char sm[2048];
		if (read_at(watch.procs[i].pid, "smaps_rollup", sm, sizeof sm) <= 0)
			continue; // gone, or unreadable: its upper bound stands
		uint64_t pss = field_kb(sm, "\nPss_Anon:") + field_kb(sm, "\nPss_Shmem:") +
			       field_kb(sm, "\nPrivate_Hugetlb:") + field_kb(sm, "\nShared_Hugetlb:");
		if (pss < watch.procs[i].upper)
			total -= watch.procs[i].upper - pss;
	}
	if (total > limit)
		kill_all(total);
	return total;
}

// watch_memory looks when a look is due and returns how long supervise
// may sleep: left, or less to the next look.
uint64_t watch_memory(uint64_t now, uint64_t left) {
	if (!watch.on)
		return left;
	if (watch.next == 0) // the program has just started
		watch.next = now + (watch.all ? WATCH_MIN_NS : UNCHARGED_FIRST_NS);
	if (now >= watch.next) {
		uint64_t limit = watch.all ? run.lim.memory : UNCHARGED_MAX, cpu = thread_cpu_ns();
		uint64_t total = watch_look(limit);
		uint64_t wait = total < limit ? (limit - total) / (watch.all ? WATCH_RATE : UNCHARGED_RATE) : 0;
		cpu = thread_cpu_ns() - cpu;
		watch.cpu_ns += cpu;
		wait = wait < WATCH_MIN_NS ? WATCH_MIN_NS : wait > WATCH_MAX_NS ? WATCH_MAX_NS : wait;
		now = now_ns();
		watch.next = now + wait;
		if (!watch.on)
			return left;
	}
	uint64_t due = watch.next - now;
	return due < left ? due : left;
}

// watch_report puts in sm what the watcher did: what it counted when it
// ended the run (0 if it did not), and the CPU time its looks took.
void watch_report(struct status_msg *sm) {
	sm->mem_killed = watch.killed;
	sm->mem_watch_ns = watch.cpu_ns;
}
