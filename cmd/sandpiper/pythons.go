package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// hasModules exits 0 when the interpreter finds every module named in its
// arguments (find_spec: nothing is imported).
const hasModules = `import importlib.util as u, sys
sys.exit(0 if all(u.find_spec(m) for m in sys.argv[1:]) else 1)`

// pythonsWith returns the interpreters on this machine, other than the one
// whose real path is exe, that find every one of modules: python3 in each
// directory of path (a PATH list), then /usr/bin/python3 and
// /usr/local/bin/python3, each as found (the name to give in
// SANDPIPER_PYTHON) and once. Scripts, such as a version manager's shims,
// are left out: they pick another interpreter by their own rules, and can
// take a second to start.
func pythonsWith(ctx context.Context, exe string, modules []string, path string) []string {
	var candidates []string
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) {
			candidates = append(candidates, filepath.Join(dir, "python3"))
		}
	}
	candidates = append(candidates, "/usr/bin/python3", "/usr/local/bin/python3")
	seen := map[string]bool{exe: true}
	var found []string
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil || seen[real] || !isExecutable(real) {
			continue
		}
		seen[real] = true
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cmd := exec.CommandContext(cctx, real, append([]string{"-I", "-c", hasModules}, modules...)...)
		cmd.Env = []string{"LANG=C.UTF-8"} // nothing of ours
		cmd.Dir = "/"
		err = cmd.Run()
		cancel()
		if err == nil {
			found = append(found, c)
		}
	}
	return found
}

// isExecutable reports whether the file at path is an executable binary
// (ELF), not a script.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 && local.IsELF(path)
}
