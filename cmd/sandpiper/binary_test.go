package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The sandpiper binary, built once for the tests and benchmarks that run
// it as a user would.
var sandpiperBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// packageDir is this package's directory, the tests' first working
// directory.
var packageDir, _ = os.Getwd()

// buildSandpiper builds this command, and sandpiper-exec beside it, into a
// temporary directory, once per test binary, and returns sandpiper's path.
func buildSandpiper(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds the binary")
	}
	b := &sandpiperBin
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "sandpiper-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "sandpiper")
		args := []string{"build", "-o", b.dir + "/"}
		if raceEnabled {
			args = append(args, "-race") // a data race in the binary fails its test
		}
		cmd := exec.Command("go", append(args, ".", "./sandpiper-exec")...)
		cmd.Dir = packageDir // tests change the working directory
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = &buildError{err: err, out: string(out)}
		}
	})
	if b.err != nil {
		tb.Fatalf("build sandpiper: %v", b.err)
	}
	return b.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if d := sandpiperBin.dir; d != "" {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// hostPython is the interpreter for tests that run the real sandbox:
// $SANDPIPER_PYTHON, else /usr/bin/python3 (a system interpreter, not a
// version manager's shim, which starts slowly), else python3 on PATH.
func hostPython(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("SANDPIPER_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		tb.Skip("no python3")
	}
	return p
}
