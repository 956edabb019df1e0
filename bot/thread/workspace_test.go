package thread

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestWorkspaceStore(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ws, err := NewWorkspaces(dir, time.Hour, sandbox.FileLimits{ThreadSize: 10}, 10, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ws.now = func() time.Time { return now }
	thread := ws.ForAnswer("C0A", "1700000000.000100", "", slog.New(slog.DiscardHandler))
	if err := thread.Open(); err != nil {
		t.Fatal(err)
	}
	put := func(name, data string, keep ...string) []string {
		t.Helper()
		now = now.Add(time.Second)
		ev, err := thread.Store(Entry{Name: name}, []byte(data), keep...)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	put("a.csv", "1234")
	put("sub/b.txt", "123")
	if ev := put("c.txt", "12345", "a.csv"); len(ev) != 1 || ev[0] != "sub/b.txt" {
		t.Errorf("evicted %v, want the oldest file not kept (sub/b.txt)", ev)
	}
	if data, err := thread.Read("c.txt"); err != nil || string(data) != "12345" {
		t.Errorf("read = %q, %v", data, err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../x"} {
		if _, err := thread.Store(Entry{Name: bad}, []byte("x")); err == nil {
			t.Errorf("put(%q) succeeded", bad)
		}
		if _, err := thread.Read(bad); err == nil {
			t.Errorf("read(%q) succeeded", bad)
		}
	}
	thread.Close()

	// The index survives reopening; the thread expires after the TTL.
	thread = ws.ForAnswer("C0A", "1700000000.000100", "", slog.New(slog.DiscardHandler))
	thread.Open()
	if _, ok := thread.ByName("a.csv"); !ok {
		t.Error("a.csv forgotten after reopening")
	}
	thread.Close()
	now = now.Add(59 * time.Minute)
	ws.Sweep()
	if _, err := os.Stat(filepath.Join(dir, workspacesDir, "C0A_1700000000.000100")); err != nil {
		t.Errorf("swept a workspace used within the TTL: %v", err)
	}
	now = now.Add(2 * time.Minute)
	ws.Sweep()
	if _, err := os.Stat(filepath.Join(dir, workspacesDir, "C0A_1700000000.000100")); !os.IsNotExist(err) {
		t.Errorf("workspace not swept after the TTL: %v", err)
	}
	if got := threadDir("../x", "1"); !strings.HasPrefix(got, "h_") {
		t.Errorf("threadDir of odd ids = %q, want a hash", got)
	}
}

// TestThreadFilesAsWorkspace: an answer's runs start with the files placed
// for it and those its earlier runs wrote; what they write is kept in the
// thread once, within the limits, and a file the bot posted stays known
// as posted while it is unchanged.
func TestThreadFilesAsWorkspace(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ws, err := NewWorkspaces(t.TempDir(), time.Hour, sandbox.FileLimits{ThreadSize: 1 << 20, FileSize: 8}, 11, log)
	if err != nil {
		t.Fatal(err)
	}
	var w agent.Workspace = ws.ForAnswer("C0A", "1700000000.000100", "1700000000.000100", log)
	thread := w.(*Workspace)
	defer thread.Close()
	if files, err := w.Files(t.Context()); err != nil || len(files) != 0 {
		t.Fatalf("a thread without files: %v, %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(ws.dir, threadDir("C0A", "1700000000.000100"))); !os.IsNotExist(err) {
		t.Errorf("the thread's directory exists before a run wrote a file: %v", err)
	}
	dropped, err := w.Put(t.Context(), []sandbox.File{
		{Name: "a.csv", Data: []byte("1,2\n")},       // kept
		{Name: "big.bin", Data: []byte("123456789")}, // over the 8-byte file limit
		{Name: "b.txt", Data: []byte("12345678")},    // kept, but past the 11 bytes a run starts with
	})
	if err != nil || strings.Join(dropped, " ") != "big.bin b.txt" {
		t.Errorf("Put dropped %v, %v; want big.bin b.txt", dropped, err)
	}
	files, err := w.Files(t.Context())
	if err != nil || len(files) != 1 || files[0].Name != "a.csv" || string(files[0].Data) != "1,2\n" {
		t.Errorf("Files = %v, %v; want a.csv", files, err)
	}
	if e, ok := thread.ByName("b.txt"); !ok || !e.Output || e.TurnTS != "1700000000.000100" {
		t.Errorf("b.txt in the thread = %+v, %v; want kept as a run's output", e, ok)
	}
	if _, ok := thread.ByName("big.bin"); ok {
		t.Error("big.bin kept")
	}

	a := sandbox.File{Name: "a.csv", Data: []byte("1,2\n")}
	thread.SetPosted(a, "F1")
	w.Put(t.Context(), []sandbox.File{a})
	if id := thread.Posted(a); id != "F1" {
		t.Errorf("unchanged a.csv posted as %q, want F1", id)
	}
	changed := sandbox.File{Name: "a.csv", Data: []byte("3,4\n")}
	w.Put(t.Context(), []sandbox.File{changed})
	if id := thread.Posted(changed); id != "" {
		t.Errorf("changed a.csv posted as %q, want not posted", id)
	}
}
