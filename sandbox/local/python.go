package local

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// directory) decides what the sandbox sees. With a cache directory, both
// answers are kept there, and reused while what they depend on is
// unchanged (see [Config.ProbeCache]).
func resolvePython(ctx context.Context, name, cacheDir string) (*Python, error) {
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
	if !IsELF(exe) { // a shim
		if exe, err = resolveShim(ctx, p, cacheDir); err != nil {
			return nil, err
		}
	}
	info, err := probe(ctx, exe, cacheDir)
	if err != nil {
		return nil, err
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

// probeInfo is what probePython prints.
type probeInfo struct {
	Executable string
	Version    string
	Prefixes   []string
	Site       []string
	Path       []string
}

// probe runs probePython with the interpreter exe, or takes its answer
// from the cache.
func probe(ctx context.Context, exe, cacheDir string) (*probeInfo, error) {
	var c probeCache
	file := cacheFile(cacheDir, "python", exe)
	if readCache(file, &c) && c.Version == cacheVersion && c.Executable == exe && c.Stamp == stampOf(exe) && c.Info != nil && c.dirsUnchanged() {
		return c.Info, nil
	}
	out, err := runProbe(ctx, exe, []string{"LANG=C.UTF-8"}, "-I", "-c", probePython)
	if err != nil {
		return nil, err
	}
	var info probeInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("sandbox: python %q: unexpected probe output %q: %w", exe, out, err)
	}
	if file != "" {
		c = probeCache{Version: cacheVersion, Executable: exe, Stamp: stampOf(exe), Info: &info, Dirs: map[string]string{}}
		// A package installed or removed, a .pth file added, a site
		// directory created: each changes the time of a directory the
		// probe named.
		for _, d := range slices.Concat(info.Prefixes, info.Site, info.Path) {
			c.Dirs[d] = stampOf(d)
		}
		writeCache(file, &c)
	}
	return &info, nil
}

// resolveShim runs the shim at p to learn the real executable behind it,
// or takes the answer from the cache.
func resolveShim(ctx context.Context, p, cacheDir string) (string, error) {
	// Only what shims need: never the bot's secrets.
	env := []string{"LANG=C.UTF-8"}
	for _, k := range []string{"PATH", "HOME", "PYENV_ROOT", "PYENV_VERSION", "ASDF_DIR", "ASDF_DATA_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	var c shimCache
	file := cacheFile(cacheDir, "shim", p+"\x00"+strings.Join(env, "\x00"))
	if readCache(file, &c) && c.Version == cacheVersion && c.Shim == p && slices.Equal(c.Env, env) &&
		c.Stamp == stampOf(p) && c.filesUnchanged() && c.Executable != "" && IsELF(c.Executable) {
		return c.Executable, nil
	}
	out, err := runProbe(ctx, p, env, "-I", "-S", "-c", probeExecutable)
	if err != nil {
		return "", err
	}
	exe := strings.TrimSpace(string(out))
	if !filepath.IsAbs(exe) {
		return "", fmt.Errorf("sandbox: python %q (set SANDPIPER_PYTHON): it names its executable %q", p, exe)
	}
	if file != "" {
		c = shimCache{Version: cacheVersion, Shim: p, Env: env, Stamp: stampOf(p), Executable: exe, Files: map[string]string{}}
		for _, f := range shimVersionFiles(env) {
			c.Files[f] = stampOf(f)
		}
		writeCache(file, &c)
	}
	return exe, nil
}

// shimVersionFiles are the files by which pyenv and asdf choose a
// version, for a shim run from / (as runProbe runs it) with env.
func shimVersionFiles(env []string) []string {
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	home := get("HOME")
	pyenvRoot := cmp.Or(get("PYENV_ROOT"), filepath.Join(home, ".pyenv"))
	asdfData := cmp.Or(get("ASDF_DATA_DIR"), filepath.Join(home, ".asdf"))
	return []string{
		"/.python-version", "/.tool-versions",
		filepath.Join(pyenvRoot, "version"),
		filepath.Join(pyenvRoot, "versions"), // a version installed or removed
		filepath.Join(home, ".tool-versions"),
		filepath.Join(asdfData, "installs", "python"),
	}
}

// The cache files. cacheVersion changes when their meaning does.
const cacheVersion = 1

type probeCache struct {
	Version    int
	Executable string
	Stamp      string
	Dirs       map[string]string
	Info       *probeInfo
}

func (c *probeCache) dirsUnchanged() bool {
	for d, st := range c.Dirs {
		if stampOf(d) != st {
			return false
		}
	}
	return len(c.Dirs) > 0
}

type shimCache struct {
	Version    int
	Shim       string
	Env        []string
	Stamp      string
	Files      map[string]string
	Executable string
}

func (c *shimCache) filesUnchanged() bool {
	for f, st := range c.Files {
		if stampOf(f) != st {
			return false
		}
	}
	return true
}

// stampOf identifies a version of the file or directory at path: its
// size and modification time, or "absent".
func stampOf(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	return fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
}

// cacheFile names the cache file for key in dir ("" without a dir).
func cacheFile(dir, kind, key string) string {
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, kind+"-"+hex.EncodeToString(sum[:8])+".json")
}

// readCache decodes the cache file into v; it reports whether it could.
func readCache(file string, v any) bool {
	if file == "" {
		return false
	}
	b, err := os.ReadFile(file)
	return err == nil && json.Unmarshal(b, v) == nil
}

// writeCache writes v to the cache file, through a temporary file renamed
// over it. A cache that cannot be written is no error: the next start
// probes again.
func writeCache(file string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	dir := filepath.Dir(file)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), file) != nil {
		os.Remove(f.Name())
	}
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

// IsELF reports whether the file at path is an executable binary, as
// opposed to a script such as a pyenv or asdf shim.
func IsELF(path string) bool {
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
