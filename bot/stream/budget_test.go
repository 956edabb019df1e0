package stream

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestRateBudgetIsShared: callers together get the budget's rate, and a
// pause holds all of them. Lower bounds only: a slow machine passes.
func TestRateBudgetIsShared(t *testing.T) {
	r := newRateBudget(600, 1) // one call every 100ms
	start := time.Now()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 2 {
				if err := r.wait(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("6 calls from 3 callers took %v, want at least 500ms at 10 a second", d)
	}
	r.pause(300 * time.Millisecond)
	start = time.Now()
	if err := r.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 290*time.Millisecond {
		t.Errorf("a call after a 300ms pause went after %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.pause(time.Hour)
	if err := r.wait(ctx); err == nil {
		t.Errorf("wait in a cancelled context returned nil")
	}
}
