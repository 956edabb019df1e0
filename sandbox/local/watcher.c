// Init's memory watcher.
//
// Without a memory cgroup, init bounds the memory of the sandbox as a
// whole: every few tens of milliseconds it adds up what the sandbox's
// processes own and, past the limit, kills them all. A process owns its
// proportional share (PSS) of the anonymous and shared memory it maps, so
// pages that forked processes share count once, and shared libraries not
// at all (huge pages from the host's pool count in full); to that are
// added memfds held open (filled with write(), they are mapped by no one)
// and System V shared memory segments. Files in
// /tmp, /mnt/data and /dev/shm are bounded by the disk limit instead.
//
// The exact share walks a process's page tables (smaps_rollup: about 12
// microseconds of CPU per MB resident), so a look first adds up the
// resident anonymous and shared memory from /proc/PID/status, which costs
// the same for any size and never counts less; only when that passes the
// limit does it read the exact share, of the largest processes first,
// until the sum fits. The next look comes sooner the nearer the sum is to
// the limit, and later the more the last one cost (at most 1/WATCH_BUDGET
// of a CPU), but never more than WATCH_MAX_NS later: processes that share
// gigabytes (forks) make looks cost more than that, and the limit must
// hold all the same.

#include "internal.h"

#include <sys/mman.h>

#define WATCH_MIN_NS (20ULL * 1000 * 1000)  // the least time between two looks
#define WATCH_MAX_NS (200ULL * 1000 * 1000) // the most
#define WATCH_RATE 4ULL                     // bytes per ns (4 GB/s) a run is assumed to touch: how soon the headroom may go
#define WATCH_BUDGET 20ULL                  // a look's CPU time times this is the least time to the next

struct watched {
	pid_t pid;
	uint64_t upper; // resident anonymous, shared and huge-page memory: at least its share
};

static struct {
	int on;
	int proc;      // the sandbox's /proc
	dev_t shm_dev; // the device of memfds (the kernel's internal tmpfs)
	uint64_t next; // when to look next
	uint64_t killed;
	uint64_t cpu_ns; // what the looks cost
	struct watched *procs;
	size_t cap;
} watch;

// watch_init prepares the watcher, before the program starts, when the
// run has no memory cgroup.
void watch_init(void) {
	if (setup.ncgroups != 0)
		return;
	watch.proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (watch.proc < 0)
		fail("open /proc for the memory watcher");
	int m = memfd_create("probe", MFD_CLOEXEC);
	struct stat st;
	if (m < 0 || fstat(m, &st) < 0)
		fail("memfd_create for the memory watcher");
	close(m);
	watch.shm_dev = st.st_dev;
	watch.on = 1;
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

// memfd_bytes adds up the memfds pid holds open, each once per look
// (seen, *nseen: the inodes counted so far).
static uint64_t memfd_bytes(pid_t pid, ino_t *seen, size_t *nseen, size_t maxseen) {
	char path[64];
	snprintf(path, sizeof path, "%d/fd", (int)pid);
	int dir = openat(watch.proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 0;
	uint64_t sum = 0;
	char buf[4096];
	long n;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			off += e->d_reclen;
			struct stat st;
			if (e->d_name[0] < '0' || e->d_name[0] > '9' || fstatat(dir, e->d_name, &st, 0) < 0 ||
			    st.st_dev != watch.shm_dev)
				continue;
			size_t i = 0;
			while (i < *nseen && seen[i] != st.st_ino)
				i++;
			if (i < *nseen)
				continue;
			if (*nseen < maxseen)
				seen[(*nseen)++] = st.st_ino;
			sum += (uint64_t)st.st_blocks * 512;
		}
	}
	close(dir);
	return sum;
}

// sysv_bytes adds up the resident memory of the IPC namespace's System V
// shared memory segments, attached or not.
static uint64_t sysv_bytes(void) {
	int fd = openat(watch.proc, "sysvipc/shm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t sum = 0;
	char buf[8192];
	size_t have = 0;
	int header = 1;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = 0;
			if (!header) { // rss is the 15th column
				char *p = line;
				for (int col = 0; col < 14 && p; col++) {
					p += strspn(p, " ");
					p = strchr(p, ' ');
				}
				if (p)
					sum += strtoull(p, NULL, 10);
			}
			header = 0;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			have = 0; // a line this long is no segment's
	}
	close(fd);
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

// watch_look adds up the sandbox's memory once; past limit it kills every
// process but init. It returns the sum, as far as it had to be made exact.
static uint64_t watch_look(uint64_t limit) {
	size_t n = 0;
	uint64_t total = 0, extra = 0;
	ino_t seen[256];
	size_t nseen = 0;
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
		if (read_at(watch.procs[i].pid, "status", st, sizeof st) > 0)
			watch.procs[i].upper = field_kb(st, "\nRssAnon:") + field_kb(st, "\nRssShmem:") + field_kb(st, "\nHugetlbPages:");
		total += watch.procs[i].upper;
		extra += memfd_bytes(watch.procs[i].pid, seen, &nseen, sizeof seen / sizeof seen[0]);
	}
	extra += sysv_bytes();
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
	if (total > limit) {
		kill(-1, SIGKILL);
		watch.killed = total;
		watch.on = 0;
	}
	return total;
}

// watch_memory looks when a look is due and returns how long supervise
// may sleep: left, or less to the next look.
uint64_t watch_memory(uint64_t now, uint64_t left) {
	if (!watch.on)
		return left;
	if (watch.next == 0)
		watch.next = now + WATCH_MIN_NS; // the program has just started
	if (now >= watch.next) {
		uint64_t limit = run.lim.memory, cpu = thread_cpu_ns();
		uint64_t total = watch_look(limit);
		uint64_t wait = total < limit ? (limit - total) / WATCH_RATE : 0;
		cpu = thread_cpu_ns() - cpu;
		watch.cpu_ns += cpu;
		if (wait < cpu * WATCH_BUDGET)
			wait = cpu * WATCH_BUDGET;
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
