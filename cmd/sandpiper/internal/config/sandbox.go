package config

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
	"github.com/sandpiper-bot/sandpiper/sandbox/vercel"
)

// Sandbox is the sandbox's part of the environment. Its defaults
// are sandbox's and the backends'.
type Sandbox struct {
	Backend     string        `env:"SANDPIPER_SANDBOX"` // local, vercel or kubernetes
	Python      string        `env:"SANDPIPER_PYTHON"`
	Concurrency int           `env:"SANDPIPER_SANDBOX_CONCURRENCY"` // default: the backend's
	Timeout     time.Duration `env:"SANDPIPER_SANDBOX_TIMEOUT"`
	Memory      ByteSize      `env:"SANDPIPER_SANDBOX_MEMORY"`
	Processes   int           `env:"SANDPIPER_SANDBOX_PROCESSES"`
	CPUTime     time.Duration `env:"SANDPIPER_SANDBOX_CPU_TIME"`
	CPUs        float64       `env:"SANDPIPER_SANDBOX_CPUS"` // local, with cgroups
	OpenFiles   int           `env:"SANDPIPER_SANDBOX_OPEN_FILES"`
	Disk        ByteSize      `env:"SANDPIPER_SANDBOX_DISK"`
	Output      ByteSize      `env:"SANDPIPER_SANDBOX_OUTPUT"`
	// Preload lists the modules warm runs start with (local), comma-
	// separated; empty: every run starts cold.
	Preload string `env:"SANDPIPER_SANDBOX_PRELOAD"`

	// LongLived is set by the commands that run many programs (run, ask):
	// the backend may then prepare caches in the background.
	LongLived bool
	// OneShot is set by exec: one run follows at once, and the process
	// ends after it, so the local backend builds no sandbox ahead and
	// runs no self-test.
	OneShot bool

	// The Vercel backend. Credentials: VERCEL_OIDC_TOKEN (names its team
	// and project), or VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID.
	VercelAPIURL    string `env:"SANDPIPER_VERCEL_API_URL"`
	VercelVCPUs     int    `env:"SANDPIPER_VERCEL_VCPUS"`
	VercelOIDCToken string `env:"VERCEL_OIDC_TOKEN"`
	VercelToken     string `env:"VERCEL_TOKEN"`
	VercelTeamID    string `env:"VERCEL_TEAM_ID"`
	VercelProjectID string `env:"VERCEL_PROJECT_ID"`

	// The Kubernetes backend (agent-sandbox): a claim per run from the
	// warm pool; the kubeconfig falls back to KUBECONFIG, then in a pod
	// to its service account.
	KubernetesWarmPool     string        `env:"SANDPIPER_KUBERNETES_WARM_POOL"`
	KubernetesNamespace    string        `env:"SANDPIPER_KUBERNETES_NAMESPACE"`
	KubernetesKubeconfig   string        `env:"SANDPIPER_KUBERNETES_KUBECONFIG"`
	KubernetesContext      string        `env:"SANDPIPER_KUBERNETES_CONTEXT"`
	KubernetesReadyTimeout time.Duration `env:"SANDPIPER_KUBERNETES_READY_TIMEOUT"` // 0: the backend's default
	Kubeconfig             string        `env:"KUBECONFIG"`
}

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
	}
}

// Bounds of the sandbox settings.
const (
	maxConcurrency = 256 // sandboxes at once; each local one is a few processes
	// A run's CPUs: the kernel's least CFS quota is a hundredth of a CPU.
	minCPUs, maxCPUs float64 = 0.01, 1024
)

