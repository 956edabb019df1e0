package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// A Choice is the interpreter [ChoosePython] chose, and why.
type Choice struct {
	Python string // the name to give Config.Python: DefaultPython (on PATH) or a path
	// Missing are the modules asked for that the chosen interpreter lacks
	// (none has them all).
	Missing []string
	Why     string // how it was chosen, in words
}

// missingModules prints, one a line, the modules named in its arguments
// that the interpreter cannot find (find_spec: nothing is imported).
const missingModules = `import importlib.util as u, sys
print("\n".join(m for m in sys.argv[1:] if not u.find_spec(m)))`

// ChoosePython chooses the interpreter when none is configured: python3 on
// PATH when it has every one of modules (a shim's, such as pyenv's, is
// resolved as [Config.Python] is); else the first other interpreter of this
// machine that has them all ([PythonsWith]); else python3 on PATH. Each
// candidate is run once, in isolated mode with an empty environment. With
// cacheDir (see [Config.ProbeCache]) the choice is kept there and reused
// while PATH, the interpreters' files, python3's site directories and the
// files that pick a shim's version are unchanged.
func ChoosePython(ctx context.Context, modules []string, cacheDir string) Choice {
	path := os.Getenv("PATH")
	file := cacheFile(cacheDir, "choice", path+"\x00"+strings.Join(modules, ","))
	var c choiceCache
	if readCache(file, &c) && c.Version == cacheVersion && c.filesUnchanged() {
		return c.Choice
	}
	c = choiceCache{Version: cacheVersion, Files: map[string]string{}}
	for _, f := range shimVersionFiles(os.Environ()) {
		c.Files[f] = stampOf(f)
	}
	c.Choice = choose(ctx, modules, path, cacheDir, c.Files)
	writeCache(file, c)
	return c.Choice
}

type choiceCache struct {
	Version int
	Choice  Choice
	Files   map[string]string
}

func (c *choiceCache) filesUnchanged() bool {
	for f, st := range c.Files {
		if stampOf(f) != st {
			return false
		}
	}
	return len(c.Files) > 0
}

// choose is ChoosePython without the cache; it stamps in files what the
// choice depends on.
func choose(ctx context.Context, modules []string, path, cacheDir string, files map[string]string) Choice {
	const unset = "SANDPIPER_PYTHON unset: "
	exe, lacks := "", modules
	if found, err := exec.LookPath(DefaultPython); err == nil {
		files[found] = stampOf(found)
	}
	if py, err := resolvePython(ctx, DefaultPython, cacheDir); err == nil {
		exe = py.Executable
		files[exe] = stampOf(exe)
		for _, d := range py.Site {
			files[d] = stampOf(d)
		}
		if l, err := missing(ctx, exe, modules); err == nil {
			lacks = l
		}
		if len(lacks) == 0 {
			return Choice{Python: DefaultPython, Why: unset + DefaultPython + " on PATH, which has " + strings.Join(modules, ", ")}
		}
	}
	others := PythonsWith(ctx, exe, modules, path, files)
	onPath := DefaultPython + " on PATH"
	if exe != "" {
		onPath += " (" + exe + ")"
	}
	switch {
	case len(others) > 0:
		return Choice{Python: others[0], Why: fmt.Sprintf("%s%s lacks %s; %s has them all", unset, onPath, strings.Join(lacks, ", "), others[0])}
	case exe == "":
		return Choice{Python: DefaultPython, Missing: modules, Why: unset + "no " + DefaultPython + " on PATH"}
	}
	return Choice{Python: DefaultPython, Missing: lacks, Why: fmt.Sprintf("%s%s, which lacks %s; no Python on this machine has them all", unset, onPath, strings.Join(lacks, ", "))}
}

// missing returns the modules the interpreter exe cannot find.
func missing(ctx context.Context, exe string, modules []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := runProbe(ctx, exe, []string{"LANG=C.UTF-8"}, append([]string{"-I", "-c", missingModules}, modules...)...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// PythonsWith returns the interpreters on this machine, other than the one
// whose real path is exe, that find every one of modules: python3 in each
// directory of path (a PATH list), then /usr/bin/python3 and
// /usr/local/bin/python3, each as found (the name to give in
// SANDPIPER_PYTHON) and once. Scripts, such as a version manager's shims,
// are left out: they pick another interpreter by their own rules, and can
// take a second to start. Each one's file is stamped in files, when not
// nil.
func PythonsWith(ctx context.Context, exe string, modules []string, path string, files map[string]string) []string {
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
		if files != nil {
			files[real] = stampOf(real)
		}
		if lacks, err := missing(ctx, real, modules); err == nil && len(lacks) == 0 {
			found = append(found, c)
		}
	}
	return found
}

// isExecutable reports whether the file at path is an executable binary
// (ELF), not a script.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 && IsELF(path)
}
