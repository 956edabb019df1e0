package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// An execPath is one way `sandpiper exec` runs. run runs it with args
// (after "exec") and stdin, in the test's environment and working
// directory, until it exits or ctx ends (an interrupt, as Ctrl+C sends),
// and returns what it printed and its exit code.
type execPath struct {
	name string
	run  func(ctx context.Context, t *testing.T, stdin string, args ...string) (stdout, stderr string, code int)
}

// execPaths are the ways `sandpiper exec` runs: the built sandpiper,
// handing the run over to the sandpiper-exec beside it; the built
// sandpiper alone (no sandpiper-exec beside it: it runs exec itself); and
// this process, as the binary alone would (run).
func execPaths(t *testing.T) []execPath {
	bin := buildSandpiper(t)
	alone := filepath.Join(t.TempDir(), "sandpiper")
	if err := os.Link(bin, alone); err != nil {
		t.Fatal(err)
	}
	binary := func(bin string, handedOver bool) func(context.Context, *testing.T, string, ...string) (string, string, int) {
		return func(ctx context.Context, t *testing.T, stdin string, args ...string) (string, string, int) {
			t.Helper()
			dir, err := os.Getwd()
			if err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code, lean := runBinary(ctx, t, bin, nil, dir, os.Environ(), stdin, append([]string{"exec"}, args...)...)
			if lean != handedOver {
				t.Errorf("exec ran in sandpiper-exec: %v, want %v", lean, handedOver)
			}
			return stdout, stderr, code
		}
	}
	return []execPath{
		{"handed over", binary(bin, true)},
		{"alone", binary(alone, false)},
		{"in process", func(ctx context.Context, t *testing.T, stdin string, args ...string) (string, string, int) {
			var out, errb bytes.Buffer
			code := run(ctx, append([]string{"exec"}, args...), strings.NewReader(stdin), &out, &errb)
			return out.String(), errb.String(), code
		}},
	}
}

// runBinary runs the built sandpiper at bin with args in dir, its
// environment env, as cred when not nil; ctx's end sends it SIGINT. It
// returns what it printed, its exit code, and whether it handed exec over
// to sandpiper-exec: it runs with GODEBUG=inittrace=1, and the lines that
// prints are taken out of stderr; sandpiper-exec initialises no package of
// the terminal UI's.
func runBinary(ctx context.Context, t *testing.T, bin string, cred *syscall.Credential, dir string, env []string, stdin string, args ...string) (stdout, stderr string, code int, handedOver bool) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
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
	tui := false
	for _, line := range strings.SplitAfter(errb.String(), "\n") {
		if strings.HasPrefix(line, "init ") && strings.Contains(line, " ms clock") {
			tui = tui || strings.HasPrefix(line, "init github.com/charmbracelet/")
			continue
		}
		kept = append(kept, line)
	}
	return out.String(), strings.Join(kept, ""), code, !tui
}

