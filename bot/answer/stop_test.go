package answer

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

func TestStopValueRoundTrips(t *testing.T) {
	k := Key{Channel: "C0MATH", ThreadTS: "1700000000.000100", QuestionTS: "1700000000.000300"}
	got, asker, ok := ParseStopValue(k.StopValue("U0ALICE"))
	if !ok || got != k || asker != "U0ALICE" {
		t.Errorf("parse(value) = %+v %q %v", got, asker, ok)
	}
	for _, bad := range []string{"", "C0MATH", "C0MATH 1 2", "C0MATH 1 2 U0ALICE extra", "c0math 1 2 U0ALICE", "C0MATH 1 2 <!here>"} {
		if _, _, ok := ParseStopValue(bad); ok {
			t.Errorf("ParseStopValue(%q) accepted", bad)
		}
	}
}

// TestRunningAnswersStop: a stop cancels the named answer's context with
// who stopped it, by question or by thread; after done, a stop is a no-op.
func TestRunningAnswersStop(t *testing.T) {
	var r runningAnswers
	m := Question{Channel: "C1", ThreadTS: "1.0", TS: "1.1", User: "U0ALICE"}
	ctx, done := r.start(context.Background(), m)
	other, otherDone := r.start(context.Background(), Question{Channel: "C1", ThreadTS: "2.0", TS: "2.0", User: "U0BOB"})
	defer otherDone()

	if _, _, ok := r.find(Key{Channel: "C1", ThreadTS: "1.0", QuestionTS: "1.0"}); ok {
		t.Error("found an answer for another question of the thread")
	}
	k, a, ok := r.find(Key{Channel: "C1", ThreadTS: "1.0"})
	if !ok || k.QuestionTS != "1.1" || a.asker != "U0ALICE" {
		t.Fatalf("find by thread = %+v %+v %v", k, a, ok)
	}
	a.cancel(&stoppedError{By: "U0ADMIN"})
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("context not cancelled")
	}
	if by := stoppedBy(ctx); by != "U0ADMIN" {
		t.Errorf("stoppedBy = %q", by)
	}
	if other.Err() != nil {
		t.Error("stopping one answer stopped another")
	}
	if by := done(); by != "U0ADMIN" {
		t.Errorf("done() = %q, want the stopper", by)
	}
	if _, _, ok := r.find(k); ok {
		t.Error("a finished answer is still running")
	}
}

// TestLoadingMessagesHaveNoCommas: slack-go joins loading messages with
// commas, so one holding a comma would show as two.
func TestLoadingMessagesHaveNoCommas(t *testing.T) {
	for status := range loadingFor {
		msgs := loadingMessages(status)
		if len(msgs) == 0 {
			t.Errorf("%q has no loading messages", status)
		}
		for _, m := range msgs {
			if strings.Contains(m, ",") || m == "" {
				t.Errorf("%q: loading message %q", status, m)
			}
		}
	}
	loadingFor["test, with a comma"] = []string{"one, two", ","}
	defer delete(loadingFor, "test, with a comma")
	if got := loadingMessages("test, with a comma"); len(got) != 1 || got[0] != "one  two" {
		t.Errorf("loadingMessages = %q, want the comma taken out and the empty one dropped", got)
	}
}

// TestLoadingMessagesGolden: the status lines and the loading messages
// Slack cycles through under each, as the answerer sends them.
func TestLoadingMessagesGolden(t *testing.T) {
	got := map[string][]string{}
	for status := range loadingFor {
		got[status] = loadingMessages(status)
	}
	slacktest.GoldenJSON(t, filepath.Join("testdata", "loading_messages.json"), got)
}
