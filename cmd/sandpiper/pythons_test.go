package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

func TestPythonsWith(t *testing.T) {
	python := hostPython(t)
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
			if got := pythonsWith(t.Context(), test.exe, test.modules, path); !test.want(got) {
				t.Errorf("pythonsWith(%q, %q) = %q", test.exe, test.modules, got)
			}
		})
	}
}

func TestDescribePython(t *testing.T) {
	python := hostPython(t)
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	link, shim := filepath.Join(dir, "python3"), filepath.Join(dir, "shim")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	py := local.Python{Executable: real, Version: "3.0.0"}
	for _, test := range []struct{ name, want string }{
		{real, real + " (Python 3.0.0)"},
		{link, real + " (Python 3.0.0), the file " + link + " links to"},
		{shim, real + " (Python 3.0.0), which the shim " + shim + " runs; set SANDPIPER_PYTHON=" + real + " to skip the shim"},
		{"", real + " (Python 3.0.0), the file " + link + " links to (SANDPIPER_PYTHON unset: python3 on PATH)"},
	} {
		if got := describePython(test.name, py); got != test.want {
			t.Errorf("describePython(%q):\n got %s\nwant %s", test.name, got, test.want)
		}
	}
}