// TestExecLocal runs `sandpiper exec` against the real local sandbox, each
// way it runs.
func TestExecLocal(t *testing.T) {
	t.Setenv("SANDPIPER_PYTHON", hostPython(t))
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Chdir(t.TempDir()) // no .env files
	for _, p := range execPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range []struct {
				name      string
				args      []string
				stdin     string
				env       map[string]string
				code      int
				stdout    string
				stderrHas []string
			}{
				{"code flag", []string{"-c", "print(5 + 5 - 84**3)"}, "", nil, 0, "-592694\n", nil},
				{"code on stdin", nil, "import sys\nprint('hi')\nprint('oops', file=sys.stderr)\nsys.exit(3)", nil, 3, "hi\n", []string{"oops"}},
				{"traceback", []string{"-c", "1/0"}, "", nil, 1, "", []string{"ZeroDivisionError"}},
				{"signal", []string{"-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"}, "", nil, 143, "", nil},
				{"last -c wins", []string{"-c", "print(1)", "--c=print(2)"}, "", nil, 0, "2\n", nil},
				{"timeout", []string{"-c", "print('start', flush=True)\nwhile True: pass"}, "", map[string]string{"SANDPIPER_SANDBOX_TIMEOUT": "1s"}, 124, "start\n", []string{"timed out after 1s"}},
				{"memory", []string{"-c", "x = bytearray(1 << 30)"}, "", map[string]string{"SANDPIPER_SANDBOX_MEMORY": "64MiB"}, 137, "", []string{"memory limit of 64.0 MiB"}},
				{"truncated", []string{"-c", "print('x' * 5000)"}, "", map[string]string{"SANDPIPER_SANDBOX_OUTPUT": "1KiB"}, 0, strings.Repeat("x", 1024), []string{"stdout truncated: 1024 of 5001 bytes shown"}},
				// exec passes the program's own output through untouched, like
				// python3: control text included.
				{"raw output", []string{"-c", `import sys; print('\x1b[31mred\x1b[0m\x07\u202e'); sys.stderr.write('\x1b]0;t\x07')`}, "", nil, 0, "\x1b[31mred\x1b[0m\a\u202e\n", []string{"\x1b]0;t\a"}},
				{"bad limit", []string{"-c", "print(1)"}, "", map[string]string{"SANDPIPER_SANDBOX_MEMORY": "lots"}, 2, "", []string{"SANDPIPER_SANDBOX_MEMORY=lots is not a size: want a number of bytes, or with a unit (KiB, MiB, GiB; KB, MB, GB), e.g. SANDPIPER_SANDBOX_MEMORY=512MiB"}},
				{"bad limits at once", []string{"-c", "print(1)"}, "", map[string]string{"SANDPIPER_SANDBOX_TIMEOUT": "-1", "SANDPIPER_SANDBOX_CPUS": "two", "SANDPIPER_LOG_LEVEL": "loud"}, 2, "", []string{
					"config: 3 settings to fix:",
					"SANDPIPER_SANDBOX_TIMEOUT=-1 is not a duration: want a number with a unit (ms, s, m, h), e.g. SANDPIPER_SANDBOX_TIMEOUT=30s",
					"SANDPIPER_SANDBOX_CPUS=two is not a number: want e.g. SANDPIPER_SANDBOX_CPUS=1",
					"SANDPIPER_LOG_LEVEL=loud is not a log level"}},
				{"verbose", []string{"-v", "-c", "print(1)"}, "", nil, 0, "1\n", []string{", 1 CPU, ", "sandpiper: python: ", "sandpiper: exit 0 in "}},
				{"stray argument", []string{"print(1)"}, "", nil, 2, "", []string{"usage: sandpiper exec"}},
				{"a script", []string{"script.py"}, "", nil, 2, "", []string{"give the code after -c, in quotes, or a file on standard input: sandpiper exec < script.py"}},
				{"unknown flag", []string{"-x"}, "", nil, 2, "", []string{"flag provided but not defined: -x", "usage: sandpiper exec"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for k, v := range tc.env {
						t.Setenv(k, v)
					}
					stdout, stderr, code := p.run(t.Context(), t, tc.stdin, tc.args...)
					if code != tc.code {
						t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
					}
					if stdout != tc.stdout {
						t.Errorf("stdout %q, want %q", stdout, tc.stdout)
					}
					for _, want := range tc.stderrHas {
						if !strings.Contains(stderr, want) {
							t.Errorf("stderr %q lacks %q", stderr, want)
						}
					}
				})
			}
		})
	}
}

