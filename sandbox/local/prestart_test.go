//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestGroupPID(t *testing.T) {
	for _, tt := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"p123", 123, true},
		{"p123.exec", 123, true},
		{"p123.exe", 0, false},
		{"p.exec", 0, false},
		{"123", 0, false},
		{"0123abcd", 0, false},
		{"px", 0, false},
	} {
		pid, ok := groupPID(tt.name)
		if pid != tt.pid || ok != tt.ok {
			t.Errorf("groupPID(%q) = %d, %v; want %d, %v", tt.name, pid, ok, tt.pid, tt.ok)
		}
	}
}

// TestOneShotPlan: the plan a one-shot Sandbox keeps is the same for the
// same configuration, whatever process makes it (the C side reads it in
// the next one), and another for another limit.
func TestOneShotPlan(t *testing.T) {
	plan := func(lim sandbox.Limits) []byte {
		t.Helper()
		s, err := New(t.Context(), Config{Python: testPython(), OneShot: true, Limits: lim, ProbeCache: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b, rc := s.oneShotPlan()
		if s.cgroups != nil {
			want := fmt.Sprintf("p%d%s", os.Getpid(), prestartSuffix)
			if rc == nil || len(rc.dirs) == 0 || filepath.Base(rc.dirs[0]) != want {
				t.Errorf("the prestarted run's group: %+v, want one named %s", rc, want)
			}
		}
		if !bytes.HasPrefix(b, []byte("sandpiper exec plan 1\n")) {
			t.Errorf("plan starts %q", b[:min(len(b), 30)])
		}
		return b
	}
	a, b := plan(sandbox.Limits{}), plan(sandbox.Limits{})
	if !bytes.Equal(a, b) {
		t.Error("two Sandboxes of one configuration make different plans")
	}
	if c := plan(sandbox.Limits{Timeout: 7 * time.Second}); bytes.Equal(a, c) {
		t.Error("another timeout makes the same plan")
	}
	if bytes.Contains(a, fmt.Appendf(nil, "p%d", os.Getpid())) {
		t.Error("the plan names this process")
	}
}

// TestWritePlan: a plan is readable by its user alone (the C side refuses
// others), and no more than maxPlans are kept, the newest.
func TestWritePlan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sandpiper")
	old := time.Now().Add(-time.Hour)
	for i := range maxPlans + 3 {
		p := filepath.Join(dir, fmt.Sprintf("exec-%016x.plan", i))
		if err := writePlan(p, []byte("plan")); err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			os.Chtimes(p, old, old.Add(time.Duration(i)*time.Second))
		}
	}
	fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("exec-%016x.plan", maxPlans+2)))
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("plan mode %v, want 0600", m)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "exec-*.plan"))
	if len(paths) != maxPlans {
		t.Errorf("%d plans kept, want %d", len(paths), maxPlans)
	}
	for i := range 3 {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("exec-%016x.plan", i))); err == nil {
			t.Errorf("the old plan %d was kept", i)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".plan-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
}
