// Shared by sandbox.c and the Go side (through cgo): message types and the
// layouts of the fixed-size messages.
#ifndef SANDPIPER_SANDBOX_H
#define SANDPIPER_SANDBOX_H

#include <stdint.h>

#define ZYGOTE_ARG0 "sandpiper-sandbox-zygote"
#define SANDBOX_ID 1000   // the program's uid and gid inside
#define EVENTS_FD 4      // init's descriptors: 0 request, 1 stdout, 2 stderr, 3 result, 4 events,
#define FIRST_MOUNT_FD 5 // then trees, then cgroup.procs files

// Host to init, setup (sent when the sandbox is prepared).
enum {
	M_PYTHON = 1, // absolute path of the interpreter
	M_ENV,        // one "KEY=value" of the program's environment
	M_MOUNT,      // u32 kind, u32 is_file, u64 attr, then target\0 link\0 source\0
	M_ETC,        // name\0data: a file under /etc
	M_TMP,        // name\0data: a file under /tmp
	M_DISK,       // u64: size of the writable tmpfs until the run sets its own
	M_CGROUPS,    // u32: how many cgroup.procs descriptors follow the trees
	M_SECCOMP,    // struct sock_filter[]: the program's seccomp filter
	M_BOOTSTRAP,  // optional: the Python source of a warm interpreter (see M_WARM)
	M_SETUP_END,
	M_RUNNER,     // optional: the Python source that runs a stateful run's code (M_STATE)
};

// Host to init, between the setup and the run: warming. A warm
// interpreter is the program's process started ahead of the run, locked
// down as for the run, running the bootstrap, which imports modules and
// then waits for the run's code.
enum {
	M_WARM = 30, // struct limits: start the warm interpreter under these limits until the run sets its own
	M_PAUSE,     // stop it (SIGSTOP): a run elsewhere needs the CPU
	M_RESUME,    // let it go on (SIGCONT)
};

// Host to init, the run (sent when the sandbox is taken).
enum {
	M_CODE = 20, // the Python code
	M_FILE,      // name\0data: an input file under /mnt/data
	M_LIMITS,    // struct limits
	M_RUN_END,
	M_STATE,     // u64 max, then the state: the run keeps state (see STATE_DIR)
};

// A stateful run's state directory: a tmpfs of its own (max bytes and a
// little more), outside /mnt/data. Init writes "max" and the state ("in")
// there; the runner restores "in" and deletes it, and saves "out" and
// "report.json", which init reports (R_STATE_REPORT, R_STATE).
#define STATE_DIR "/tmp/.sandpiper-state"
#define STATE_SLACK (1ULL << 20)         // room on its tmpfs besides max, for the reports
#define STATE_REPORT_MAX (64ULL << 10)   // sandbox.MaxStateReport

// Init to host.
enum {
	R_ERR = 40, // text: the sandbox could not be built or the program started
	R_STATUS,   // struct status_msg
	R_FILE,     // name\0data: an output file
	R_OMIT,     // text: "name (why)", a file left out
	R_TIMES,    // u64: nanoseconds from the run's arrival to the report
	R_END,
	R_CUT,      // struct cut_msg: the listing of the files was cut (sent before R_TIMES)
	R_STATE_REPORT, // a stateful run's report on its state (JSON), at most STATE_REPORT_MAX bytes
	R_STATE,        // the state a stateful run saved, at most the run's max bytes
};

// Init to host, on EVENTS_FD, until the program starts: how warming went.
enum {
	E_WARM_READY = 60, // struct warm_msg: the warm interpreter waits for the run
	E_WARM_FAILED,     // text: it could not be started, or ended before the run
};

struct warm_msg {
	uint64_t memory; // resident anonymous and shared memory it holds, in bytes
	uint64_t cpu_ns; // CPU time it took to get ready
	uint64_t wall_ns;
};

enum {
	MOUNT_TREE = 0, // move the detached tree passed as a descriptor
	MOUNT_SYMLINK,  // create a symbolic link target -> link
	MOUNT_DIR,      // create an empty directory
	MOUNT_BIND,     // bind-mount the host path source, then set attr
};

struct limits {
	uint64_t timeout_ns;
	uint64_t memory;
	uint64_t processes;
	uint64_t cputime_ns;
	uint64_t open_files;
	uint64_t disk;
	uint64_t output;
	uint64_t files;
	// Caps on the listing of the output files (sandbox.go's Max*).
	uint64_t list_entries; // directory entries looked at; the walk stops there
	uint64_t list_depth;   // directory levels below /mnt/data looked into
	uint64_t list_names;   // regular files kept, the first in lexical order, to pick the files from
	uint64_t path_max;     // bytes of an output file's path; a longer one is omitted
	uint64_t omits;        // R_OMIT messages
	uint64_t omit_bytes;   // bytes of all R_OMIT messages
	uint64_t omit_name;    // bytes of the name in an R_OMIT; a longer one is cut, ending in "…"
};

struct status_msg {
	int32_t exited;
	int32_t exit_code;
	int32_t signal;
	int32_t timed_out;
	int32_t disk_full;
	int32_t warm;             // the program ran in the warm interpreter
	uint64_t started_ns;
	uint64_t ended_ns;
	uint64_t refused_sockets; // socket calls refused for their family
	uint64_t mem_killed;      // bytes init's memory watcher counted when it ended the run; 0 if it did not
	uint64_t mem_watch_ns;    // CPU time init's memory watcher took
};

// What the caps on the listing left out.
struct cut_msg {
	uint64_t unlisted; // entries left out without an R_OMIT of their own
	uint32_t stopped;  // the walk stopped at list_entries: there may be more
	uint32_t skipped;  // a directory was not looked into (too deep, path too long)
};

#endif
