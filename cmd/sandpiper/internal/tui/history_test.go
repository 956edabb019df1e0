package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHistoryFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "sandpiper")
	path := filepath.Join(dir, "history")
	h, err := OpenHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Entries(); len(got) != 0 {
		t.Fatalf("a missing file gives %q, want no entries", got)
	}
	for _, e := range []string{"one", "two\nlines\r\n\ttabbed", "two\nlines\r\n\ttabbed", "  ", "three \"quoted\" \x1b", "four"} {
		if err := h.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"two\nlines\r\n\ttabbed", "three \"quoted\" \x1b", "four"}
	if got := h.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %q, want %q", got, want)
	}
	h2, err := OpenHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Entries(); !slices.Equal(got, want) {
		t.Errorf("reopened: Entries() = %q, want %q", got, want)
	}
	for p, mode := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode(), mode)
		}
	}
}

// TestHistoryBound checks that the file is rewritten with the newest
// entries when it has grown to twice the bound.
func TestHistoryBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	h, err := OpenHistory(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 23 {
		if err := h.Add(fmt.Sprint("q", i)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 10 {
		t.Errorf("the file holds %d lines, want at most 10", n)
	}
	h2, err := OpenHistory(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h2.Entries(), []string{"q18", "q19", "q20", "q21", "q22"}; !slices.Equal(got, want) {
		t.Errorf("Entries() = %q, want %q", got, want)
	}
}

// TestHistoryCorrupt checks that lines that do not decode are skipped.
func TestHistoryCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	data := "\"good\"\nnot json\n\x00\x01\n\"unterminated\n42\n\"\"\n\"also good\\nwith a line\"\n\"cut"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHistory(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Entries(), []string{"good", "also good\nwith a line"}; !slices.Equal(got, want) {
		t.Errorf("Entries() = %q, want %q", got, want)
	}
	if err := h.Add("new"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after Add, want 0600", fi.Mode().Perm())
	}
	h2, err := OpenHistory(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Entries(); len(got) != 3 || got[2] != "new" {
		t.Errorf("after Add: Entries() = %q", got)
	}
}

// TestHistoryBigEntry checks that an entry too large to save is kept for
// the session only.
func TestHistoryBigEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	h, err := OpenHistory(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("1,2,3\n", maxEntry/5)
	if err := h.Add(big); err != nil {
		t.Fatal(err)
	}
	if got := h.Entries(); len(got) != 1 {
		t.Errorf("Entries() has %d entries, want 1", len(got))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the big entry was written (%v)", err)
	}
}

func TestDefaultHistoryPath(t *testing.T) {
	for _, test := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, "/state/sandpiper/history"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/sandpiper/history"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/sandpiper/history"},
	} {
		got, err := DefaultHistoryPath(func(k string) string { return test.env[k] })
		if err != nil || got != test.want {
			t.Errorf("DefaultHistoryPath(%v) = %q, %v; want %q", test.env, got, err, test.want)
		}
	}
}
