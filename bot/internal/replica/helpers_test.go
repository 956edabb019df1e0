package replica_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
)

// Test timing. Nothing asserts a duration: these bound waits, generously
// for a loaded machine.
const (
	waitLong = 30 * time.Second
	// shortClaim is the claim-after of tests that wait for a takeover.
	shortClaim = 300 * time.Millisecond
)

// TestMain runs the test binary as a replica process when asked to (the
// helper-process trick of os/exec's tests): a test can then kill a
// replica with SIGKILL mid-answer.
func TestMain(m *testing.M) {
	if os.Getenv("REPLICA_TEST_REPLICA") != "" {
		os.Exit(replicaMain())
	}
	os.Exit(m.Run())
}

// replicaMain serves the queue at $REPLICA_TEST_URL as replica
// $REPLICA_TEST_REPLICA with one worker; its handler prints "started ID
// ATTEMPT" and blocks until the process is killed.
func replicaMain() int {
	// The test holds our stdin: when it ends (or dies), so do we.
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	claim, _ := time.ParseDuration(os.Getenv("REPLICA_TEST_CLAIM_AFTER"))
	s, err := replica.Open(context.Background(), replica.Config{
		URL: os.Getenv("REPLICA_TEST_URL"), Replica: os.Getenv("REPLICA_TEST_REPLICA"),
		ClaimAfter: claim, Workers: 1,
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	s.Serve(context.Background(), func(ctx context.Context, d *replica.Delivery) error {
		fmt.Printf("started %s %d\n", d.ID, d.Attempt)
		select {}
	})
	return 0
}

// startReplicaProcess starts a replica process and returns it with its
// output lines.
func startReplicaProcess(t *testing.T, url, name string, claimAfter time.Duration) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REPLICA_TEST_REPLICA="+name, "REPLICA_TEST_URL="+url, "REPLICA_TEST_CLAIM_AFTER="+claimAfter.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // closed when this process ends
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// open opens a store on url; it closes at the test's end.
func open(t testing.TB, url string, cfg replica.Config) *replica.Store {
	t.Helper()
	cfg.URL = url
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	s, err := replica.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("REPLICA_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	if _, ok := t.(*testing.B); ok {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// logBuffer keeps a store's debug log, for a test that waits for what
// only the log tells (a heartbeat that failed).
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// logger returns testLogger(t) that also writes every line to l.
func (l *logBuffer) logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewMultiHandler(testLogger(t).Handler(), slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// has reports whether a line holds s.
func (l *logBuffer) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// serve runs s.Serve(h) in the background; at the test's end (or when the
// returned function is called) it shuts down with the given grace.
func serve(t testing.TB, s *replica.Store, h replica.Handler) (shutdown func(grace time.Duration)) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), h) }()
	var once sync.Once
	shutdown = func(grace time.Duration) {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			s.Shutdown(ctx)
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(func() { shutdown(5 * time.Second) })
	return shutdown
}

// eventually waits until cond holds, failing the test after waitLong.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// journal records what handlers did, across replicas.
type journal struct {
	mu      sync.Mutex
	starts  []start
	active  map[string]string // thread → question being answered
	overlap []string          // a thread's questions answered at once
	count   map[string]int    // question → times handled
	done    map[string]bool
}

type start struct {
	name string
	d    replica.Delivery
}

func newJournal() *journal {
	return &journal{active: map[string]string{}, count: map[string]int{}, done: map[string]bool{}}
}

// begin notes a handler starting.
func (j *journal) begin(name string, d *replica.Delivery) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if other, busy := j.active[d.Thread]; busy {
		j.overlap = append(j.overlap, fmt.Sprintf("%s started on %s while %s was being answered", d.ID, name, other))
	}
	j.active[d.Thread] = d.ID
	j.starts = append(j.starts, start{name, *d})
	j.count[d.ID]++
}

// end notes a handler finishing the question.
func (j *journal) end(d *replica.Delivery) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.active[d.Thread] == d.ID {
		delete(j.active, d.Thread)
	}
	j.done[d.ID] = true
}

func (j *journal) finished(ids ...string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		if !j.done[id] {
			return false
		}
	}
	return true
}

// order returns the questions of thread in the order they started.
func (j *journal) order(thread string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ids []string
	for _, s := range j.starts {
		if s.d.Thread == thread {
			ids = append(ids, s.d.ID)
		}
	}
	return ids
}

// handler answers by sleeping pause, noting its start and end.
func (j *journal) handler(name string, pause time.Duration) replica.Handler {
	return func(ctx context.Context, d *replica.Delivery) error {
		j.begin(name, d)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			j.mu.Lock()
			delete(j.active, d.Thread)
			j.mu.Unlock()
			return ctx.Err()
		}
		j.end(d)
		return nil
	}
}

func question(thread string, n int) replica.Question {
	id := fmt.Sprintf("%s#%d", thread, n)
	return replica.Question{ID: id, Thread: thread, Payload: []byte("payload of " + id), Channel: "C1", TS: strings.ReplaceAll(id, "#", ".")}
}

func enqueue(t testing.TB, s *replica.Store, qs ...replica.Question) {
	t.Helper()
	for _, q := range qs {
		if _, err := s.Enqueue(context.Background(), q); err != nil {
			t.Fatalf("Enqueue %s: %v", q.ID, err)
		}
	}
}

func stats(t testing.TB, s *replica.Store) replica.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// newServer starts a redis-server for the test.
func newServer(t testing.TB) *redistest.Server { return redistest.Start(t) }
