package bot_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// The feedback tests: each answer ends with Slack's feedback buttons; a
// click, through the fake Slack's block_actions envelope, is counted,
// written to feedback.jsonl and thanked for; admins read the tally.

// feedbackButtons returns the values of the answer's feedback buttons,
// failing when the answer does not end with them.
func feedbackButtons(t *testing.T, answer slacktest.Message) (positive, negative string) {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Positive struct {
				Value string `json:"value"`
			} `json:"positive_button"`
			Negative struct {
				Value string `json:"value"`
			} `json:"negative_button"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(answer.Blocks, &blocks); err != nil || len(blocks) == 0 {
		t.Fatalf("answer blocks %s: %v", answer.Blocks, err)
	}
	last := blocks[len(blocks)-1]
	if last.Type != "context_actions" || len(last.Elements) != 1 || last.Elements[0].Type != "feedback_buttons" {
		t.Fatalf("the answer does not end with feedback buttons: %s", answer.Blocks)
	}
	return last.Elements[0].Positive.Value, last.Elements[0].Negative.Value
}

// clickFeedback clicks a feedback button of the message ts and waits for the ack.
func (h *harness) clickFeedback(channel, ts, user, value string) {
	h.t.Helper()
	env, err := h.slack.ClickButton(slacktest.Click{Channel: channel, MessageTS: ts, User: user, ActionID: "sandpiper_feedback", Value: value})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		h.t.Fatal("click not acked")
	}
}

// feedbackRecords reads the bot's feedback.jsonl.
func (h *harness) feedbackRecords() []map[string]any {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.cfg.DataDir, "feedback.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		h.t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			h.t.Fatalf("feedback.jsonl holds %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// waitFeedback waits until feedback.jsonl holds n records.
func (h *harness) waitFeedback(n int) []map[string]any {
	h.t.Helper()
	var recs []map[string]any
	eventually(10*time.Second, func() bool { recs = h.feedbackRecords(); return len(recs) >= n })
	if len(recs) != n {
		h.t.Fatalf("feedback.jsonl holds %d records, want %d: %v", len(recs), n, recs)
	}
	return recs
}

// TestFeedbackClickIsRecorded: a click on an answer's feedback buttons is
// counted in sandpiper_feedback_total, appended to feedback.jsonl with
// where, who, the rating, the model and the time, and thanked for in the
// thread, to the clicker alone.
func TestFeedbackClickIsRecorded(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	answer := botMessages(h.waitReplies("C0MATH", d.TS, 1), isAnswer)[0]
	pos, neg := feedbackButtons(t, answer)
	if pos != "positive:fake/wire" || neg != "negative:fake/wire" {
		t.Errorf("button values %q, %q; want the rating and the model", pos, neg)
	}
	if got := h.metric(t, `sandpiper_feedback_total{rating="positive"}`); got != "0" {
		t.Errorf("positive feedback before any click = %q, want 0", got)
	}

	before := time.Now().UTC().Add(-time.Second)
	h.clickFeedback("C0MATH", answer.TS, "U0BOB", pos)
	recs := h.waitFeedback(1)
	r := recs[0]
	if r["channel"] != "C0MATH" || r["thread_ts"] != d.TS || r["message_ts"] != answer.TS || r["user"] != "U0BOB" || r["rating"] != "positive" || r["model"] != "fake/wire" {
		t.Errorf("record = %v", r)
	}
	if at, err := time.Parse(time.RFC3339Nano, r["time"].(string)); err != nil || at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("record time %v: %v", r["time"], err)
	}
	if msgs, ok := waitEphemeral(h, "C0MATH", "U0BOB", "Thanks for the feedback"); !ok {
		t.Errorf("no ephemeral thanks to the clicker:\n%s", dump(msgs))
	} else {
		for _, m := range msgs {
			if m.Ephemeral && m.EphemeralTo == "U0BOB" && m.ThreadTS != d.TS {
				t.Errorf("the thanks is not in the answer's thread: %+v", m)
			}
		}
	}

	h.clickFeedback("C0MATH", answer.TS, "U0ALICE", neg)
	h.waitFeedback(2)
	for rating, want := range map[string]string{"positive": "1", "negative": "1"} {
		if got := h.metric(t, `sandpiper_feedback_total{rating="`+rating+`"}`); got != want {
			t.Errorf("sandpiper_feedback_total{rating=%q} = %q, want %s", rating, got, want)
		}
	}
	if _, ok := waitEphemeral(h, "C0MATH", "U0ALICE", "what was wrong"); !ok {
		t.Error("no ephemeral reply to a negative click")
	}
}

// TestFeedbackOnOldAnswer: a click on an answer from before a restart
// counts, and so does one on an answer whose buttons carry no model (as
// an older version posted them).
func TestFeedbackOnOldAnswer(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	answer := botMessages(h.waitReplies("C0MATH", d.TS, 1), isAnswer)[0]
	pos, _ := feedbackButtons(t, answer)
	h.restart()
	h.clickFeedback("C0MATH", answer.TS, "U0ALICE", pos)

	api := slack.New(slacktest.BotToken, slack.OptionAPIURL(h.slack.URL))
	btn := func(text, value string) *slack.FeedbackButton {
		return slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, text, false, false), value)
	}
	_, old, err := api.PostMessage("C0OLD", slack.MsgOptionText("an old answer", false),
		slack.MsgOptionBlocks(slack.NewContextActionsBlock("", slack.NewFeedbackButtonsBlockElement("sandpiper_feedback", btn("Good", "positive"), btn("Bad", "negative")))))
	if err != nil {
		t.Fatal(err)
	}
	h.clickFeedback("C0OLD", old, "U0BOB", "negative")
	recs := h.waitFeedback(2)
	if recs[0]["thread_ts"] != d.TS || recs[0]["model"] != "fake/wire" {
		t.Errorf("click after a restart recorded as %v", recs[0])
	}
	if recs[1]["channel"] != "C0OLD" || recs[1]["thread_ts"] != old || recs[1]["rating"] != "negative" || recs[1]["model"] != nil {
		t.Errorf("click on an old answer recorded as %v", recs[1])
	}
	if got := h.metric(t, `sandpiper_feedback_total{rating="negative"}`); got != "1" {
		t.Errorf("negative feedback = %q, want 1", got)
	}
}

// TestFeedbackTally: /sandpiper feedback gives admins the channel's
// tally, after a restart too, and tells others it is for admins.
func TestFeedbackTally(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	answer := botMessages(h.waitReplies("C0MATH", d.TS, 1), isAnswer)[0]
	pos, neg := feedbackButtons(t, answer)
	h.clickFeedback("C0MATH", answer.TS, "U0ALICE", pos)
	h.clickFeedback("C0MATH", answer.TS, "U0BOB", pos)
	h.clickFeedback("C0MATH", answer.TS, "U0OWNER", neg)
	h.waitFeedback(3)
	h.restart()

	slash := func(channel, user string) {
		t.Helper()
		env, err := h.slack.SlashCommand(channel, user, "/sandpiper", "feedback")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
			t.Fatal("slash command not acked")
		}
	}
	slash("C0MATH", "U0OWNER")
	if msgs, ok := waitEphemeral(h, "C0MATH", "U0OWNER", ":+1: helpful 2 clicks, :-1: not helpful 1 click (67% helpful)"); !ok {
		t.Errorf("no tally for the owner:\n%s", dump(msgs))
	}
	slash("C0OTHER", "U0ADMIN")
	if msgs, ok := waitEphemeral(h, "C0OTHER", "U0ADMIN", "No feedback on my answers in this channel yet"); !ok {
		t.Errorf("another channel's tally is not empty:\n%s", dump(msgs))
	}
	slash("C0MATH", "U0BOB")
	if msgs, ok := waitEphemeral(h, "C0MATH", "U0BOB", "only workspace admins"); !ok {
		t.Errorf("no refusal for a non-admin:\n%s", dump(msgs))
	}
	for _, m := range h.slack.Messages("C0MATH") {
		if m.Ephemeral && m.EphemeralTo == "U0BOB" && strings.Contains(m.Visible(), "clicks") {
			t.Errorf("a non-admin was shown the tally: %s", m.Visible())
		}
	}
}
