package local

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Warm runs. A sandbox kept ready may start its program's process ahead
// of the run: locked down exactly as for a run, Python runs the bootstrap
// below, which imports the modules to preload (Config.Preload) and then
// waits for the run's code, which it runs as python3 -c would. The
// process serves that sandbox's one run and no other, and goes with the
// sandbox, so nothing a run changes in it reaches another run.

// DefaultPreload is what the bot preloads unless told otherwise: the
// modules almost every data question imports.
var DefaultPreload = []string{"numpy", "pandas", "matplotlib.pyplot"}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// CheckPreload refuses a module name that is not a dotted Python
// identifier.
func CheckPreload(modules []string) error {
	for _, m := range modules {
		if !moduleName.MatchString(m) || len(m) > 200 {
			return fmt.Errorf("sandbox: %q is not a Python module name", m)
		}
	}
	return nil
}

// pyList writes names (checked by CheckPreload) as a Python list.
func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// stateDir is where a stateful run's state is (sandbox.h's STATE_DIR):
// outside /mnt/data, on a tmpfs of its own.
const stateDir = "/tmp/.sandpiper-state"

// bootstrap returns the warm interpreter's program for the modules to
// preload. Init runs it as python3 -c BOOTSTRAP, with the run's lock-down,
// environment and working directory, and a socket as descriptor 3.
//
// It imports the modules with descriptors 1 and 2 on /dev/null (what an
// import prints is nobody's output), builds the state module (used only
// if the run keeps state; the modules it imports are forgotten again, as
// gc is), says "R" on descriptor 3, or "F" and why when an import fails,
// then reads the run's code there to its end and closes it: the program
// has only 0, 1 and 2, as in a cold run. Then it runs the code as python3
// -c would ([sandbox.RunCodeTail]), restoring and saving the state when
// the run keeps one: the restore comes after the code is handed over.
//
// Before the code runs, random and numpy.random (its legacy global
// state) are seeded again from the system's entropy, uuid's cached node
// and clock are forgotten, warnings already shown during the imports may
// show again, and the import system looks at directories afresh (the
// input files arrived after the imports). The interpreter itself is a
// fresh one per sandbox, so its string-hash seed differs from run to run
// too.
func bootstrap(modules []string) string {
	state := strings.TrimSuffix(sandbox.StateModuleSource(), "\n")
	state = "        " + strings.ReplaceAll(state, "\n", "\n        ")
	return strings.NewReplacer("MODULES", pyList(modules), "        STATEMODULE", state).Replace(bootstrapSource) +
		sandbox.RunCodeTail(stateDir)
}

const bootstrapSource = `_p = dict(globals())
import sys


def _b():
    global _st
    k = set(sys.modules)
    try:
        STATEMODULE
    except Exception:
        _st = None
    for n in set(sys.modules) - k:
        del sys.modules[n]


def _w(mods):
    import os
    o, e = os.dup(1), os.dup(2)
    n = os.open(os.devnull, os.O_WRONLY)
    os.dup2(n, 1)
    os.dup2(n, 2)
    os.close(n)
    m = ""
    try:
        for m in mods:
            __import__(m)
        _b()
        for f in (sys.stdout, sys.stderr):
            f.flush()
        g = "gc" in sys.modules
        import gc
        gc.collect()
        gc.freeze()
        if not g:
            del sys.modules["gc"]
    except BaseException as x:
        os.write(3, ("Fimport %s: %s: %s" % (m, type(x).__name__, x)).encode("utf-8", "replace")[:900])
        os._exit(1)
    os.dup2(o, 1)
    os.dup2(e, 2)
    os.close(o)
    os.close(e)
    os.write(3, b"R")
    b = []
    while True:
        c = os.read(3, 1 << 16)
        if not c:
            break
        b.append(c)
    os.close(3)
    m = sys.modules
    if "random" in m:
        m["random"].seed()
    if "numpy" in m and hasattr(m["numpy"], "random"):
        m["numpy"].random.seed()
    if "uuid" in m:
        for a in ("_node", "_last_timestamp"):
            if getattr(m["uuid"], a, None) is not None:
                setattr(m["uuid"], a, None)
    if hasattr(m.get("warnings"), "_filters_mutated"):
        m["warnings"]._filters_mutated()
    for f in list(sys.path_importer_cache.values()):
        if hasattr(f, "invalidate_caches"):
            f.invalidate_caches()
    return b"".join(b).decode("utf-8", "surrogateescape")


_c = _w(MODULES)
`

// importRE finds import statements, at the start of a line or after a
// semicolon: "from X import", "import X, Y as Z".
var importRE = regexp.MustCompile(`(?m)(?:^|;)[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b|import[ \t]+([^\n#;]+))`)

// importsBeyond reports whether code imports a module whose package is
// not in stdlib (or imports by name at run time): such a run starts
// faster in a warm interpreter, while one that imports only the standard
// library starts faster cold (a warm interpreter's exit, with the
// preloaded modules to tear down, costs more than a cold start). A nil
// stdlib (Python before 3.10 cannot list it) counts every import.
func importsBeyond(code string, stdlib map[string]bool) bool {
	if strings.Contains(code, "__import__(") || strings.Contains(code, "import_module(") {
		return true
	}
	for _, m := range importRE.FindAllStringSubmatch(code, -1) {
		names := []string{m[1]}
		if m[1] == "" {
			names = strings.Split(m[2], ",")
		}
		for _, n := range names {
			n = strings.TrimSpace(n)
			n, _, _ = strings.Cut(n, " ")
			n, _, _ = strings.Cut(n, ".")
			if n != "" && n != "__future__" && !stdlib[n] {
				return true
			}
		}
	}
	return false
}

// probePreload prints, as JSON, which of the modules the interpreter has,
// without importing any (a submodule is looked for in its package's
// directories), and the names of the standard library's modules.
func probePreload(modules []string) string {
	return `import importlib.machinery, importlib.util, json, sys
def has(name):
    parts, path = name.split("."), None
    for i in range(len(parts)):
        full = ".".join(parts[:i + 1])
        try:
            s = importlib.util.find_spec(full) if i == 0 else importlib.machinery.PathFinder.find_spec(full, path)
        except Exception:
            return False
        if s is None:
            return False
        path = s.submodule_search_locations
        if i < len(parts) - 1 and path is None:
            return False
    return True
print(json.dumps({"found": [m for m in ` + pyList(modules) + ` if has(m)], "stdlib": sorted(getattr(sys, "stdlib_module_names", []))}))
`
}
