package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Python describes the resolved interpreter.
type Python struct {
	Executable string   // the real executable, symbolic links resolved
	Version    string   // e.g. "3.11.2"
	Prefixes   []string // sys.prefix, sys.base_prefix, ... (deduplicated)
	Path       []string // sys.path entries that exist
}

const probePython = `import json, os, sys
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "version": "%d.%d.%d" % sys.version_info[:3],
    "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
    "path": [p for p in sys.path if p and os.path.isdir(p)],
}))`

// resolvePython runs the configured interpreter once on the host, through
// any shim (pyenv, asdf), to learn the real executable and its prefixes.
func resolvePython(ctx context.Context, name string) (*Python, error) {
	if name == "" {
		name = "python3"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: find python %q (set SANDPIPER_PYTHON): %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, "-c", probePython)
	// Only what shims need: never the bot's secrets.
	cmd.Env = []string{"LANG=C.UTF-8"}
	for _, k := range []string{"PATH", "HOME", "PYENV_ROOT", "PYENV_VERSION", "ASDF_DIR", "ASDF_DATA_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: run python %q (set SANDPIPER_PYTHON): %w: %s", p, err, strings.TrimSpace(stderr.String()))
	}
	var info struct {
		Executable string
		Version    string
		Prefixes   []string
		Path       []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("sandbox: python %q: unexpected probe output %q: %w", p, out, err)
	}
	py := &Python{Executable: info.Executable, Version: info.Version, Path: info.Path}
	seen := map[string]bool{}
	for _, pre := range info.Prefixes {
		pre = filepath.Clean(pre)
		if real, err := filepath.EvalSymlinks(pre); err == nil {
			pre = real
		}
		if !seen[pre] {
			seen[pre] = true
			py.Prefixes = append(py.Prefixes, pre)
		}
	}
	return py, nil
}
