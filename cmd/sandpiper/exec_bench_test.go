package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkExec times `sandpiper exec -c pass` from a user's shell, next
// to the same program run bare and under bubblewrap (namespaces and a
// read-only root, as a floor for any sandbox), and reports the median of
// each as p50-ms:
//
//	go test ./cmd/sandpiper -run '^$' -bench Exec -benchtime 30x
//
// The target: exec ≤ bare + (bwrap − bare) + 15 ms. Each exec runs cold,
// as a user's does: a new process, a new sandbox; the interpreter's probe
// is cached in the user's cache directory after the first run, as it is
// for a user.
func BenchmarkExec(b *testing.B) {
	python := hostPython(b)
	bin := buildSandpiper(b)
	dir := b.TempDir() // no .env here
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"SANDPIPER_PYTHON=" + python,
	}
	const code = "pass"
	cmds := []struct {
		name string
		argv []string
	}{
		{"bare", []string{python, "-c", code}},
		{"bwrap", bwrapArgv(python, code)},
		{"exec", []string{bin, "exec", "-c", code}},
	}
	for _, c := range cmds {
		b.Run(c.name, func(b *testing.B) {
			if c.argv == nil {
				b.Skip("bwrap is not installed")
			}
			run := func() time.Duration {
				cmd := exec.Command(c.argv[0], c.argv[1:]...)
				cmd.Env, cmd.Dir = env, dir
				t0 := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v\n%s", c.name, err, out)
				}
				return time.Since(t0)
			}
			run() // warm the page cache, and exec's probe cache
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				times = append(times, run())
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
		})
	}
}

// bwrapArgv runs python under bubblewrap with every namespace unshared
// and a read-only view of the system's directories; nil without bwrap.
func bwrapArgv(python, code string) []string {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil
	}
	argv := []string{bwrap, "--unshare-all", "--die-with-parent", "--new-session",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/mnt/data", "--chdir", "/mnt/data"}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			link, _ := os.Readlink(d)
			argv = append(argv, "--symlink", link, d)
		default:
			argv = append(argv, "--ro-bind", d, d)
		}
	}
	if real, err := filepath.EvalSymlinks(python); err == nil {
		if d := filepath.Dir(filepath.Dir(real)); !slices.Contains([]string{"/", "/usr"}, d) {
			argv = append(argv, "--ro-bind", d, d) // an interpreter installed elsewhere
		}
	}
	return append(argv, python, "-c", code)
}
