package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFeedbackFileRotates: the file is rotated by size into
// feedback.jsonl.1, which replaces the one before; tallies count what the
// two files keep, and survive reopening.
func TestFeedbackFileRotates(t *testing.T) {
	dir := t.TempDir()
	rec := func(i int) Feedback {
		r := "positive"
		if i%3 == 0 {
			r = "negative"
		}
		return Feedback{Channel: "C1", ThreadTS: "1.000", MessageTS: "1.001", User: fmt.Sprintf("U%04d", i), Rating: r, Model: "m", Time: time.Unix(1e9, 0).UTC()}
	}
	line, _ := json.Marshal(rec(1))
	per := 10 // records a file holds
	s, err := OpenFeedbackFile(dir, int64(per*(len(line)+1)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 25 {
		if err := s.AddFeedback(ctx, rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddFeedback(ctx, Feedback{Channel: "C2", Rating: "positive"}); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, FeedbackFileName))
	prev, _ := os.ReadFile(filepath.Join(dir, FeedbackFileName+".1"))
	if n, m := strings.Count(string(prev), "\n"), strings.Count(string(cur), "\n"); n != per || m != 6 {
		t.Fatalf("files hold %d and %d records, want %d rotated and 6 current", n, m, per)
	}
	if !strings.Contains(string(prev), `"user":"U0010"`) || strings.Contains(string(prev), `"user":"U0009"`) {
		t.Errorf("the rotated file does not hold records 10–19:\n%s", prev)
	}
	// Records 10–24 of C1 are kept: 5 of them (12, 15, 18, 21, 24) negative.
	want := map[string]int64{"positive": 10, "negative": 5}
	if got, _ := s.FeedbackTally(ctx, "C1"); !maps.Equal(got, want) {
		t.Errorf("tally = %v, want %v", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, FeedbackFileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("feedback.jsonl: %v, mode %v; want 0600 (it holds user IDs)", err, fi.Mode())
	}

	// Reopened (a restart), after a write cut short and a stray line.
	f, _ := os.OpenFile(filepath.Join(dir, FeedbackFileName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n{\"channel\":\"C1\",\"rat")
	f.Close()
	s, err = OpenFeedbackFile(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FeedbackTally(ctx, "C1"); !maps.Equal(got, want) {
		t.Errorf("tally after reopening = %v, want %v", got, want)
	}
	if err := s.AddFeedback(ctx, rec(30)); err != nil {
		t.Fatal(err)
	}
	s, _ = OpenFeedbackFile(dir, 1<<20)
	want["negative"]++
	if got, _ := s.FeedbackTally(ctx, "C1"); !maps.Equal(got, want) {
		t.Errorf("the record after a cut line was lost: tally = %v, want %v", got, want)
	}
	if got, _ := s.FeedbackTally(ctx, "C9"); len(got) != 0 {
		t.Errorf("tally of a channel without feedback = %v", got)
	}
	if err := s.AddFeedback(ctx, Feedback{Channel: "C1"}); err == nil {
		t.Error("a record without a rating was taken")
	}
}
