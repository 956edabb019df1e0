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

// TestNumberCheckAcceptsReformattedValues: a run prints 2/3; the answer
// gives it whole, rounded, as a percentage and with the question's
// numbers: no warning.
func TestNumberCheckAcceptsReformattedValues(t *testing.T) {
	h := newHarness(t)
	h.wire.setSay(" That is about 66.67%, or 0.667, i.e. 2 of every 3; of 12,000 people, 8,000 would.")
	d := h.post("C0MATH", "U0ALICE", mention+"what share is 8000 of 12000? compute 2/3", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if w := numberWarning(t, msgs); w != "" {
		t.Errorf("a false alarm for rounded and reformatted values: %q\n%s", w, dump(msgs))
	}
	if got := h.metric(t, "sandpiper_numbers_unverified_total"); got != "0" {
		t.Errorf("sandpiper_numbers_unverified_total = %q, want 0", got)
	}
}

// TestNumberCheckFlagsAnInventedNumber: a number the runs never printed
// is listed under the answer; the computed one is not.
func TestNumberCheckFlagsAnInventedNumber(t *testing.T) {
	h := newHarness(t)
	h.wire.setSay(" Last quarter it was 43.7.")
	d := h.post("C0MATH", "U0ALICE", mention+"compute 1234 * 5", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if w := numberWarning(t, msgs); w != ":warning: not found in any run's output: 43.7" {
		t.Errorf("warning = %q, want 43.7 alone\n%s", w, dump(msgs))
	}
	if got := h.metric(t, "sandpiper_numbers_unverified_total"); got != "1" {
		t.Errorf("sandpiper_numbers_unverified_total = %q, want 1", got)
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

// TestNumberCheckOff: SANDPIPER_NUMBER_CHECK=off shows no warning.
func TestNumberCheckOff(t *testing.T) {
	h := newHarness(t, withConfig(func(c *bot.Config) { c.NumberCheckOff = true }))
	h.wire.setSay(" Last quarter it was 43.7.")
	d := h.post("C0MATH", "U0ALICE", mention+"compute 1234 * 5", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if w := numberWarning(t, msgs); w != "" {
		t.Errorf("the check is off, yet: %q", w)
	}
}
