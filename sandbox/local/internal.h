// Declarations shared by the C files of the sandbox's helpers (zygote.c,
// init.c, root.c, collect.c, watcher.c, warm.c, lockdown.c, common.c). The
// Go side sees only sandbox.h.
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
#include <sys/mman.h>
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
// release_msg gives back a message's data (data and len as read_msg set them).
void release_msg(char *data, uint64_t len);
uint64_t now_ns(void);
int mkdir_p(const char *path, mode_t mode);
int mkdir_parent(const char *path);
void write_file(const char *path, const char *data, uint64_t len, mode_t mode);
int safe_name(const char *name);
void *grow(void *p, size_t n, size_t size);

// ---------- init.c: the request, the run ----------

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
	char *runner;    // the source that runs a stateful run's code, or NULL
} setup;

// run is the one run, sent when the sandbox is taken.
extern struct run {
	char *code;
	struct file_spec *files;
	size_t nfiles;
	struct limits lim;
	// A stateful run (M_STATE): keep_state, the most bytes of state, and
	// the state to restore.
	int keep_state;
	uint64_t state_max;
	char *state;
	uint64_t state_len;
} run;

void init_main(void) __attribute__((noreturn));

// What init.c does for the program's process that warm.c does for the
// warm interpreter too (see their definitions):

// answer_refusals answers the socket calls the seccomp listener *lfd
// holds, counting them in *count; it sets *lfd to -1 once no process is
// left under the filter.
void answer_refusals(int *lfd, uint64_t *count);

// supervise waits for pid to end, answering the seccomp listener and
// killing the sandbox at the deadline, and returns its wait status; with
// wake >= 0 it returns early, setting *woke, once wake turns readable.
int supervise(pid_t pid, int sigfd, int *lfd, uint64_t *refused, uint64_t deadline, int *timed_out, int wake,
              int *woke);

// await_start waits for the forked process pid to exec, and returns the
// seccomp listener it passed on fd, or -1 with err saying what failed.
int await_start(int fd, pid_t pid, char *err, size_t errsize);

// ---------- root.c: building the root ----------

// WORK is the writable tmpfs (setup.disk, resized to run.lim.disk for the
// run), after the pivot: /mnt/data, /tmp and /dev/shm live there.
#define WORK "/mnt"

// build_root builds the sandbox's root from setup and pivots into it.
void build_root(void);

// ---------- collect.c: the output files ----------

// collect reports the files the program left in /mnt/data (R_FILE, R_OMIT,
// R_CUT), once every process of the run is gone, within run.lim.
void collect(void);

// collect_state reports what a stateful run left in STATE_DIR
// (R_STATE_REPORT, R_STATE), each within its bound, once every process of
// the run is gone.
void collect_state(void);

// ---------- watcher.c: init's memory watcher ----------

// Without a memory cgroup, init bounds the sandbox's memory itself; init.c
// starts the watcher, lets it look as it supervises, and reports it.

// watch_init prepares the watcher before the program starts; it does
// nothing when the run has a memory cgroup (setup.ncgroups).
void watch_init(void);

// watch_memory looks at the sandbox's memory when a look is due, killing
// every process but init past run.lim.memory, and returns how long
// supervise may sleep: left, or less to the next look.
uint64_t watch_memory(uint64_t now, uint64_t left);

// watch_report puts in sm what the watcher counted when it ended the run
// (mem_killed) and the CPU time its looks took (mem_watch_ns).
void watch_report(struct status_msg *sm);

// ---------- warm.c: the warm interpreter ----------

// The warm interpreter is the program's process started ahead of the run;
// its state stays in warm.c, and init.c drives it through these.

// await_run waits for the run, starting, pausing and resuming the warm
// interpreter as the host asks meanwhile; it returns the run's first
// message in first.
void await_run(int sigfd, sigset_t *unblock, struct msg *first);

// warm_take readies the warm interpreter for the run; it returns whether
// the run may use it.
int warm_take(void);

// warm_wait waits, within the deadline, for a warm interpreter still
// importing, and returns whether the program runs in it.
int warm_wait(int sigfd, uint64_t deadline, int *timed_out, int *status);

// warm_hand_over sends it the code and returns its pid, and its seccomp
// listener in *listener.
pid_t warm_hand_over(int *listener);

// close_events closes EVENTS_FD once the program starts: the events tell
// how warming went.
void close_events(void);

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
