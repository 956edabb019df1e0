package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
	"github.com/sandpiper-bot/sandpiper/sandbox/vercel"
)

// sandboxConfig is the sandbox's part of the environment.
type sandboxConfig struct {
	Backend     string        `env:"SANDPIPER_SANDBOX, default=local"` // local or vercel
	Python      string        `env:"SANDPIPER_PYTHON, default=python3"`
	Concurrency int           `env:"SANDPIPER_SANDBOX_CONCURRENCY"` // default: number of CPUs (local), 10 (vercel)
	Timeout     time.Duration `env:"SANDPIPER_SANDBOX_TIMEOUT, default=30s"`
	Memory      byteSize      `env:"SANDPIPER_SANDBOX_MEMORY, default=512MiB"`
	Processes   int           `env:"SANDPIPER_SANDBOX_PROCESSES, default=64"`
	CPUTime     time.Duration `env:"SANDPIPER_SANDBOX_CPU_TIME, default=60s"`
	CPUs        float64       `env:"SANDPIPER_SANDBOX_CPUS, default=1"` // local, with cgroups
	OpenFiles   int           `env:"SANDPIPER_SANDBOX_OPEN_FILES, default=256"`
	Disk        byteSize      `env:"SANDPIPER_SANDBOX_DISK, default=64MiB"`
	Output      byteSize      `env:"SANDPIPER_SANDBOX_OUTPUT, default=1MiB"`
	// Preload lists the modules warm runs start with (local); empty: every
	// run starts cold. The default is local.DefaultPreload.
	Preload string `env:"SANDPIPER_SANDBOX_PRELOAD, default=numpy,pandas,matplotlib.pyplot"`

	// longLived is set by the commands that run many programs (run, ask):
	// the backend may then prepare caches in the background.
	longLived bool

	// The Vercel backend. Credentials: VERCEL_OIDC_TOKEN (names its team
	// and project), or VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID.
	VercelAPIURL    string `env:"SANDPIPER_VERCEL_API_URL, default=https://api.vercel.com"`
	VercelVCPUs     int    `env:"SANDPIPER_VERCEL_VCPUS, default=1"`
	VercelOIDCToken string `env:"VERCEL_OIDC_TOKEN"`
	VercelToken     string `env:"VERCEL_TOKEN"`
	VercelTeamID    string `env:"VERCEL_TEAM_ID"`
	VercelProjectID string `env:"VERCEL_PROJECT_ID"`
}

func (c sandboxConfig) limits() sandbox.Limits {
	return sandbox.Limits{
		Timeout:   c.Timeout,
		Memory:    int64(c.Memory),
		Processes: c.Processes,
		CPUTime:   c.CPUTime,
		CPUs:      c.CPUs,
		OpenFiles: c.OpenFiles,
		DiskSize:  int64(c.Disk),
		Output:    int64(c.Output),
	}
}

// Bounds of the sandbox settings.
const (
	maxConcurrency = 256 // sandboxes at once; each local one is a few processes
	// A run's CPUs: the kernel's least CFS quota is a hundredth of a CPU.
	minCPUs, maxCPUs float64 = 0.01, 1024
)