// TestExecInterrupted: an interrupt (SIGINT, or the context's end) kills
// the run, and exec exits 130 as a shell reports it, printing nothing of
// its own.
func TestExecInterrupted(t *testing.T) {
	t.Setenv("SANDPIPER_PYTHON", hostPython(t))
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	for _, p := range execPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type result struct {
				stderr string
				code   int
			}
			done := make(chan result)
			go func() {
				_, stderr, code := p.run(ctx, t, "", "-c", "print('start', flush=True)\nwhile True: pass")
				done <- result{stderr, code}
			}()
			// exec prints the program's output when the run ends: the
			// program runs once its interpreter does.
			for !pythonRunning(t) {
				select {
				case r := <-done:
					t.Fatalf("exec ended before the interrupt: exit %d, stderr %q", r.code, r.stderr)
				case <-time.After(20 * time.Millisecond):
				}
			}
			cancel()
			select {
			case r := <-done:
				if r.code != 130 || r.stderr != "" {
					t.Errorf("exit %d, stderr %q; want 130 and nothing", r.code, r.stderr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("exec went on after the interrupt")
			}
		})
	}
}

// pythonRunning reports whether a sandbox's interpreter runs among this
// process's descendants: one in a PID namespace of its own.
func pythonRunning(t *testing.T) bool {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := os.Readlink("/proc/self/ns/pid")
	parent := map[int]int{}
	var pythons []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue // gone
		}
		// pid (comm) state ppid ...
		if f := strings.Fields(string(b[i+1:])); len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
		ns, _ := os.Readlink("/proc/" + d.Name() + "/ns/pid")
		if comm := string(b[bytes.IndexByte(b, '(')+1 : i]); strings.HasPrefix(comm, "python") && ns != ours {
			pythons = append(pythons, pid)
		}
	}
	for _, p := range pythons {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == os.Getpid() {
				return true
			}
		}
	}
	return false
}

// TestExecOut checks that exec -out receives the files the program
// writes in /mnt/data, and says where they went; without -out it says
// there were files.
func TestExecOut(t *testing.T) {
	t.Setenv("SANDPIPER_PYTHON", hostPython(t))
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	const code = `import os
os.makedirs("plots", exist_ok=True)
open("result.csv", "w").write("a,b\n1,2\n")
open("plots/\x1b[31mred.txt", "w").write("x")
os.makedirs(".cache", exist_ok=True)
open(".cache/junk", "w").write("x")
print("done")`
	for _, p := range execPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			_, stderr, c := p.run(t.Context(), t, "", "-c", code)
			if c != 0 {
				t.Fatalf("exit %d: %s", c, stderr)
			}
			if want := "the program wrote 2 files in /mnt/data (plots/␛[31mred.txt, result.csv); -out DIR saves them"; !strings.Contains(stderr, want) {
				t.Errorf("without -out, stderr %q lacks %q", stderr, want)
			}

			stdout, stderr, c := p.run(t.Context(), t, "", "-out", "saved", "-c", code)
			if c != 0 {
				t.Fatalf("exit %d: %s", c, stderr)
			}
			if stdout != "done\n" {
				t.Errorf("stdout %q", stdout)
			}
			for _, want := range []string{"saved saved/result.csv (8 bytes)", "saved saved/plots/␛[31mred.txt (1 byte)"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, "saved", "result.csv")); err != nil || string(b) != "a,b\n1,2\n" {
				t.Errorf("saved/result.csv: %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "saved", ".cache")); !os.IsNotExist(err) {
				t.Errorf("the hidden cache was saved (%v)", err)
			}

			// -out naming a file is refused before the run; a file that
			// cannot be saved fails the command.
			if err := os.WriteFile("a-file", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, stderr, c := p.run(t.Context(), t, "", "-out", "a-file", "-c", code); c != 2 || !strings.Contains(stderr, "exec: -out a-file is a file; give a folder") {
				t.Errorf("-out a-file: exit %d, stderr %q; want 2, what to give", c, stderr)
			}
			if err := os.MkdirAll(filepath.Join("blocked", "plots"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join("blocked", "plots"))
			if err := os.WriteFile(filepath.Join("blocked", "plots"), nil, 0o644); err != nil { // where a folder must go
				t.Fatal(err)
			}
			if _, stderr, c := p.run(t.Context(), t, "", "-out", "blocked", "-c", code); c != 1 || !strings.Contains(stderr, "could not save plots/") {
				t.Errorf("-out with a file unsaveable: exit %d, stderr %q; want 1, which", c, stderr)
			}
		})
	}
}

