// Declarations shared by the C files of the sandbox's helpers (zygote.c,
// init.c, lockdown.c, common.c). The Go side sees only sandbox.h.
#ifndef SANDPIPER_INTERNAL_H
#define SANDPIPER_INTERNAL_H

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
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

// ---------- common.c: messages to the host, files, failure ----------

extern int result_fd; // where init writes its report (3)

void write_all(int fd, const void *p, size_t n);
void send_header(uint32_t type, uint64_t len);
void send_msg(uint32_t type, const void *p, uint64_t len);

// fail reports a machinery failure to the host (with errno's text when
// errno is set) and ends init.
void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

// failx is fail for a failure that no errno explains.
#define failx(...)                 \
	do {                       \
		errno = 0;         \
		fail(__VA_ARGS__); \
	} while (0)

int read_full(int fd, void *p, size_t n);
// write_full writes the n bytes at p to fd, through short writes and
// EINTR; it returns -1 when a write fails.
int write_full(int fd, const void *p, size_t n);

struct msg {
	uint32_t type;
	uint64_t len;
	char *data; // NUL-terminated copy
};

void read_msg(struct msg *m);
uint64_t now_ns(void);
int mkdir_p(const char *path, mode_t mode);
int mkdir_parent(const char *path);
void write_file(const char *path, const char *data, uint64_t len, mode_t mode);
int safe_name(const char *name);
void *grow(void *p, size_t n, size_t size);

// ---------- init.c: the request, the root, the run ----------

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

// setup is how to build the sandbox, sent when it is prepared.
extern struct setup {
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
	char *bootstrap; // the warm interpreter's source, or NULL
} setup;

// run is the one run, sent when the sandbox is taken.
extern struct run {
	char *code;
	struct file_spec *files;
	size_t nfiles;
	struct limits lim;
} run;

void init_main(void) __attribute__((noreturn));

// ---------- lockdown.c: the program's process ----------

// child runs in the forked program process: it drops every privilege,
// applies the limits, Landlock and seccomp, passes the seccomp listener to
// init on errfd (a SOCK_SEQPACKET socket, closed at exec), and execs
// Python. On failure it reports errno and the step on errfd and exits 127.
//
// With warm >= 0 it starts a warm interpreter instead: Python runs
// setup.bootstrap with warm as its descriptor 3, and the limits that
// depend on the run are set from *lim as soft limits only, leaving the
// hard ones where they are, so that init can set the run's own later
// (run_rlimits, prlimit).
void child(int errfd, int warm, const struct limits *lim) __attribute__((noreturn));

// The limits that depend on the run, as child sets them and init sets
// them on a warm interpreter.
struct rl {
	int res;
	const char *name;
	uint64_t soft, hard;
};
#define RUN_RLIMITS 6

// run_rlimits fills out with the limits that l sets, for a process that
// has used cpu_ns of CPU time already; it returns how many.
size_t run_rlimits(const struct limits *l, uint64_t cpu_ns, struct rl out[RUN_RLIMITS]);

// child_fail reports errno and what failed on errfd and exits 127.
void child_fail(int errfd, const char *what) __attribute__((noreturn));

#endif
