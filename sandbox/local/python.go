package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Python describes the resolved interpreter: what the sandbox mounts of it
// and runs.
type Python struct {
	Executable string   // the real executable, symbolic links resolved
	Version    string   // e.g. "3.11.2"
	Prefixes   []string // sys.prefix, sys.base_prefix, ... (deduplicated)
	// Site holds its site-packages and standard-library directories
	// (site.getsitepackages and sysconfig's stdlib, platstdlib, purelib and
	// platlib), where they exist.
	Site []string
	// Path holds the sys.path entries of an isolated run that exist and
	// lie under Prefixes or Site.
	Path []string
	// Outside holds the sys.path entries left out of Path: directories a
	// .pth file in a site directory names elsewhere on the host. They are
	// not mounted.
	Outside []string
}

// probePython reports the interpreter as it runs in isolated mode (-I):
// no user site directory (and none of its .pth files), no PYTHON*
// variables, no working directory on the path.
const probePython = `import json, os, site, sys, sysconfig
paths = sysconfig.get_paths()
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "version": "%d.%d.%d" % sys.version_info[:3],
    "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
    "site": site.getsitepackages() + [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths],
    "path": [p for p in sys.path if p and os.path.isdir(p)],
}))`

// probeExecutable prints the real executable behind a shim; -S skips the
// site module, so no .pth file of any site directory is read.
const probeExecutable = `import os, sys; print(os.path.realpath(sys.executable))`

// resolvePython finds the configured interpreter and learns, on the host,
// what the sandbox must mount of it. A shim (pyenv, asdf) is run once, with
// the few variables shims need, only to learn the real executable; that
// executable is then probed in isolated mode with an empty environment, so
// that nothing of the bot's home (a user-site .pth file naming any host
// directory) decides what the sandbox sees.
func resolvePython(ctx context.Context, name string) (*Python, error) {
	if name == "" {
		name = DefaultPython
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: find python %q (set SANDPIPER_PYTHON): %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	exe, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("sandbox: python %q (set SANDPIPER_PYTHON): %w", p, err)
	}
	if !isELF(exe) { // a shim
		// Only what shims need: never the bot's secrets.
		env := []string{"LANG=C.UTF-8"}
		for _, k := range []string{"PATH", "HOME", "PYENV_ROOT", "PYENV_VERSION", "ASDF_DIR", "ASDF_DATA_DIR"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		out, err := runProbe(ctx, p, env, "-I", "-S", "-c", probeExecutable)
		if err != nil {
			return nil, err
		}
		exe = strings.TrimSpace(string(out))
		if !filepath.IsAbs(exe) {
			return nil, fmt.Errorf("sandbox: python %q (set SANDPIPER_PYTHON): it names its executable %q", p, exe)
		}
	}
	out, err := runProbe(ctx, exe, []string{"LANG=C.UTF-8"}, "-I", "-c", probePython)
	if err != nil {
		return nil, err
	}
	var info struct {
		Executable string
		Version    string
		Prefixes   []string
		Site       []string
		Path       []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("sandbox: python %q: unexpected probe output %q: %w", exe, out, err)
	}
	py := &Python{Executable: info.Executable, Version: info.Version}
	seen := map[string]bool{}
	var roots []string // the prefixes and site directories, as given and resolved
	for _, pre := range info.Prefixes {
		pre = filepath.Clean(pre)
		roots = append(roots, pre)
		if real, err := filepath.EvalSymlinks(pre); err == nil {
			pre = real
		}
		if !seen[pre] {
			seen[pre] = true
			py.Prefixes = append(py.Prefixes, pre)
		}
	}
	for _, d := range info.Site {
		d = filepath.Clean(d)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !seen[d] {
			seen[d] = true
			py.Site = append(py.Site, d)
		}
	}
	roots = append(append(roots, py.Prefixes...), py.Site...)
	for _, d := range info.Path {
		d = filepath.Clean(d)
		if underAny(d, roots) {
			py.Path = append(py.Path, d)
		} else {
			py.Outside = append(py.Outside, d)
		}
	}
	return py, nil
}

// runProbe runs the interpreter (or its shim) with args and env from the
// root directory and returns its standard output.
func runProbe(ctx context.Context, python string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Env = env
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: run python %q (set SANDPIPER_PYTHON): %w: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// isELF reports whether the file at path is an executable binary, as
// opposed to a script such as a pyenv or asdf shim.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}

// underAny reports whether the clean absolute path p is one of roots or
// lies under one of them.
func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}