// TestExecUnprivileged runs the built binaries as a user who may make no
// cgroup and clone no mount tree (as in the Docker image): sandpiper
// handing exec over to sandpiper-exec, and sandpiper alone.
func TestExecUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("run as root to test the switch to an unprivileged user")
	}
	python := hostPython(t)
	// Links to the binaries where nobody may run them, and a home of
	// nobody's.
	dir, err := os.MkdirTemp("", "sandpiper-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := buildSandpiper(t)
	paired, alone, home := filepath.Join(dir, "paired"), filepath.Join(dir, "alone"), filepath.Join(dir, "home")
	const nobody = 65534
	if err := errors.Join(os.Chmod(dir, 0o755), os.Mkdir(paired, 0o755), os.Mkdir(alone, 0o755),
		os.Link(bin, filepath.Join(paired, "sandpiper")), os.Link(filepath.Join(filepath.Dir(bin), "sandpiper-exec"), filepath.Join(paired, "sandpiper-exec")),
		os.Link(bin, filepath.Join(alone, "sandpiper")),
		os.Mkdir(home, 0o700), os.Chown(home, nobody, nobody)); err != nil {
		t.Fatal(err)
	}
	cred := &syscall.Credential{Uid: nobody, Gid: nobody}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SANDPIPER_PYTHON=" + python}
	for _, d := range []string{paired, alone} {
		stdout, stderr, code, handedOver := runBinary(t.Context(), t, filepath.Join(d, "sandpiper"), cred, home, env, "", "exec", "-c", "import os; print(os.getuid(), 6 * 7)")
		if code != 0 || stdout != "1000 42\n" || handedOver != (d == paired) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q, handed over %v", filepath.Base(d), code, stdout, stderr, handedOver)
		}
	}
}

// TestExecSeesChanges runs two plain execs of the built binary, each
// after a change to what the sandbox's policy is made of, and checks that
// the second sees it: a variable passed into the sandbox set, then unset
// (OPENBLAS_CORETYPE), and the CPUs the process may run on, from which
// the BLAS and OpenMP thread counts are made. (exec once kept its policy
// in a plan named by a hash of chosen inputs; these changes were not
// among them, and the second run kept the first's.)
func TestExecSeesChanges(t *testing.T) {
	bin := buildSandpiper(t)
	home := t.TempDir()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SANDPIPER_PYTHON=" + hostPython(t)}
	const code = "import os; print(os.environ.get('OPENBLAS_CORETYPE'), os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])"
	// exec runs as this thread's CPUs allow (the child inherits them).
	runOn := func(cpus *unix.CPUSet, env ...string) string {
		t.Helper()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var old unix.CPUSet
		if cpus != nil {
			if err := unix.SchedGetaffinity(0, &old); err != nil {
				t.Fatal(err)
			}
			if err := unix.SchedSetaffinity(0, cpus); err != nil {
				t.Fatal(err)
			}
			defer unix.SchedSetaffinity(0, &old)
		}
		stdout, stderr, c, handedOver := runBinary(t.Context(), t, bin, nil, home, append(slices.Clone(base), env...), "", "exec", "-c", code)
		if c != 0 || !handedOver {
			t.Fatalf("exit %d, handed over %v: %s", c, handedOver, stderr)
		}
		return strings.TrimSpace(stdout)
	}
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	for c := 0; one.Count() == 0; c++ {
		if all.IsSet(c) {
			one.Set(c)
		}
	}
	// The thread counts on every CPU, as the first run has them: the
	// fewer of the CPUs and 4, or 1 without a memory cgroup.
	first := runOn(nil, "OPENBLAS_CORETYPE=Haswell")
	coretype, n, _ := strings.Cut(first, " ")
	if coretype != "Haswell" {
		t.Errorf("OPENBLAS_CORETYPE set: the sandbox has OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS, OMP_NUM_THREADS %q, want Haswell …", first)
	}
	if n == "1 1" {
		t.Log("one thread on every CPU here: a change of CPU set changes no thread count")
	}
	for _, step := range []struct {
		name string
		cpus *unix.CPUSet
		want string
	}{
		{"OPENBLAS_CORETYPE unset", nil, "None " + n},
		{"one CPU", &one, "None 1 1"},
		{"all CPUs again", nil, "None " + n},
	} {
		if got := runOn(step.cpus); got != step.want {
			t.Errorf("%s: the sandbox has OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS, OMP_NUM_THREADS %q, want %q", step.name, got, step.want)
		}
	}
}

