package kubernetes

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestLauncher runs the launcher as a pod would, with this host's
// python3 (the fake pods run programs with sandbox/local instead): its
// exit is the program's, 128+signal for a signal, and its limits hold.
func TestLauncher(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath(python)
	if err != nil {
		t.Skip("no python3")
	}
	for _, test := range []struct {
		name   string
		code   string
		lim    sandbox.Limits
		exit   int
		stderr string
	}{
		{"exit", "import sys; print('hi'); sys.exit(3)", sandbox.Limits{}, 3, ""},
		{"killed", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", sandbox.Limits{}, 137, ""},
		{"cpu", "while True: pass", sandbox.Limits{CPUTime: time.Second}, 152, ""},
		{"memory", "b = bytearray(1 << 30)", sandbox.Limits{Memory: 64 << 20}, 1, "MemoryError"},
		{"file size", "open('big', 'wb').write(bytes(1 << 20))", sandbox.Limits{DiskSize: 1 << 10}, 1, "File too large"},
		{"argv", "import sys; print(sys.argv)", sandbox.Limits{}, 0, ""},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			args := launcherCommand(test.lim.WithDefaults(), test.code)
			cmd := exec.Command(py, args[1:]...)
			cmd.Dir = t.TempDir()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != test.exit || !strings.Contains(stderr.String(), test.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), test.exit, test.stderr)
			}
			if test.name == "argv" && strings.TrimSpace(string(out)) != "['-c']" {
				t.Errorf("the program's sys.argv is %s, want ['-c'] as under python3 -c", out)
			}
		})
	}
}
