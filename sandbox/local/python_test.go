//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestUserSiteNotMounted gives the bot a home whose user site directory
// holds a .pth file naming a host directory: neither the interpreter nor
// a shim in front of it may make that directory visible in the sandbox.
func TestUserSiteNotMounted(t *testing.T) {
	// Not under /tmp, which the sandbox refuses to mount anyway.
	base, err := os.MkdirTemp("/var/tmp", "sandpiper-home-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home, secret := filepath.Join(base, "home"), filepath.Join(base, "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "token"), []byte("xoxb-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testPython(), "-c", "import site; print(site.getusersitepackages())")
	cmd.Env = []string{"HOME=" + home}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	userSite := strings.TrimSpace(string(out))
	if err := os.MkdirAll(userSite, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(userSite, "evil.pth"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The .pth works outside the sandbox: this is what the probe must not
	// take from the bot's home.
	cmd = exec.Command(testPython(), "-c", "import sys; print("+strconv.Quote(secret)+" in sys.path)")
	cmd.Env = []string{"HOME=" + home}
	if out, err := cmd.Output(); err != nil || string(out) != "True\n" {
		t.Fatalf("the .pth file is not read by a plain run: %q %v", out, err)
	}

	shimDir := t.TempDir()
	shim := filepath.Join(shimDir, "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec "+testPython()+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", shimDir+":"+os.Getenv("PATH"))
	for _, python := range []string{testPython(), "python3"} {
		t.Run(python, func(t *testing.T) {
			s, err := New(t.Context(), Config{Python: python, Concurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			py := s.Python()
			for _, dirs := range [][]string{py.Prefixes, py.Site, py.Path, py.Outside} {
				if slices.Contains(dirs, secret) {
					t.Errorf("the probe read the user site's .pth: %+v", py)
				}
			}
			res := run(t, s, `import os, sys
print(os.path.exists(`+strconv.Quote(secret)+`), `+strconv.Quote(secret)+` in sys.path)`, sandbox.Limits{})
			if string(res.Stdout) != "False False\n" {
				t.Errorf("the .pth's directory is visible in the sandbox: stdout %q stderr %q", res.Stdout, res.Stderr)
			}
		})
	}
}

func TestUnderAny(t *testing.T) {
	roots := []string{"/usr", "/root/.pyenv/versions/3.11.7", "/"}
	for _, tc := range []struct {
		p     string
		roots []string
		want  bool
	}{
		{"/usr", roots[:2], true},
		{"/usr/lib/python3/dist-packages", roots[:2], true},
		{"/usrx/lib", roots[:2], false},
		{"/root/.pyenv/versions/3.11.7/lib/python3.11", roots[:2], true},
		{"/root/.pyenv/versions/3.11.70", roots[:2], false},
		{"/etc", roots[:2], false},
		{"/etc", roots, true},
	} {
		if got := underAny(tc.p, tc.roots); got != tc.want {
			t.Errorf("underAny(%q, %q) = %v, want %v", tc.p, tc.roots, got, tc.want)
		}
	}
}

// TestProbeCache checks that the probe's answer is kept and used, and
// probed again when its executable changes.
func TestProbeCache(t *testing.T) {
	cache := t.TempDir()
	py, err := resolvePython(t.Context(), testPython(), cache)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "python-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache holds %q, want one python-*.json", files)
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", fi.Mode().Perm())
	}
	// Mark the kept answer: the next start must read it, not probe.
	var c probeCache
	if !readCache(files[0], &c) {
		t.Fatal("cannot read the cache")
	}
	c.Info.Version = "0.0.0-cached"
	writeCache(files[0], &c)
	again, err := resolvePython(t.Context(), testPython(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != "0.0.0-cached" {
		t.Errorf("second start: version %q, want the cached answer", again.Version)
	}
	// Another executable (here: another size and time) is probed again.
	c.Stamp = "1 1"
	writeCache(files[0], &c)
	if again, err = resolvePython(t.Context(), testPython(), cache); err != nil {
		t.Fatal(err)
	} else if again.Version != py.Version {
		t.Errorf("after a change: version %q, want %q from a new probe", again.Version, py.Version)
	}
	// A corrupt file is probed over.
	if err := os.WriteFile(files[0], []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err = resolvePython(t.Context(), testPython(), cache); err != nil || again.Version != py.Version {
		t.Errorf("over a corrupt cache: %v, %v", again, err)
	}
}

// TestShimCache checks that a shim is run once, and again when a file
// that picks its version changes.
func TestShimCache(t *testing.T) {
	dir, cache, root := t.TempDir(), t.TempDir(), t.TempDir()
	count := filepath.Join(dir, "count")
	shim := filepath.Join(dir, "python3")
	script := "#!/bin/sh\necho run >> " + count + "\nexec " + testPython() + " \"$@\"\n"
	if err := os.WriteFile(shim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYENV_ROOT", root)
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "run")
	}
	for i, change := range []func(){
		nil,
		func() {},
		func() { os.WriteFile(filepath.Join(root, "version"), []byte("3.11\n"), 0o644) },
		func() {},
	} {
		if change != nil {
			change()
		}
		if _, err := resolvePython(t.Context(), shim, cache); err != nil {
			t.Fatal(err)
		}
		if got, want := runs(), []int{1, 1, 2, 2}[i]; got != want {
			t.Errorf("start %d: the shim ran %d times in all, want %d", i+1, got, want)
		}
	}
}
