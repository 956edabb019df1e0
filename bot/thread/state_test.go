package thread

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestWorkspaceState: a thread's state is its own, kept beside its files
// (a thread without any has none, and gets no directory for asking), set
// aside by renaming, refused unread when too large, and deleted with the
// thread's workspace.
func TestWorkspaceState(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ws, err := NewWorkspaces(dir, time.Hour, sandbox.FileLimits{ThreadSize: 1 << 20}, 1<<20, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ws.now = func() time.Time { return now }
	log := slog.New(slog.DiscardHandler)
	a := ws.ForAnswer("C0A", "1700000000.000100", "", log)
	defer a.Close()
	ctx := t.Context()
	if got, err := a.State(ctx, 100); got != nil || err != nil {
		t.Fatalf("a new thread's state: %q, %v", got, err)
	}
	if ws.Exists("C0A", "1700000000.000100") {
		t.Error("asking for the state made the thread a directory")
	}
	if err := a.PutState(ctx, []byte("state one")); err != nil {
		t.Fatal(err)
	}
	b := ws.ForAnswer("C0A", "1700000000.000200", "", log)
	defer b.Close()
	if got, err := b.State(ctx, 100); got != nil || err != nil {
		t.Errorf("another thread's state: %q, %v", got, err)
	}

	again := ws.ForAnswer("C0A", "1700000000.000100", "", log)
	defer again.Close()
	if got, err := again.State(ctx, 100); string(got) != "state one" || err != nil {
		t.Errorf("the state read again: %q, %v", got, err)
	}
	if _, err := again.State(ctx, 4); !errors.Is(err, agent.ErrStateUnusable) {
		t.Errorf("a state past its limit: %v", err)
	}
	// As a stream, for a run: the file itself, with its size.
	r, n, err := again.OpenState(ctx, 100)
	if err != nil || r == nil {
		t.Fatalf("OpenState: %v", err)
	}
	if got, _ := io.ReadAll(r); string(got) != "state one" || n != 9 {
		t.Errorf("the state streamed: %q, %d bytes", got, n)
	}
	r.Close()
	if _, _, err := again.OpenState(ctx, 4); !errors.Is(err, agent.ErrStateUnusable) {
		t.Errorf("a state past its limit, streamed: %v", err)
	}
	if r, n, err := b.OpenState(ctx, 100); r != nil || n != 0 || err != nil {
		t.Errorf("another thread's state, streamed: %v, %d, %v", r, n, err)
	}
	if err := again.SetStateAside(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := again.State(ctx, 100); got != nil || err != nil {
		t.Errorf("after setting it aside: %q, %v", got, err)
	}
	tdir := filepath.Join(dir, workspacesDir, "C0A_1700000000.000100")
	if aside, err := os.ReadFile(filepath.Join(tdir, stateAside)); string(aside) != "state one" {
		t.Errorf("the state set aside: %q, %v", aside, err)
	}

	off := ws.ForAnswer("C0A", "1700000000.000100", "", log)
	off.KeepNoState()
	if _, err := off.State(ctx, 100); !errors.Is(err, agent.ErrNoState) {
		t.Errorf("a workspace keeping no state: %v", err)
	}
	if _, _, err := off.OpenState(ctx, 100); !errors.Is(err, agent.ErrNoState) || off.KeepsState() || !again.KeepsState() {
		t.Errorf("a workspace keeping no state, streamed: %v; keeps state %v", err, off.KeepsState())
	}

	now = now.Add(2 * time.Hour)
	ws.Sweep()
	if _, err := os.Stat(tdir); !os.IsNotExist(err) {
		t.Errorf("the thread's state outlived its workspace: %v", err)
	}
}
