package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExecLocal runs `sandpiper exec` against the real local sandbox.
func TestExecLocal(t *testing.T) {
	t.Setenv("SANDPIPER_PYTHON", "/usr/bin/python3")
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Chdir(t.TempDir()) // no .env files
	for _, tc := range []struct {
		name      string
		args      []string
		stdin     string
		env       map[string]string
		code      int
		stdout    string
		stderrHas []string
	}{
		{"code flag", []string{"exec", "-c", "print(5 + 5 - 84**3)"}, "", nil, 0, "-592694\n", nil},
		{"code on stdin", []string{"exec"}, "import sys\nprint('hi')\nprint('oops', file=sys.stderr)\nsys.exit(3)", nil, 3, "hi\n", []string{"oops"}},
		{"traceback", []string{"exec", "-c", "1/0"}, "", nil, 1, "", []string{"ZeroDivisionError"}},
		{"timeout", []string{"exec", "-c", "print('start', flush=True)\nwhile True: pass"}, "", map[string]string{"SANDPIPER_SANDBOX_TIMEOUT": "1s"}, 124, "start\n", []string{"timed out after 1s"}},
		{"memory", []string{"exec", "-c", "x = bytearray(1 << 30)"}, "", map[string]string{"SANDPIPER_SANDBOX_MEMORY": "64MiB"}, 137, "", []string{"memory limit of 64.0 MiB"}},
		{"truncated", []string{"exec", "-c", "print('x' * 5000)"}, "", map[string]string{"SANDPIPER_SANDBOX_OUTPUT": "1KiB"}, 0, strings.Repeat("x", 1024), []string{"stdout truncated: 1024 of 5001 bytes shown"}},
		// exec passes the program's own output through untouched, like
		// python3: control text included.
		{"raw output", []string{"exec", "-c", `import sys; print('\x1b[31mred\x1b[0m\x07\u202e'); sys.stderr.write('\x1b]0;t\x07')`}, "", nil, 0, "\x1b[31mred\x1b[0m\a\u202e\n", []string{"\x1b]0;t\a"}},
		{"bad limit", []string{"exec", "-c", "print(1)"}, "", map[string]string{"SANDPIPER_SANDBOX_MEMORY": "lots"}, 2, "", []string{"SANDPIPER_SANDBOX_MEMORY"}},
		{"stray argument", []string{"exec", "print(1)"}, "", nil, 2, "", []string{"usage: sandpiper exec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(tc.stdin), &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if out.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
			for _, want := range tc.stderrHas {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr %q lacks %q", errb.String(), want)
				}
			}
		})
	}
}

// TestExecInterrupted: an interrupt (the context's end) kills the run,
// and exec exits 130 as a shell reports it, printing nothing of its own.
func TestExecInterrupted(t *testing.T) {
	t.Setenv("SANDPIPER_PYTHON", "/usr/bin/python3")
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"exec", "-c", "print('start', flush=True)\nwhile True: pass"}, strings.NewReader(""), &out, &errb)
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 130 || errb.Len() != 0 {
			t.Errorf("exit %d, stderr %q; want 130 and nothing", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exec went on after the interrupt")
	}
}

// TestExecOut checks that exec -out receives the files the program
// writes in /mnt/data, and says where they went; without -out it says
// there were files.
func TestExecOut(t *testing.T) {
	t.Setenv("SANDPIPER_PYTHON", "/usr/bin/python3")
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	t.Chdir(dir)
	const code = `import os
os.makedirs("plots", exist_ok=True)
open("result.csv", "w").write("a,b\n1,2\n")
open("plots/\x1b[31mred.txt", "w").write("x")
os.makedirs(".cache", exist_ok=True)
open(".cache/junk", "w").write("x")
print("done")`
	var out, errb bytes.Buffer
	if c := run(t.Context(), []string{"exec", "-c", code}, strings.NewReader(""), &out, &errb); c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	if want := "the program wrote 2 files in /mnt/data (plots/␛[31mred.txt, result.csv); -out DIR saves them"; !strings.Contains(errb.String(), want) {
		t.Errorf("without -out, stderr %q lacks %q", errb.String(), want)
	}

	out.Reset()
	errb.Reset()
	if c := run(t.Context(), []string{"exec", "-out", "saved", "-c", code}, strings.NewReader(""), &out, &errb); c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	if out.String() != "done\n" {
		t.Errorf("stdout %q", out.String())
	}
	for _, want := range []string{"saved saved/result.csv (8 bytes)", "saved saved/plots/␛[31mred.txt (1 byte)"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "saved", "result.csv")); err != nil || string(b) != "a,b\n1,2\n" {
		t.Errorf("saved/result.csv: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "saved", ".cache")); !os.IsNotExist(err) {
		t.Errorf("the hidden cache was saved (%v)", err)
	}
}

// execBinary runs the built sandpiper with args in dir, its environment
// env alone, and reports what it printed, its exit code, and whether the
// Go runtime started (GODEBUG=inittrace=1 has it say so on stderr; the
// lines are taken out of stderr).
func execBinary(t *testing.T, dir string, env []string, stdin string, args ...string) (stdout, stderr string, code int, goStarted bool) {
	t.Helper()
	return execBinaryAs(t, buildSandpiper(t), nil, dir, env, stdin, args...)
}

// execBinaryAs is execBinary for the binary bin, run as cred when not nil.
func execBinaryAs(t *testing.T, bin string, cred *syscall.Credential, dir string, env []string, stdin string, args ...string) (stdout, stderr string, code int, goStarted bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	cmd.Dir, cmd.Env = dir, append(slices.Clone(env), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(errb.String(), "\n") {
		if strings.HasPrefix(line, "init ") && strings.Contains(line, " ms clock") {
			goStarted = true
			continue
		}
		kept = append(kept, line)
	}
	return out.String(), strings.Join(kept, ""), code, goStarted
}

// TestExecUnprivileged runs the built binary as a user who may make no
// cgroup and clone no mount tree (as in the Docker image).
func TestExecUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("run as root to test the switch to an unprivileged user")
	}
	python := hostPython(t)
	// A copy of the binary that nobody may run, and a home of nobody's.
	dir, err := os.MkdirTemp("", "sandpiper-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, err := os.ReadFile(buildSandpiper(t))
	if err != nil {
		t.Fatal(err)
	}
	bin, home := filepath.Join(dir, "sandpiper"), filepath.Join(dir, "home")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	if err := errors.Join(os.Chmod(dir, 0o755), os.Mkdir(home, 0o700), os.Chown(home, nobody, nobody)); err != nil {
		t.Fatal(err)
	}
	cred := &syscall.Credential{Uid: nobody, Gid: nobody}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SANDPIPER_PYTHON=" + python}
	stdout, stderr, code, _ := execBinaryAs(t, bin, cred, home, env, "", "exec", "-c", "import os; print(os.getuid(), 6 * 7)")
	if code != 0 || stdout != "1000 42\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
