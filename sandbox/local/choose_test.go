package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPythonsWith(t *testing.T) {
	python := testPython()
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Skip(err)
	}
	dir, shims := t.TempDir(), t.TempDir()
	if err := os.Symlink(python, filepath.Join(dir, "python3")); err != nil {
		t.Fatal(err)
	}
	// A shim is a script: it is not asked.
	if err := os.WriteFile(filepath.Join(shims, "python3"), []byte("#!/bin/sh\nexec "+python+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := shims + string(filepath.ListSeparator) + dir + string(filepath.ListSeparator) + "relative"
	for _, test := range []struct {
		name    string
		exe     string
		modules []string
		want    func([]string) bool
	}{
		{"has them", "/nonexistent", []string{"json", "csv"}, func(got []string) bool {
			return len(got) > 0 && got[0] == filepath.Join(dir, "python3") && !slices.Contains(got, filepath.Join(shims, "python3"))
		}},
		{"lacks one", "/nonexistent", []string{"json", "no_such_module_sandpiper"}, func(got []string) bool { return len(got) == 0 }},
		{"the current one is left out", real, []string{"json"}, func(got []string) bool {
			return !slices.Contains(got, filepath.Join(dir, "python3"))
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			if got := PythonsWith(t.Context(), test.exe, test.modules, path, nil); !test.want(got) {
				t.Errorf("PythonsWith(%q, %q) = %q", test.exe, test.modules, got)
			}
		})
	}
}

// TestChoosePython: with SANDPIPER_PYTHON unset, python3 on PATH is run
// when it has the modules asked for; when it lacks them, another
// interpreter that has them all is chosen, and the choice says why; when
// none has them, python3 on PATH, with what it lacks.
func TestChoosePython(t *testing.T) {
	python := testPython()
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Skip(err)
	}
	// A python3 first on PATH that cannot be used: a shim that fails.
	bare := t.TempDir()
	script := "#!/bin/sh\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bare, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	good := t.TempDir()
	if err := os.Symlink(real, filepath.Join(good, "python3")); err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		name, path string
		modules    []string
		want       Choice
	}{
		{"python3 has them", good, []string{"json"}, Choice{Python: "python3", Why: "SANDPIPER_PYTHON unset: python3 on PATH, which has json"}},
		{"another has them", bare + ":" + good, []string{"json", "sqlite3"}, Choice{Python: filepath.Join(good, "python3"),
			Why: "SANDPIPER_PYTHON unset: python3 on PATH lacks json, sqlite3; " + filepath.Join(good, "python3") + " has them all"}},
		{"none has them", good, []string{"json", "no_such_module_sandpiper"}, Choice{Python: "python3", Missing: []string{"no_such_module_sandpiper"},
			Why: "SANDPIPER_PYTHON unset: python3 on PATH (" + real + "), which lacks no_such_module_sandpiper; no Python on this machine has them all"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Setenv("PATH", test.path)
			cache := t.TempDir()
			for range 2 { // the second from the cache
				got := ChoosePython(t.Context(), test.modules, cache)
				if got.Python != test.want.Python || strings.Join(got.Missing, ",") != strings.Join(test.want.Missing, ",") || test.want.Why != "" && got.Why != test.want.Why {
					t.Errorf("ChoosePython = %+v, want %+v", got, test.want)
				}
			}
		})
	}
}
