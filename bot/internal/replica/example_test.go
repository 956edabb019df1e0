package replica_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// The life of a replica: open the store, submit each accepted event from
// the event loop, answer from the queue, shut down gracefully. (Not run:
// it needs a Redis.)
func Example() {
	ctx := context.Background()
	store, err := replica.Open(ctx, replica.Config{
		URL:    os.Getenv(replica.EnvURL),
		Logger: slog.Default(),
	})
	if err != nil {
		slog.Error("cannot start", "err", err) // names SANDPIPER_REDIS_URL
		return
	}
	defer store.Close()

	// The event loop, after acking an envelope and deciding the message is
	// a question: Submit never blocks.
	type message struct{ Channel, TS, ThreadTS, User, Text string }
	m := message{Channel: "C1", TS: "1712345678.000100", ThreadTS: "1712345678.000100", User: "U1", Text: "what is 2+2?"}
	payload, _ := json.Marshal(m)
	store.Submit(replica.Question{
		ID:      m.Channel + "/" + m.TS,
		Thread:  m.Channel + "/" + m.ThreadTS,
		Payload: payload,
		EventID: "Ev0123", Channel: m.Channel, TS: m.TS,
	}, func(err error) {
		if errors.Is(err, replica.ErrQueueFull) || errors.Is(err, replica.ErrBacklog) {
			// Tell the user to ask again in a minute.
		}
	})

	// The workers.
	go store.Serve(ctx, func(ctx context.Context, d *replica.Delivery) error {
		var m message
		json.Unmarshal(d.Payload, &m)
		if d.Attempt > replica.MaxAttempts {
			// Say the question could not be answered, and stop.
			return nil
		}
		if d.Attempt > 1 {
			// Say it was picked up again; mark the earlier attempt's cards.
		}
		// Answer. When ctx is cancelled, context.Cause says why: a
		// *replica.StopError (post "stopped by"), replica.ErrLost (post
		// nothing more), or replica.ErrShutdown (return ctx.Err() to hand
		// the question back).
		return nil
	})

	// On SIGTERM: finish or hand back within the grace period.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store.Shutdown(sctx)
}
