package bot

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

func TestTallyText(t *testing.T) {
	for _, tc := range []struct {
		t    map[string]int64
		want string
	}{
		{nil, "No feedback on my answers in this channel yet"},
		{map[string]int64{ratingPositive: 2, ratingNegative: 1}, ":+1: helpful 2 clicks, :-1: not helpful 1 click (67% helpful)"},
		{map[string]int64{ratingPositive: 1234}, ":+1: helpful 1,234 clicks, :-1: not helpful 0 clicks (100% helpful)"},
	} {
		if got := tallyText(tc.t); !strings.Contains(got, tc.want) {
			t.Errorf("tallyText(%v) = %q, want %q in it", tc.t, got, tc.want)
		}
	}
}

// TestFeedbackGolden: the feedback buttons ending an answer, as Slack
// gets them.
func TestFeedbackGolden(t *testing.T) {
	blocks := feedbackFooter(t.Context(), answer.Info{Model: "anthropic/claude-opus-4.8\x1b[31m"})
	slacktest.GoldenJSON(t, filepath.Join("testdata", "feedback", "buttons.json"), blocks)
}