// validate names the variable to fix, its value and what it may be.
func (c sandboxConfig) validate() error {
	size := func(n byteSize) string { return formatSize(int64(n)) }
	if err := checkRanges(
		rangeCheck{"SANDPIPER_SANDBOX_TIMEOUT", c.Timeout.String(), "more than 0s", c.Timeout <= 0},
		rangeCheck{"SANDPIPER_SANDBOX_MEMORY", size(c.Memory), "at least 16MiB", c.Memory < 16<<20},
		rangeCheck{"SANDPIPER_SANDBOX_PROCESSES", strconv.Itoa(c.Processes), "at least 1", c.Processes < 1},
		rangeCheck{"SANDPIPER_SANDBOX_CPU_TIME", c.CPUTime.String(), "at least 1s", c.CPUTime < time.Second},
		rangeCheck{"SANDPIPER_SANDBOX_CPUS", strconv.FormatFloat(c.CPUs, 'g', -1, 64), fmt.Sprintf("%g to %g", minCPUs, maxCPUs), !(c.CPUs >= minCPUs && c.CPUs <= maxCPUs)},
		rangeCheck{"SANDPIPER_SANDBOX_OPEN_FILES", strconv.Itoa(c.OpenFiles), "at least 16", c.OpenFiles < 16},
		rangeCheck{"SANDPIPER_SANDBOX_DISK", size(c.Disk), "at least 1MiB", c.Disk < 1<<20},
		rangeCheck{"SANDPIPER_SANDBOX_OUTPUT", size(c.Output), "at least 1KiB", c.Output < 1<<10},
		rangeCheck{"SANDPIPER_SANDBOX_CONCURRENCY", strconv.Itoa(c.Concurrency), fmt.Sprintf("0 (the number of CPUs) to %d", maxConcurrency), c.Concurrency < 0 || c.Concurrency > maxConcurrency},
	); err != nil {
		return err
	}
	if err := local.CheckPreload(c.preload()); err != nil {
		return fmt.Errorf("config: SANDPIPER_SANDBOX_PRELOAD=%q: %v", c.Preload, err)
	}
	switch c.Backend {
	case "local":
	case "vercel":
		if err := checkRanges(rangeCheck{"SANDPIPER_SANDBOX_MEMORY", formatSize(int64(c.Memory)),
			"at most " + formatSize(vercel.MaxMemory) + " with SANDPIPER_SANDBOX=vercel", int64(c.Memory) > vercel.MaxMemory}); err != nil {
			return err
		}
		if c.VercelVCPUs != 1 && (c.VercelVCPUs < 2 || c.VercelVCPUs > 8 || c.VercelVCPUs%2 != 0) {
			return fmt.Errorf("config: SANDPIPER_VERCEL_VCPUS=%d: want 1, 2, 4, 6 or 8", c.VercelVCPUs)
		}
		if u, err := url.Parse(c.VercelAPIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("config: SANDPIPER_VERCEL_API_URL=%q is not an http(s) URL", c.VercelAPIURL)
		}
	default:
		return fmt.Errorf("config: SANDPIPER_SANDBOX=%q: want \"local\" (this host) or \"vercel\" (Vercel Sandbox)", c.Backend)
	}
	return nil
}

// preload returns the modules of SANDPIPER_SANDBOX_PRELOAD.
func (c sandboxConfig) preload() []string {
	var mods []string
	for _, m := range strings.Split(c.Preload, ",") {
		if m = strings.TrimSpace(m); m != "" {
			mods = append(mods, m)
		}
	}
	return mods
}

// loadSandboxConfig reads the sandbox variables from the environment.
func loadSandboxConfig(ctx context.Context, lookup envconfig.Lookuper) (sandboxConfig, error) {
	var c sandboxConfig
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: lookup}); err != nil {
		return c, fmt.Errorf("config: %s", envNames(err.Error(), c))
	}
	return c, c.validate()
}

// sandboxBackend is what the commands need of a sandbox backend.
type sandboxBackend interface {
	Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	Close() error
}

// newSandbox builds the configured backend.
func newSandbox(ctx context.Context, c sandboxConfig, log *slog.Logger) (sandboxBackend, error) {
	if c.Backend == "vercel" {
		s, err := vercel.New(ctx, vercel.Config{
			APIURL:      c.VercelAPIURL,
			Token:       c.VercelToken,
			TeamID:      c.VercelTeamID,
			ProjectID:   c.VercelProjectID,
			OIDCToken:   c.VercelOIDCToken,
			VCPUs:       c.VercelVCPUs,
			Concurrency: c.Concurrency,
			Limits:      c.limits(),
			Logger:      log,
		})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	}
	concurrency := c.Concurrency
	if !c.longLived {
		concurrency = 1 // one run (exec, doctor): build no pool of sandboxes
	}
	s, err := local.New(ctx, local.Config{
		Python:        c.Python,
		Concurrency:   concurrency,
		Limits:        c.limits(),
		PrepareCaches: c.longLived,
		Preload:       c.preload(),
		Logger:        log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// byteSize is a size in bytes written as 512MiB, 64MB, 1G or 4096.
type byteSize int64

func (b *byteSize) EnvDecode(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 512MiB, 64MB, 4096)", s)
	}
	const maxSize = 1 << 50 // 1 PiB: more than any sandbox has

	mult := map[string]int64{
		"": 1, "b": 1,
		"k": 1 << 10, "kb": 1000, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1000 * 1000, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1000 * 1000 * 1000, "gib": 1 << 30,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q", s, unit)
	}
	if n > maxSize/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return n * mult, nil
}

// formatSize writes n bytes as it was likely written: with the largest
// binary, else decimal, unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
