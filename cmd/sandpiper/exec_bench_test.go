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
// read-only root, as a floor for any sandbox). Each iteration runs them
// in turn, so that a busy machine slows them alike, and the median
// of each is reported as bare-ms, bwrap-ms and exec-ms (ns/op is them
// all together). exec is sandpiper handing the run over to sandpiper-exec;
// exec-inproc-ms is sandpiper with no sandpiper-exec beside it, running
// exec itself (as under go run); start-ms is `sandpiper exec -h`, the
// start of the two binaries without a sandbox. (CPU time is no help here:
// a sandbox's processes are reaped inside it, so wait4 does not count
// them.)
//
//	go test ./cmd/sandpiper -run '^$' -bench Exec -benchtime 50x
//
// The target: exec ≤ bwrap + 15 ms. Each exec runs cold,
// as a user's does: a new process, a new sandbox; the interpreter's probe
// is kept in the user's cache directory after the first run, as it is
// for a user.
func BenchmarkExec(b *testing.B) {
	python := hostPython(b)
	bin := buildSandpiper(b)
	dir := b.TempDir() // no .env here
	alone := filepath.Join(dir, "sandpiper")
	if err := os.Link(bin, alone); err != nil {
		b.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"SANDPIPER_PYTHON=" + python,
	}
	const code = "pass"
	cmds := []struct {
		name  string
		argv  []string
		times []time.Duration
	}{
		{name: "bare", argv: []string{python, "-c", code}},
		{name: "bwrap", argv: bwrapArgv(python, code)},
		{name: "exec", argv: []string{bin, "exec", "-c", code}},
		{name: "exec-inproc", argv: []string{alone, "exec", "-c", code}},
		// The binaries' start, without a sandbox: what exec costs
		// before its run.
		{name: "start", argv: []string{bin, "exec", "-h"}},
	}
	run := func(name string, argv []string) time.Duration {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Dir = env, dir
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
		return time.Since(t0)
	}
	for _, c := range cmds {
		if c.argv == nil {
			b.Logf("%s: not installed", c.name)
			continue
		}
		run(c.name, c.argv) // warm the page cache, and exec's probe cache
	}
	b.ResetTimer()
	for range b.N {
		for i := range cmds {
			if c := &cmds[i]; c.argv != nil {
				c.times = append(c.times, run(c.name, c.argv))
			}
		}
	}
	b.StopTimer()
	for _, c := range cmds {
		if len(c.times) > 0 {
			slices.Sort(c.times)
			b.ReportMetric(float64(c.times[len(c.times)/2].Microseconds())/1000, c.name+"-ms")
		}
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