// TestExecHandsBack: a sandpiper-exec of another build than sandpiper's
// (here, other linker flags) hands the run back, and sandpiper runs exec
// itself, as that build would.
func TestExecHandsBack(t *testing.T) {
	bin := buildSandpiper(t)
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-ldflags=-X=main.build=other", "-o", dir+"/", "./sandpiper-exec")
	cmd.Dir = packageDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build sandpiper-exec: %v\n%s", err, out)
	}
	if err := os.Link(bin, filepath.Join(dir, "sandpiper")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SANDPIPER_PYTHON=" + hostPython(t)}
	stdout, stderr, code, handedOver := runBinary(t.Context(), t, filepath.Join(dir, "sandpiper"), nil, dir, env, "", "exec", "-c", "print(6 * 7)")
	if code != 0 || stdout != "42\n" || handedOver {
		t.Errorf("exit %d, stdout %q, stderr %q, handed over %v; want 0, 42, run by sandpiper", code, stdout, stderr, handedOver)
	}
}

// TestExecKubernetesHandsBack: sandpiper-exec does not link the cluster
// backend; with SANDPIPER_SANDBOX=kubernetes it hands the run back, code
// and flags with it, and sandpiper runs it (here, says there is no
// cluster), as it does alone.
func TestExecKubernetesHandsBack(t *testing.T) {
	bin := buildSandpiper(t)
	home := t.TempDir() // no ~/.kube/config
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "KUBERNETES_SERVICE_HOST=",
		"SANDPIPER_SANDBOX=kubernetes", "SANDPIPER_KUBERNETES_WARM_POOL=python"}
	for _, stdin := range []string{"", "print(6 * 7)"} {
		args := []string{"exec", "-v", "-c", "print(6 * 7)"}
		if stdin != "" {
			args = []string{"exec", "-v"}
		}
		_, stderr, code, handedOver := runBinary(t.Context(), t, bin, nil, home, env, stdin, args...)
		if want := "kubernetes: no cluster configured"; code != 1 || !strings.Contains(stderr, want) || handedOver {
			t.Errorf("%v: exit %d, stderr %q, run by sandpiper-exec %v; want 1, %q from sandpiper", args, code, stderr, handedOver, want)
		}
	}
}

// TestExecChoosesPython: with SANDPIPER_PYTHON unset and a python3 first
// on PATH that cannot run the data stack, exec runs an interpreter that
// has it, and -v says which and why.
func TestExecChoosesPython(t *testing.T) {
	requireSandbox(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import numpy, pandas, matplotlib, scipy, sympy, openpyxl").Run(); err != nil {
		t.Skip("/usr/bin/python3 lacks the data stack")
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "python3"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths := execPaths(t) // built with the go on PATH
	t.Setenv("PATH", bad+":/usr/bin:/bin")
	t.Setenv("SANDPIPER_PYTHON", "")
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			stdout, stderr, c := p.run(t.Context(), t, "", "-v", "-c", "import numpy; print(numpy.__name__)")
			if c != 0 || stdout != "numpy\n" {
				t.Errorf("exit %d, stdout %q, stderr %q; want numpy imported", c, stdout, stderr)
			}
			if want := "; SANDPIPER_PYTHON unset: python3 on PATH lacks numpy, pandas, matplotlib, scipy, sympy, openpyxl; /usr/bin/python3 has them all\n"; !strings.Contains(stderr, want) {
				t.Errorf("stderr %q lacks %q", stderr, want)
			}
		})
	}
}
