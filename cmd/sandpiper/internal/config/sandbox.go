package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Sandbox is the sandbox's part of the environment: the backend's name,
// the settings every backend shares (how many runs at once, the limits),
// and the chosen backend's own settings ([Sandbox.Settings]). Its defaults
// are sandbox's and the backends'.
type Sandbox struct {
	Backend     string        `env:"SANDPIPER_SANDBOX"`             // one of sandbox.Backends
	Concurrency int           `env:"SANDPIPER_SANDBOX_CONCURRENCY"` // default: the backend's
	Timeout     time.Duration `env:"SANDPIPER_SANDBOX_TIMEOUT"`
	Memory      ByteSize      `env:"SANDPIPER_SANDBOX_MEMORY"`
	Processes   int           `env:"SANDPIPER_SANDBOX_PROCESSES"`
	CPUTime     time.Duration `env:"SANDPIPER_SANDBOX_CPU_TIME"`
	CPUs        float64       `env:"SANDPIPER_SANDBOX_CPUS"` // local, with cgroups
	OpenFiles   int           `env:"SANDPIPER_SANDBOX_OPEN_FILES"`
	Disk        ByteSize      `env:"SANDPIPER_SANDBOX_DISK"`
	Output      ByteSize      `env:"SANDPIPER_SANDBOX_OUTPUT"`

	// StateSize bounds a stateful run's state, in bytes: the commands
	// that keep state set it from SANDPIPER_STATE_MAX_SIZE ([State]);
	// 0: sandbox's default.
	StateSize int64
	// LongLived is set by the commands that run many programs (run, ask):
	// the backend may then prepare caches in the background.
	LongLived bool
	// OneShot is set by exec: one run follows at once, and the process
	// ends after it, so the local backend builds no sandbox ahead, runs no
	// self-test and starts the run cold.
	OneShot bool

	settings Settings
}

// Limits are the limits the backend is given; it reports them back, as
// runs get them, in its Info.
func (c Sandbox) Limits() sandbox.Limits {
	return sandbox.Limits{
		Timeout:   c.Timeout,
		Memory:    c.Memory.n,
		Processes: c.Processes,
		CPUTime:   c.CPUTime,
		CPUs:      c.CPUs,
		OpenFiles: c.OpenFiles,
		DiskSize:  c.Disk.n,
		Output:    c.Output.n,
		StateSize: c.StateSize,
	}
}

// Settings are the chosen backend's own settings, read by [LoadSandbox]:
// *[Local], *[Vercel], or those of a backend registered elsewhere; nil
// when this binary does not link the backend.
func (c Sandbox) Settings() Settings { return c.settings }

// Bounds of the sandbox settings.
const (
	maxConcurrency = 256 // sandboxes at once; each local one is a few processes
	// A run's CPUs: the kernel's least CFS quota is a hundredth of a CPU.
	minCPUs, maxCPUs float64 = 0.01, 1024
)

// validate names the variable to fix, its value and what it may be.
func (c Sandbox) validate() error {
	return Join(
		CheckRange("SANDPIPER_SANDBOX_TIMEOUT", c.Timeout, "more than 0s", c.Timeout <= 0),
		CheckRange("SANDPIPER_SANDBOX_MEMORY", c.Memory, "at least 16MiB", c.Memory.n < 16<<20),
		CheckRange("SANDPIPER_SANDBOX_PROCESSES", c.Processes, "at least 1", c.Processes < 1),
		CheckRange("SANDPIPER_SANDBOX_CPU_TIME", c.CPUTime, "at least 1s", c.CPUTime < time.Second),
		CheckRange("SANDPIPER_SANDBOX_CPUS", c.CPUs, fmt.Sprintf("%g to %g", minCPUs, maxCPUs), !(c.CPUs >= minCPUs && c.CPUs <= maxCPUs)),
		CheckRange("SANDPIPER_SANDBOX_OPEN_FILES", c.OpenFiles, "at least 16", c.OpenFiles < 16),
		CheckRange("SANDPIPER_SANDBOX_DISK", c.Disk, "at least 1MiB", c.Disk.n < 1<<20),
		CheckRange("SANDPIPER_SANDBOX_OUTPUT", c.Output, "at least 1KiB", c.Output.n < 1<<10),
		CheckRange("SANDPIPER_SANDBOX_CONCURRENCY", c.Concurrency, fmt.Sprintf("0 (the number of CPUs) to %d", maxConcurrency), c.Concurrency < 0 || c.Concurrency > maxConcurrency),
	)
}

// LoadSandbox reads the sandbox variables from the environment: the
// shared ones, then the chosen backend's own. A backend this binary does
// not link (see [Register]) is left to [Sandbox.New] to refuse with
// [ErrNotLinked], unchecked.
func LoadSandbox(ctx context.Context, lookup envconfig.Lookuper) (Sandbox, error) {
	d := sandbox.Limits{}.WithDefaults()
	c := Sandbox{
		Backend: sandbox.Backends[0],
		Timeout: d.Timeout, Memory: ByteSize{n: d.Memory}, Processes: d.Processes, CPUTime: d.CPUTime,
		CPUs: d.CPUs, OpenFiles: d.OpenFiles, Disk: ByteSize{n: d.DiskSize}, Output: ByteSize{n: d.Output},
	}
	shared := Join(Process(ctx, lookup, &c), c.validate())
	defaults, ok := registered(c.Backend)
	switch {
	case !ok && slices.Contains(sandbox.Backends, c.Backend):
		return c, shared
	case !ok:
		return c, Join(shared, &SettingError{Name: "SANDPIPER_SANDBOX", Value: c.Backend, Problem: "is not a sandbox backend",
			Want: `local (this host), vercel (Vercel Sandbox) or kubernetes (agent-sandbox on a cluster), e.g. SANDPIPER_SANDBOX=local`})
	}
	c.settings = defaults()
	err := Process(ctx, lookup, c.settings)
	if l, ok := c.settings.(*Local); ok {
		if v, set := lookup.Lookup("SANDPIPER_SANDBOX_PRELOAD"); set && strings.TrimSpace(v) == "" {
			l.Preload = "" // set and empty: warming off
		}
	}
	return c, Join(shared, err, c.settings.Check(c))
}

// Runner is a sandbox backend, as the commands use it.
type Runner interface {
	Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	Info() sandbox.Info
	Close() error
}

// ErrNotLinked is New's error for a backend this binary does not link:
// the cluster's client takes long to initialise, so only the binaries
// that run it link it (cmd/sandpiper does; sandpiper-exec does not).
var ErrNotLinked = errors.New("config: this binary does not link the configured sandbox backend")

// New builds the configured backend, or fails with [ErrNotLinked].
func (c Sandbox) New(ctx context.Context, log *slog.Logger) (Runner, error) {
	if c.settings == nil {
		return nil, fmt.Errorf("%w (SANDPIPER_SANDBOX=%s)", ErrNotLinked, c.Backend)
	}
	return c.settings.New(ctx, c, log)
}
