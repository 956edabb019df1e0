package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/bot/store"
)

// countingFirer counts fires by schedule and time, across schedulers.
type countingFirer struct {
	mu    sync.Mutex
	fires map[string]int
}

func (f *countingFirer) Fire(ctx context.Context, sc schedule.Schedule, at time.Time) (schedule.Fire, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fires[sc.ID+" "+at.UTC().Format(time.RFC3339)]++
	return schedule.Fire{Message: "ts"}, nil
}

func (f *countingFirer) Tell(context.Context, schedule.Schedule, schedule.Notice) {}

// TestTwoReplicasFireOnce: two replicas on one real redis-server, each
// with its scheduler, deal with the same due times at the same moment:
// each of 20 schedules fires once, then once again at its next time.
func TestTwoReplicasFireOnce(t *testing.T) {
	srv := redistest.Start(t)
	log := slog.New(slog.DiscardHandler)
	f := &countingFirer{fires: map[string]int{}}
	var scheds []*schedule.Scheduler
	var stores []store.RedisSchedules
	for i := range 2 {
		st, err := replica.Open(t.Context(), replica.Config{URL: srv.URL(0), Replica: fmt.Sprint("r", i), Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rs := store.NewRedisSchedules(st)
		stores = append(stores, rs)
		scheds = append(scheds, schedule.New(rs, f, schedule.Limits{}, log))
	}
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range 20 {
		sc := schedule.Schedule{ID: fmt.Sprintf("s%02d", i), Channel: "C1", Owner: "U1", Question: "q", Spec: "0 9 * * *", TZ: "UTC", Created: created}
		if err := stores[i%2].Put(t.Context(), sc); err != nil {
			t.Fatal(err)
		}
	}
	for _, now := range []time.Time{time.Date(2026, 11, 2, 9, 0, 5, 0, time.UTC), time.Date(2026, 11, 3, 9, 0, 5, 0, time.UTC)} {
		var wg sync.WaitGroup
		for _, s := range scheds {
			wg.Go(func() { s.Tick(t.Context(), now) })
		}
		wg.Wait()
		for _, s := range scheds {
			s.Wait()
		}
	}
	if len(f.fires) != 40 {
		t.Errorf("%d (schedule, time) pairs fired, want 40: %v", len(f.fires), f.fires)
	}
	for k, n := range f.fires {
		if n != 1 {
			t.Errorf("%s fired %d times", k, n)
		}
	}
	list, err := stores[1].List(t.Context())
	if err != nil || len(list) != 20 {
		t.Fatalf("List: %d, %v", len(list), err)
	}
	for _, sc := range list {
		if sc.Last == nil || !sc.Last.At.Equal(time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: last fire %+v", sc.ID, sc.Last)
		}
	}
}
