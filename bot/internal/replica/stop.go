package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Stop asks for an answer to stop, whichever replica is answering it.
type Stop struct {
	// Question is the Question.ID of the answer to stop. When empty, the
	// answer being worked on in Thread stops, whichever it is.
	Question string `json:"question,omitempty"`
	Thread   string `json:"thread,omitempty"`
	// By is who stopped it (a Slack user id), for the thread.
	By string `json:"by,omitempty"`
}

func (st Stop) matches(d Delivery) bool {
	if st.Question != "" {
		return d.ID == st.Question
	}
	return st.Thread != "" && d.Thread == st.Thread
}

func decodeStop(payload string) (Stop, error) {
	var st Stop
	err := json.Unmarshal([]byte(payload), &st)
	return st, err
}

// StopError is the cause of a handler's context being cancelled because
// someone stopped the answer; context.Cause returns it.
type StopError struct {
	By string
}

func (e *StopError) Error() string {
	if e.By == "" {
		return "replica: answer stopped"
	}
	return "replica: answer stopped by " + e.By
}

// PublishStop stops an answer on whichever replica holds it: the replica
// serving it cancels its handler's context with a *[StopError] as soon as
// the pub/sub message arrives (a millisecond or so on a local network). A
// stop for a Question is also kept for the dedupe TTL, so that it holds if
// the question has not started yet, and is re-read every second in case
// the message was missed.
func (s *Store) PublishStop(ctx context.Context, st Stop) error {
	if st.Question == "" && st.Thread == "" {
		return errors.New("replica: stop names neither a question nor a thread")
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if st.Question != "" {
			p.Set(ctx, s.k.stop(st.Question), st.By, s.cfg.DedupeTTL)
		}
		p.Publish(ctx, s.k.stops(), payload)
		return nil
	})
	if err != nil {
		return fmt.Errorf("replica: stop: %w", err)
	}
	return nil
}

// SubscribeStops returns the stop requests published by any replica from
// now until ctx is done, when the channel closes. Serve already acts on
// them for the answers it runs; this is for other listeners. Requests
// published while the subscription is reconnecting are missed.
func (s *Store) SubscribeStops(ctx context.Context) <-chan Stop {
	out := make(chan Stop, 16)
	ps := s.rdb.Subscribe(ctx, s.k.stops())
	// Wait for the subscription to hold, so that a stop published after
	// SubscribeStops returns is seen.
	if _, err := ps.Receive(ctx); err != nil {
		s.log.Debug("stop subscription not confirmed; it retries", "err", err)
	}
	go func() {
		defer close(out)
		defer ps.Close()
		receive(ctx, ps, func(m *redis.Message) bool {
			st, err := decodeStop(m.Payload)
			if err != nil {
				return true
			}
			select {
			case out <- st:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out
}

// State is where a question is.
type State string

const (
	Unknown State = ""        // never queued with an ID, or forgotten (after a day)
	Queued  State = "queued"  // waiting, or handed back, or its replica stopped
	Running State = "running" // being answered by Replica
	Done    State = "done"    // finished (answered, failed or stopped) by Replica
)

// AnswerState says where the question with Question.ID id is, so that a
// replica receiving a Stop click can tell "finished already" from
// "running elsewhere". A question marked running whose replica no longer
// holds the thread's lease (the replica stopped) is reported Queued: it
// will be taken over.
func (s *Store) AnswerState(ctx context.Context, id string) (State, string, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.answer(id)).Result()
	if err != nil {
		return Unknown, "", fmt.Errorf("replica: answer state: %w", err)
	}
	state, replica := State(m["state"]), m["replica"]
	if state == Running {
		holder, err := s.rdb.Get(ctx, s.k.lease(m["thread"])).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Unknown, "", fmt.Errorf("replica: answer state: %w", err)
		}
		if holder != replica {
			return Queued, "", nil
		}
	}
	return state, replica, nil
}

// receive calls f with each message ps receives, until ctx is done, the
// subscription closes, or f returns false.
func receive(ctx context.Context, ps *redis.PubSub, f func(*redis.Message) bool) {
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok || !f(m) {
				return
			}
		}
	}
}