// validate names the variable to fix, its value and what it may be.
func (c Sandbox) validate() error {
	if err := cmp.Or(
		CheckRange("SANDPIPER_SANDBOX_TIMEOUT", c.Timeout, "more than 0s", c.Timeout <= 0),
		CheckRange("SANDPIPER_SANDBOX_MEMORY", c.Memory, "at least 16MiB", c.Memory.n < 16<<20),
		CheckRange("SANDPIPER_SANDBOX_PROCESSES", c.Processes, "at least 1", c.Processes < 1),
		CheckRange("SANDPIPER_SANDBOX_CPU_TIME", c.CPUTime, "at least 1s", c.CPUTime < time.Second),
		CheckRange("SANDPIPER_SANDBOX_CPUS", c.CPUs, fmt.Sprintf("%g to %g", minCPUs, maxCPUs), !(c.CPUs >= minCPUs && c.CPUs <= maxCPUs)),
		CheckRange("SANDPIPER_SANDBOX_OPEN_FILES", c.OpenFiles, "at least 16", c.OpenFiles < 16),
		CheckRange("SANDPIPER_SANDBOX_DISK", c.Disk, "at least 1MiB", c.Disk.n < 1<<20),
		CheckRange("SANDPIPER_SANDBOX_OUTPUT", c.Output, "at least 1KiB", c.Output.n < 1<<10),
		CheckRange("SANDPIPER_SANDBOX_CONCURRENCY", c.Concurrency, fmt.Sprintf("0 (the number of CPUs) to %d", maxConcurrency), c.Concurrency < 0 || c.Concurrency > maxConcurrency),
	); err != nil {
		return err
	}
	if err := local.CheckPreload(c.PreloadModules()); err != nil {
		return fmt.Errorf("config: SANDPIPER_SANDBOX_PRELOAD=%q: %v", c.Preload, err)
	}
	switch c.Backend {
	case "local":
	case "vercel":
		if err := CheckRange("SANDPIPER_SANDBOX_MEMORY", c.Memory,
			"at most "+sandbox.FormatSize(vercel.MaxMemory)+" with SANDPIPER_SANDBOX=vercel", c.Memory.n > vercel.MaxMemory); err != nil {
			return err
		}
		if c.VercelVCPUs != 1 && (c.VercelVCPUs < 2 || c.VercelVCPUs > 8 || c.VercelVCPUs%2 != 0) {
			return fmt.Errorf("config: SANDPIPER_VERCEL_VCPUS=%d: want 1, 2, 4, 6 or 8", c.VercelVCPUs)
		}
		if u, err := url.Parse(c.VercelAPIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("config: SANDPIPER_VERCEL_API_URL=%q is not an http(s) URL", c.VercelAPIURL)
		}
	case "kubernetes":
		if c.KubernetesWarmPool == "" {
			return errors.New("config: SANDPIPER_SANDBOX=kubernetes needs SANDPIPER_KUBERNETES_WARM_POOL, the SandboxWarmPool to claim sandboxes from")
		}
		if err := CheckRange("SANDPIPER_KUBERNETES_READY_TIMEOUT", c.KubernetesReadyTimeout, "more than 0s", c.KubernetesReadyTimeout < 0); err != nil {
			return err
		}
	default:
		return fmt.Errorf("config: SANDPIPER_SANDBOX=%q: want \"local\" (this host), \"vercel\" (Vercel Sandbox) or \"kubernetes\" (agent-sandbox on a cluster)", c.Backend)
	}
	return nil
}

// PreloadModules returns the modules of SANDPIPER_SANDBOX_PRELOAD.
func (c Sandbox) PreloadModules() []string {
	var mods []string
	for _, m := range strings.Split(c.Preload, ",") {
		if m = strings.TrimSpace(m); m != "" {
			mods = append(mods, m)
		}
	}
	return mods
}

// LoadSandbox reads the sandbox variables from the environment.
func LoadSandbox(ctx context.Context, lookup envconfig.Lookuper) (Sandbox, error) {
	d := sandbox.Limits{}.WithDefaults()
	c := Sandbox{
		Backend: "local", Python: local.DefaultPython,
		Timeout: d.Timeout, Memory: ByteSize{n: d.Memory}, Processes: d.Processes, CPUTime: d.CPUTime,
		CPUs: d.CPUs, OpenFiles: d.OpenFiles, Disk: ByteSize{n: d.DiskSize}, Output: ByteSize{n: d.Output},
		Preload:      strings.Join(local.DefaultPreload, ","),
		VercelAPIURL: vercel.DefaultAPIURL, VercelVCPUs: vercel.DefaultVCPUs,
	}
	if err := Process(ctx, lookup, &c); err != nil {
		return c, err
	}
	if v, ok := lookup.Lookup("SANDPIPER_SANDBOX_PRELOAD"); ok && v == "" {
		c.Preload = "" // set and empty: warming off (envconfig keeps the default)
	}
	return c, c.validate()
}

// Backend is a sandbox backend, as the commands use it.
type Backend interface {
	Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	Close() error
}

// ErrNotLinked is New's error for a backend this package does not build
// (kubernetes): its client takes long to initialise, so only the binaries
// that run it link it (cmd/sandpiper does; sandpiper-exec does not).
var ErrNotLinked = errors.New("config: this binary does not link the configured sandbox backend")

// New builds the configured backend: local or vercel; any other is
// [ErrNotLinked].
func (c Sandbox) New(ctx context.Context, log *slog.Logger) (Backend, error) {
	if c.Backend != "local" && c.Backend != "vercel" {
		return nil, fmt.Errorf("%w (SANDPIPER_SANDBOX=%s)", ErrNotLinked, c.Backend)
	}
	if c.Backend == "vercel" {
		s, err := vercel.New(ctx, vercel.Config{
			APIURL:      c.VercelAPIURL,
			Token:       c.VercelToken,
			TeamID:      c.VercelTeamID,
			ProjectID:   c.VercelProjectID,
			OIDCToken:   c.VercelOIDCToken,
			VCPUs:       c.VercelVCPUs,
			Concurrency: c.Concurrency,
			Limits:      c.Limits(),
			Logger:      log,
		})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	}
	concurrency := c.Concurrency
	if !c.LongLived {
		concurrency = 1 // one run (exec, doctor): build no pool of sandboxes
	}
	s, err := local.New(ctx, local.Config{
		Python:        c.Python,
		Concurrency:   concurrency,
		Limits:        c.Limits(),
		PrepareCaches: c.LongLived,
		OneShot:       c.OneShot,
		ProbeCache:    probeCacheDir(),
		Preload:       c.PreloadModules(),
		Logger:        log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// probeCacheDir is where the local backend keeps what it learns about the
// interpreter, so that a start need not run it: sandpiper in the user's
// cache directory ($XDG_CACHE_HOME, ~/.cache), or nowhere.
func probeCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "sandpiper")
}
