package replica_test

import (
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// TestThreadMark: a replica's mark holds until another replica marks the
// thread; marks are new each time and expire.
func TestThreadMark(t *testing.T) {
	srv := newServer(t)
	a := open(t, srv.URL(0), replica.Config{Replica: "a"})
	b := open(t, srv.URL(0), replica.Config{Replica: "b"})
	ctx := t.Context()
	if m, err := a.ThreadMark(ctx, "C1/1"); err != nil || m != "" {
		t.Fatalf("unmarked thread: %q, %v", m, err)
	}
	ma, prev, err := a.MarkThread(ctx, "C1/1", time.Minute)
	if err != nil || prev != "" {
		t.Fatalf("first mark: %q replaced %q, %v", ma, prev, err)
	}
	if m, _ := b.ThreadMark(ctx, "C1/1"); m != ma {
		t.Errorf("b reads %q, a set %q", m, ma)
	}
	mb, prev, _ := b.MarkThread(ctx, "C1/1", time.Minute)
	if prev != ma {
		t.Errorf("b's mark replaced %q, want a's %q", prev, ma)
	}
	ma2, _, _ := a.MarkThread(ctx, "C1/2", 200*time.Millisecond)
	if mb == ma || ma2 == ma {
		t.Errorf("marks repeat: %q %q %q", ma, mb, ma2)
	}
	if m, _ := a.ThreadMark(ctx, "C1/1"); m != mb {
		t.Errorf("a reads %q after b marked %q", m, mb)
	}
	time.Sleep(300 * time.Millisecond) // past C1/2's 200ms, on Redis's clock
	if m, _ := a.ThreadMark(ctx, "C1/2"); m != "" {
		t.Errorf("expired mark still read: %q", m)
	}
}

// TestCurrent: a thread's current question is the first unfinished one.
func TestCurrent(t *testing.T) {
	srv := newServer(t)
	s := open(t, srv.URL(0), replica.Config{Replica: "a"})
	ctx := t.Context()
	if id, _, err := s.Current(ctx, "C1/1"); id != "" || err != nil {
		t.Fatalf("empty thread: %q, %v", id, err)
	}
	for _, q := range []replica.Question{{ID: "C1/1", Thread: "C1/1", Payload: []byte("one")}, {ID: "C1/2", Thread: "C1/1", Payload: []byte("two")}} {
		if _, err := s.Enqueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if id, p, err := s.Current(ctx, "C1/1"); id != "C1/1" || string(p) != "one" || err != nil {
		t.Errorf("Current = %q, %q, %v", id, p, err)
	}
}
