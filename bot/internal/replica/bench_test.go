package replica_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// The queue's cost on loopback, with a real redis-server:
//
//	go test -run '^$' -bench . -benchtime 2000x ./bot/internal/replica/

// BenchmarkLatency measures what the queue adds to one question: from
// Submit (as the bot's event loop calls it) to the handler starting on a
// replica, one question at a time. It reports the median and the 99th
// percentile.
func BenchmarkLatency(b *testing.B) {
	srv := newServer(b)
	s := open(b, srv.URL(0), replica.Config{MaxQueued: 1 << 20})
	started := make(chan time.Time, 1)
	serve(b, s, func(ctx context.Context, d *replica.Delivery) error {
		started <- time.Now()
		return nil
	})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		q := replica.Question{ID: fmt.Sprint(i), Thread: fmt.Sprintf("C1/%d", i), Payload: payload, Channel: "C1", TS: fmt.Sprint(i)}
		t0 := time.Now()
		s.Submit(q, nil)
		lat = append(lat, (<-started).Sub(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkThroughput measures questions per second through the queue
// with one and two replicas (eight workers each, on the same machine as
// Redis), with handlers that return at once (the queue's own ceiling)
// and with handlers that take 20ms (answers take seconds: there the
// workers are the limit, and a second replica doubles them).
func BenchmarkThroughput(b *testing.B) {
	for _, work := range []time.Duration{0, 20 * time.Millisecond} {
		for _, replicas := range []int{1, 2} {
			b.Run(fmt.Sprintf("work=%s/replicas=%d", work, replicas), func(b *testing.B) {
				srv := newServer(b)
				var done atomic.Int64
				all := make(chan struct{})
				n := int64(b.N)
				var stores []*replica.Store
				for r := range replicas {
					s := open(b, srv.URL(0), replica.Config{Replica: fmt.Sprint("r", r), MaxQueued: 1 << 20, MaxBuffered: 1 << 20})
					stores = append(stores, s)
					serve(b, s, func(ctx context.Context, d *replica.Delivery) error {
						if work > 0 {
							time.Sleep(work)
						}
						if done.Add(1) == n {
							close(all)
						}
						return nil
					})
				}
				b.ResetTimer()
				t0 := time.Now()
				for i := range b.N {
					// A thread each, as questions from many users are; a
					// tenth are follow-ups in an earlier question's thread.
					thread := i
					if i%10 == 9 {
						thread = i - 5
					}
					q := replica.Question{ID: fmt.Sprint(i), Thread: fmt.Sprintf("C1/%d", thread), Payload: payload}
					stores[i%replicas].Submit(q, nil)
				}
				<-all
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "questions/s")
			})
		}
	}
}

// BenchmarkStop measures a Stop published through one replica reaching
// the handler on another.
func BenchmarkStop(b *testing.B) {
	srv := newServer(b)
	a := open(b, srv.URL(0), replica.Config{Replica: "a", MaxQueued: 1 << 20})
	other := open(b, srv.URL(0), replica.Config{Replica: "b"})
	running := make(chan string)
	stopped := make(chan time.Time)
	serve(b, a, func(ctx context.Context, d *replica.Delivery) error {
		running <- d.ID
		<-ctx.Done()
		stopped <- time.Now()
		return nil
	})
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		q := replica.Question{ID: fmt.Sprint(i), Thread: fmt.Sprintf("C1/%d", i)}
		if _, err := a.Enqueue(ctx, q); err != nil {
			b.Fatal(err)
		}
		<-running
		b.StartTimer()
		t0 := time.Now()
		if err := other.PublishStop(ctx, replica.Stop{Question: q.ID, By: "U1"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-stopped).Sub(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// payload is about the size of a question's payload (a message with its
// text and file references, as JSON).
var payload = []byte(fmt.Sprintf(`{"channel":"C0123456789","user":"U0123456789","ts":"1712345678.000100","thread_ts":"1712345678.000100","text":%q}`, string(make([]byte, 300))))

var percentileMu sync.Mutex

func reportPercentiles(b *testing.B, lat []time.Duration) {
	percentileMu.Lock()
	defer percentileMu.Unlock()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the percentiles say it better
}
