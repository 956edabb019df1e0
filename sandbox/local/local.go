package local

import (
	"log/slog"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// MemoryMargin is what a run may cost the host beyond its memory limit,
// in every mode (see the package doc's "Memory and CPU, by mode"): kernel
// memory no process maps that the cgroup or init's watcher does not count
// exactly, and what a run can add between two of the watcher's looks.
const MemoryMargin = 64 << 20

// DefaultPython is the interpreter when [Config.Python] is empty.
const DefaultPython = "python3"

// Config configures a [Sandbox]. Zero fields take defaults.
type Config struct {
	// Python is the interpreter: a path or a name looked up in PATH
	// (default DefaultPython). It is resolved once, through shims, to the
	// real executable and its prefix.
	Python string
	// Concurrency bounds runs at once (default: number of CPUs).
	Concurrency int
	// Limits are the defaults for requests; a request's own non-zero
	// limits win.
	Limits sandbox.Limits
	// PrepareCaches builds, in the background after start-up, what
	// libraries would otherwise rebuild in every run (matplotlib's font
	// list: a few hundred milliseconds per plot). It costs one run's worth
	// of time, so it is for long-lived use: the bot, a chat.
	PrepareCaches bool
	// OneShot is for a process that makes one run and exits (sandpiper
	// exec): no sandbox is built ahead of the run, no self-test runs at
	// start-up (a sandbox that cannot be created is explained when the run
	// fails instead), and PrepareCaches and Preload are ignored: the run
	// starts cold. New starts the helper process while it resolves the
	// rest, and Close does not wait for it to exit: the process's exit
	// ends it.
	OneShot bool
	// ProbeCache is a directory in which to keep what is learnt about the
	// interpreter by running it, so that a later start need not run it
	// again: one file per interpreter, used while the executable's path,
	// size and modification time, and the modification times of its
	// install's directories, are unchanged. A shim's answer is kept too,
	// while the files and variables that pick its version are unchanged.
	// Empty: nothing is kept.
	ProbeCache string
	// Preload lists modules ("numpy", "matplotlib.pyplot") that the
	// sandboxes kept ready import ahead of their run, while no run is in
	// flight, so that a run using them starts with them imported: a warm
	// run. Each sandbox is still used once and destroyed after; only the
	// pool warms, so a Sandbox that never keeps sandboxes ready never
	// does. Modules the interpreter lacks are left out (New logs them);
	// empty: every run starts cold. See [DefaultPreload].
	Preload []string
	// Logger receives start-up facts and cleanup failures (default: discard).
	Logger *slog.Logger
}
