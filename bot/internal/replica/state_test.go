package replica_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// TestState: a thread's state is read whole by another replica, in
// chunks past Redis's string sizes; a new one replaces it and its chunks
// go; a state too large or incomplete is unusable; set aside, it is kept
// under another key; every key has the thread's TTL.
func TestState(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	a := open(t, srv.URL(0), replica.Config{})
	b := open(t, srv.URL(0), replica.Config{})
	const ttl = time.Hour

	if got, err := b.State(ctx, "C1/1.0", 1<<30, ttl); got != nil || err != nil {
		t.Fatalf("no state: %d bytes, %v", len(got), err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (20<<20)/16+3) // three chunks
	if err := a.PutState(ctx, "C1/1.0", big, ttl); err != nil {
		t.Fatal(err)
	}
	got, err := b.State(ctx, "C1/1.0", 1<<30, ttl)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("state of %d bytes read back as %d bytes, %v", len(big), len(got), err)
	}
	keys := func(pattern string) string {
		t.Helper()
		n, err := srv.Do(ctx, "EVAL", `return #redis.call("KEYS", ARGV[1])`, "0", pattern)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := keys("sandpiper:state*"); n != ":4" {
		t.Errorf("%s keys, want a record and three chunks", n)
	}
	if ttlLeft, err := srv.Do(ctx, "PTTL", "sandpiper:state:C1/1.0"); err != nil || !strings.HasPrefix(ttlLeft, ":") || ttlLeft == ":-1" {
		t.Errorf("the record's TTL: %s, %v", ttlLeft, err)
	}

	// Replaced: the old chunks go.
	if err := b.PutState(ctx, "C1/1.0", []byte("small"), ttl); err != nil {
		t.Fatal(err)
	}
	if got, err := a.State(ctx, "C1/1.0", 1<<30, ttl); err != nil || string(got) != "small" {
		t.Errorf("after a new state: %q, %v", got, err)
	}
	if n := keys("sandpiper:state*"); n != ":2" {
		t.Errorf("%s keys, want a record and one chunk", n)
	}

	// Too large for the limit: nothing read.
	if _, err := a.State(ctx, "C1/1.0", 4, ttl); !errors.Is(err, agent.ErrStateUnusable) || !strings.Contains(err.Error(), "more than its limit of 4") {
		t.Errorf("a state past the limit: %v", err)
	}
	// Another thread is another state.
	if got, err := a.State(ctx, "C1/2.0", 1<<30, ttl); got != nil || err != nil {
		t.Errorf("another thread: %q, %v", got, err)
	}

	// A chunk gone (evicted, say): unusable, not a shorter state.
	if err := a.PutState(ctx, "C2/1.0", big, ttl); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.Do(ctx, "EVAL", `local ks = redis.call("KEYS", ARGV[1]) for _, k in ipairs(ks) do redis.call("DEL", k) end return #ks`, "0", "sandpiper:state:C2/1.0:*:1"); err != nil || n != ":1" {
		t.Fatalf("deleting a chunk: %s, %v", n, err)
	}
	if _, err := a.State(ctx, "C2/1.0", 1<<30, ttl); !errors.Is(err, agent.ErrStateUnusable) || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a state with a chunk gone: %v", err)
	}

	// Set aside: gone from where runs read it, kept under another key.
	if err := b.SetStateAside(ctx, "C1/1.0"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.State(ctx, "C1/1.0", 1<<30, ttl); got != nil || err != nil {
		t.Errorf("after setting it aside: %q, %v", got, err)
	}
	if rec, err := srv.Do(ctx, "EXISTS", "sandpiper:state-aside:C1/1.0"); err != nil || rec != ":1" {
		t.Errorf("the state set aside: %s, %v", rec, err)
	}
	if err := b.SetStateAside(ctx, "C9/1.0"); err != nil {
		t.Errorf("setting aside no state: %v", err)
	}
}
