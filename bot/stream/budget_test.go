package stream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRateBudgetIsShared: callers together get the budget's rate, and a
// pause holds all of them.
func TestRateBudgetIsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateBudget(600, 1, 0) // one call every 100ms
		start := time.Now()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for range 2 {
					if err := r.wait(t.Context(), 0, nil); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Errorf("6 calls from 3 callers took %v, want 500ms at 10 a second", d)
		}
		r.pause(300 * time.Millisecond)
		start = time.Now()
		if err := r.wait(t.Context(), 0, nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			t.Errorf("a call after a 300ms pause went after %v", d)
		}
		// A message's first appends try during a pause; the others wait.
		a := newRateBudget(600, 4, 2)
		a.pause(time.Second)
		start = time.Now()
		for rank := range 3 {
			if err := a.wait(t.Context(), rank, nil); err != nil {
				t.Fatal(err)
			}
			if want := time.Duration(rank/2) * time.Second; time.Since(start) != want {
				t.Errorf("append %d in a 1s pause went after %v, want %v", rank+1, time.Since(start), want)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r.pause(time.Hour)
		if err := r.wait(ctx, 0, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("wait in a cancelled context returned %v", err)
		}
		stop := make(chan struct{})
		close(stop)
		if err := r.wait(t.Context(), 0, stop); !errors.Is(err, errGaveUp) {
			t.Errorf("wait given up returned %v", err)
		}
	})
}

// TestRateBudgetIsFair: a message streaming for a minute takes every
// append the budget has, but one that starts meanwhile gets its first
// appends at once, and then its turns before the long one's.
func TestRateBudgetIsFair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRateBudget(60, 4, 2) // one a second, a burst of 4, 2 kept for first appends
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		long := 0
		go func() {
			for ; ; long++ {
				if r.wait(ctx, long, nil) != nil {
					return
				}
			}
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// The long message took the burst less the reserve, then one a
		// second.
		if long != 2+10 {
			t.Errorf("the long message made %d appends in 10s, want 12", long)
		}
		start := time.Now()
		for i := range 4 {
			if err := r.wait(ctx, i, nil); err != nil {
				t.Fatal(err)
			}
			if i == 1 && time.Since(start) != 0 {
				t.Errorf("a new message's first 2 appends took %v, want no wait", time.Since(start))
			}
		}
		// Its 3rd and 4th wait until the reserve is back and one more
		// token came (3s, then 1s), ahead of the long one's, which made
		// none meanwhile.
		if d, n := time.Since(start), long; d != 4*time.Second || n != 12 {
			t.Errorf("the new message's 4 appends took %v, and the long one made %d meanwhile; want 4s and none", d, n-12)
		}
	})
}
