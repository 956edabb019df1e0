package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Feedback is one rating of an answer.
type Feedback struct {
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts"`
	// MessageTS is the rated answer's message (a thread may hold several).
	MessageTS string    `json:"message_ts,omitempty"`
	User      string    `json:"user"`
	Rating    string    `json:"rating"` // e.g. "good" or "bad"
	Model     string    `json:"model,omitempty"`
	Time      time.Time `json:"time"`
}

// AddFeedback appends a rating to the shared feedback records (a stream
// that keeps the latest 100,000) and counts it in its channel's tally,
// in one step.
func (s *Store) AddFeedback(ctx context.Context, f Feedback) error {
	if f.Channel == "" || f.Rating == "" {
		return fmt.Errorf("replica: feedback needs a channel and a rating")
	}
	if f.Time.IsZero() {
		f.Time = time.Now()
	}
	f.Time = f.Time.UTC()
	rec, err := json.Marshal(f)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.k.feedback(), MaxLen: feedbackMaxLen, Approx: true, Values: []any{"r", rec}})
		p.HIncrBy(ctx, s.k.tally(f.Channel), f.Rating, 1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("replica: adding feedback: %w", err)
	}
	return nil
}

// FeedbackTally returns a channel's ratings counted by value (all time,
// across replicas).
func (s *Store) FeedbackTally(ctx context.Context, channel string) (map[string]int64, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.tally(channel)).Result()
	if err != nil {
		return nil, fmt.Errorf("replica: feedback tally: %w", err)
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[k] = n
	}
	return out, nil
}

// FeedbackRecords returns up to n records after the cursor ("" for the
// oldest kept), oldest first, and the cursor to pass next; for exporting
// them (as feedback.jsonl lines).
func (s *Store) FeedbackRecords(ctx context.Context, after string, n int64) ([]Feedback, string, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	msgs, err := s.rdb.XRangeN(ctx, s.k.feedback(), start, "+", n).Result()
	if err != nil {
		return nil, after, fmt.Errorf("replica: reading feedback: %w", err)
	}
	out := make([]Feedback, 0, len(msgs))
	for _, m := range msgs {
		after = m.ID
		raw, _ := m.Values["r"].(string)
		var f Feedback
		if json.Unmarshal([]byte(raw), &f) == nil {
			out = append(out, f)
		}
	}
	return out, after, nil
}
