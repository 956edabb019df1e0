package bot_test

import (
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// The number check, end to end: the answer's numbers are looked up in
// what the conversation holds, and those found nowhere are listed under
// the answer.

// numberWarning returns the answer's :warning: line of the number check,
// or "".
func numberWarning(t *testing.T, msgs []slacktest.Message) string {
	t.Helper()
	answers := botMessages(msgs, isAnswer)
	if len(answers) == 0 {
		t.Fatalf("no answer:\n%s", dump(msgs))
	}
	for _, line := range strings.Split(answers[len(answers)-1].Visible(), "\n") {
		if strings.HasPrefix(line, ":warning: not found in any run's output") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestNumberCheck: a run prints a value; the answer gives it whole,
// rounded, as a percentage and with the question's numbers (no warning),
// or adds a number no run printed (listed, unless the check is off).
func TestNumberCheck(t *testing.T) {
	for _, tc := range []struct {
		name, question, say string
		off                 bool
		warning, count      string
	}{
		{name: "reformatted", question: "what share is 8000 of 12000? compute 2/3",
			say: " That is about 66.67%, or 0.667, i.e. 2 of every 3; of 12,000 people, 8,000 would.", count: "0"},
		{name: "invented", question: "compute 1234 * 5", say: " Last quarter it was 43.7.",
			warning: ":warning: not found in any run's output: 43.7", count: "1"},
		{name: "off", question: "compute 1234 * 5", say: " Last quarter it was 43.7.", off: true, count: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withConfig(func(c *bot.Config) { c.NumberCheckOff = tc.off }))
			h.wire.setSay(tc.say)
			d := h.post("C0MATH", "U0ALICE", mention+tc.question, "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			if w := numberWarning(t, msgs); w != tc.warning {
				t.Errorf("warning = %q, want %q\n%s", w, tc.warning, dump(msgs))
			}
			if got := h.metric(t, "sandpiper_numbers_unverified_total"); got != tc.count {
				t.Errorf("sandpiper_numbers_unverified_total = %q, want %s", got, tc.count)
			}
		})
	}
}

// TestNumberCheckReadsEarlierTurns: a follow-up may repeat an earlier
// turn's result without a warning.
func TestNumberCheckReadsEarlierTurns(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7.25", "")
	h.waitReplies("C0MATH", d.TS, 1)
	h.wire.setSay(" Before, we found 43.5.")
	h.post("C0MATH", "U0ALICE", "compute 2**10", d.TS)
	msgs := h.waitReplies("C0MATH", d.TS, 2)
	if w := numberWarning(t, msgs); w != "" {
		t.Errorf("a false alarm for the earlier turn's result: %q\n%s", w, dump(msgs))
	}
}
