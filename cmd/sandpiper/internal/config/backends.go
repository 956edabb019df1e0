package config

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
	"github.com/sandpiper-bot/sandpiper/sandbox/vercel"
)

// Settings are one backend's own part of the environment, an env struct
// (a pointer to one) that [LoadSandbox] fills, checks and builds the
// backend from. A backend's entry in the registry ([Register]) makes its
// settings with their defaults.
type Settings interface {
	// Check returns the first setting out of range, naming its variable;
	// c holds the shared settings, checked already.
	Check(c Sandbox) error
	// New builds the backend.
	New(ctx context.Context, c Sandbox, log *slog.Logger) (Runner, error)
}

// Prechecker is implemented by Settings whose backend has checks of its
// own for sandpiper doctor (the cluster's: reachable, CRDs, RBAC, the
// pool, one run): doctor runs them, and builds the backend for its other
// checks only when they pass.
type Prechecker interface {
	Precheck(ctx context.Context, c Sandbox, log *slog.Logger) []Check
}

// Check is one line of sandpiper doctor's report.
type Check struct {
	Name   string
	OK     bool
	Warn   bool // passed, with a caution
	Detail string
}

var (
	registryMu sync.RWMutex
	// registry is every linked backend, by name: local and vercel, which
	// every binary links, and those a binary registers.
	registry = map[string]func() Settings{
		sandbox.BackendLocal: func() Settings {
			return &Local{Preload: strings.Join(local.DefaultPreload, ",")}
		},
		sandbox.BackendVercel: func() Settings {
			return &Vercel{APIURL: vercel.DefaultAPIURL, VCPUs: vercel.DefaultVCPUs}
		},
	}
)

// Register links the backend name (one of sandbox.Backends) into this
// binary: defaults makes its settings with their defaults. It is for the
// backends whose packages not every binary links (cmd/sandpiper registers
// the cluster's; sandpiper-exec does not), in the manner of
// database/sql's drivers. It panics if name is not a backend, or is
// registered already.
func Register(name string, defaults func() Settings) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if !slices.Contains(sandbox.Backends, name) {
		panic("config: Register of an unknown sandbox backend " + name)
	}
	if _, dup := registry[name]; dup {
		panic("config: Register called twice for sandbox backend " + name)
	}
	registry[name] = defaults
}

// Registered returns the names of the backends this binary links, in
// sandbox.Backends' order.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var names []string
	for _, name := range sandbox.Backends {
		if _, ok := registry[name]; ok {
			names = append(names, name)
		}
	}
	return names
}

// DefaultSettings returns the settings of the backend name with their
// defaults, or false when this binary does not link it.
func DefaultSettings(name string) (Settings, bool) {
	defaults, ok := registered(name)
	if !ok {
		return nil, false
	}
	return defaults(), true
}

func registered(name string) (func() Settings, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	defaults, ok := registry[name]
	return defaults, ok
}

// Local is the local backend's settings (SANDPIPER_SANDBOX=local).
type Local struct {
	// Python is the interpreter; empty, New chooses one (see Choice).
	Python string `env:"SANDPIPER_PYTHON"`
	// Preload lists the modules warm runs start with, comma-separated;
	// empty: every run starts cold.
	Preload string `env:"SANDPIPER_SANDBOX_PRELOAD"`

	// Choice is, after New, how the interpreter was chosen when Python
	// was empty: one with the data modules ([local.ChoosePython]).
	Choice *local.Choice
}

// DataModules are the modules data questions, files and charts need: an
// interpreter is chosen for having them, run warns and ask says so when
// the sandbox's lacks one, and doctor fails.
var DataModules = []string{"numpy", "pandas", "matplotlib", "scipy", "sympy", "openpyxl"}

// PreloadModules returns the modules of SANDPIPER_SANDBOX_PRELOAD.
func (l *Local) PreloadModules() []string {
	var mods []string
	for _, m := range strings.Split(l.Preload, ",") {
		if m = strings.TrimSpace(m); m != "" {
			mods = append(mods, m)
		}
	}
	return mods
}

// Check checks the modules to preload.
func (l *Local) Check(Sandbox) error {
	if err := local.CheckPreload(l.PreloadModules()); err != nil {
		return &SettingError{Name: "SANDPIPER_SANDBOX_PRELOAD", Value: l.Preload, Problem: "is not a list of modules (" + err.Error() + ")",
			Want: "module names, comma-separated, e.g. SANDPIPER_SANDBOX_PRELOAD=numpy,pandas"}
	}
	return nil
}

// New builds the local backend (for one run, exec and doctor, with no pool
// of sandboxes), choosing the interpreter when SANDPIPER_PYTHON is not set.
func (l *Local) New(ctx context.Context, c Sandbox, log *slog.Logger) (Runner, error) {
	concurrency := c.Concurrency
	if !c.LongLived {
		concurrency = 1
	}
	python := l.Python
	if python == "" {
		c := local.ChoosePython(ctx, DataModules, probeCacheDir())
		l.Choice, python = &c, c.Python
	}
	s, err := local.New(ctx, local.Config{
		Python:        python,
		Concurrency:   concurrency,
		Limits:        c.Limits(),
		PrepareCaches: c.LongLived,
		OneShot:       c.OneShot,
		ProbeCache:    probeCacheDir(),
		Preload:       l.PreloadModules(),
		Logger:        log,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
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

// Vercel is the Vercel backend's settings (SANDPIPER_SANDBOX=vercel).
// Credentials: VERCEL_OIDC_TOKEN (names its team and project), or
// VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID.
type Vercel struct {
	APIURL    string `env:"SANDPIPER_VERCEL_API_URL"`
	VCPUs     int    `env:"SANDPIPER_VERCEL_VCPUS"`
	OIDCToken string `env:"VERCEL_OIDC_TOKEN"`
	Token     string `env:"VERCEL_TOKEN"`
	TeamID    string `env:"VERCEL_TEAM_ID"`
	ProjectID string `env:"VERCEL_PROJECT_ID"`
}

// Check checks the memory a VM can have, the vCPUs and the API's URL.
func (v *Vercel) Check(c Sandbox) error {
	var bad []error
	if u, err := url.Parse(v.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		bad = append(bad, &SettingError{Name: "SANDPIPER_VERCEL_API_URL", Value: v.APIURL, Problem: "is not an http(s) URL", Want: "e.g. SANDPIPER_VERCEL_API_URL=" + vercel.DefaultAPIURL})
	}
	return Join(append(bad,
		CheckRange("SANDPIPER_SANDBOX_MEMORY", c.Memory, "at most "+sandbox.FormatSize(vercel.MaxMemory)+" with SANDPIPER_SANDBOX=vercel", c.Memory.n > vercel.MaxMemory),
		CheckRange("SANDPIPER_VERCEL_VCPUS", v.VCPUs, "1, 2, 4, 6 or 8", v.VCPUs != 1 && (v.VCPUs < 2 || v.VCPUs > 8 || v.VCPUs%2 != 0)),
	)...)
}

// New builds the Vercel backend, checking the credentials.
func (v *Vercel) New(ctx context.Context, c Sandbox, log *slog.Logger) (Runner, error) {
	s, err := vercel.New(ctx, vercel.Config{
		APIURL:      v.APIURL,
		Token:       v.Token,
		TeamID:      v.TeamID,
		ProjectID:   v.ProjectID,
		OIDCToken:   v.OIDCToken,
		VCPUs:       v.VCPUs,
		Concurrency: c.Concurrency,
		Limits:      c.Limits(),
		Logger:      log,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}
