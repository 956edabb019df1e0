package local

import (
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// The host and the sandbox's init talk over two pipes: the host writes an
// initSetup and, later, one initRun (gob) to init's stdin; init writes one
// initResult (gob) to fd 3 before it exits. Init's stdout and stderr are
// the program's, passed straight through.

const (
	initArg0     = "sandpiper-sandbox-init" // os.Args[0] of an init process
	resultFD     = 3                        // init's result pipe
	firstMountFD = 4                        // the mount trees in initSetup.Mounts order, then the cgroup.procs files
)

// mountKind says how init puts a host path into the new root.
type mountKind int

const (
	mountTree    mountKind = iota // move the detached tree passed as a file descriptor
	mountSymlink                  // create a symbolic link (Target -> Link)
	mountDir                      // create an empty directory
	mountBind                     // bind-mount the host path Source (when the host cannot clone trees)
)

type initMount struct {
	Kind   mountKind
	Target string // absolute path inside the sandbox
	Link   string // for mountSymlink
	IsFile bool   // for mountTree and mountBind: the root is a file, not a directory
	Source string // for mountBind: the host path
	Attr   uint64 // for mountBind: MOUNT_ATTR_* flags to set
}

// initSetup is what init needs to build the sandbox; it arrives as soon as
// init starts.
type initSetup struct {
	Python    string   // absolute path of the interpreter, inside the sandbox
	Env       []string // the program's whole environment
	Mounts    []initMount
	EtcFiles  []sandbox.File // generated files under /etc (passwd, group, hosts)
	TmpFiles  []sandbox.File // placed under /tmp (caches prepared at start-up)
	DiskSize  int64          // size of the writable tmpfs until the run sets its own
	CgroupFDs int            // cgroup files passed after the mounts: v1 "tasks" files, or a v2 directory
	CgroupV2  bool
}

// initRun is the one run; it arrives when the sandbox is taken from the pool.
type initRun struct {
	Code   string
	Files  []sandbox.File
	Limits sandbox.Limits // complete (no zero fields)
}

type initResult struct {
	// Err is set when init could not build the sandbox or start the
	// program: a machinery failure.
	Err string
	// Status is the program's wait status.
	Exited   bool
	ExitCode int
	Signal   int
	TimedOut bool
	DiskFull bool
	Started  time.Duration // from the run's arrival to the program's exec
	Ended    time.Duration // from the run's arrival to the program's end
	Reported time.Duration // from the run's arrival to this result
	Files    []sandbox.File
	Omitted  []string
}
