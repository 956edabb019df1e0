package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

func TestMentionShowsToolCardThenAnswer(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")

	// Every envelope is acked.
	for _, env := range d.Envelopes {
		if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
			t.Fatalf("envelope %s not acked", env)
		}
	}
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	cards := botMessages(msgs, isCard)
	answers := botMessages(msgs, isAnswer)
	if len(cards) != 1 || len(answers) != 1 {
		t.Fatalf("got %d cards and %d answers, want 1 and 1 (a mention arrives twice but is answered once):\n%s", len(cards), len(answers), dump(msgs))
	}
	card := cards[0].Visible()
	for _, want := range []string{"Ran Python", "exit 0", "print(6*7)", "*Output*", "42"} {
		if !strings.Contains(card, want) {
			t.Errorf("tool card lacks %q:\n%s", want, card)
		}
	}
	if cards[0].Edits != 1 {
		t.Errorf("card edits = %d, want 1 (posted running, then updated)", cards[0].Edits)
	}
	if cards[0].TS > answers[0].TS {
		t.Errorf("answer posted before the tool card")
	}
	if got := answers[0].Visible(); !strings.Contains(got, "The result is *42*.") {
		t.Errorf("answer = %q, want the model's Markdown as mrkdwn with the result", got)
	}
	// The working reaction is gone when the answer is there.
	q := msgs[0]
	if len(q.Reactions) != 0 {
		t.Errorf("question reactions = %v, want none after answering", q.Reactions)
	}
	if n := len(h.slack.Calls("reactions.add")); n != 1 {
		t.Errorf("reactions.add calls = %d, want 1", n)
	}
	if h.slack.Status("C0MATH", d.TS) == "" {
		t.Errorf("no assistant status was set while working")
	}
}

func TestRunningCardIsPostedBeforeTheRunEnds(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a bit", "")
	msgs, ok := h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			if isCard(m) && strings.Contains(m.Visible(), "Running Python") {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no running card:\n%s", dump(msgs))
	}
	card := botMessages(msgs, isCard)[0].Visible()
	if !strings.Contains(card, "time.sleep(3)") {
		t.Errorf("running card lacks the code:\n%s", card)
	}
	msgs = h.waitReplies("C0MATH", d.TS, 1)
	if got := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(got, "woke") {
		t.Errorf("finished card lacks the output:\n%s", got)
	}
}

func TestFollowUps(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 40+2", "")
	h.waitReplies("C0MATH", d.TS, 1)

	// Without a mention, in the bot's thread.
	h.post("C0MATH", "U0BOB", "now square that", d.TS)
	msgs := h.waitReplies("C0MATH", d.TS, 2)
	answers := botMessages(msgs, isAnswer)
	if got := answers[1].Visible(); !strings.Contains(got, "1764") {
		t.Errorf("follow-up answer = %q, want 1764", got)
	}
	// The model saw the earlier question, code and answer.
	reqs := h.model.requests()
	last := reqs[len(reqs)-2] // the follow-up's first model call
	if got := transcript(last.Messages); !strings.Contains(got, "40+2") || !strings.Contains(got, "print(40+2)") || !strings.Contains(got, "The result is **42**") {
		t.Errorf("follow-up history lacks the first turn:\n%s", got)
	}

	// With a mention, in the same thread.
	h.post("C0MATH", "U0ALICE", mention+"compute 2**10", d.TS)
	msgs = h.waitReplies("C0MATH", d.TS, 3)
	if got := botMessages(msgs, isAnswer)[2].Visible(); !strings.Contains(got, "1024") {
		t.Errorf("answer = %q, want 1024", got)
	}
}

func transcript(msgs []agent.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + ": " + m.Text + "\n")
		for _, c := range m.ToolCalls {
			b.WriteString("  call " + string(c.Input) + "\n")
		}
		for _, r := range m.ToolResults {
			b.WriteString("  result " + r.Content + "\n")
		}
	}
	return b.String()
}

func TestIgnoresChatterBotsAndEdits(t *testing.T) {
	h := newHarness(t)
	// Channel chatter, not for the bot.
	chatter := h.post("C0MATH", "U0ALICE", "compute 1+1 anyone?", "")
	// A reply in a thread the bot is not in.
	h.post("C0MATH", "U0BOB", "compute 2+2", chatter.TS)
	// Another bot mentioning us.
	if _, err := h.slack.SendEvent(slacktest.Event{Inner: map[string]any{
		"type": "app_mention", "user": "U0OTHERBOT", "bot_id": "B0OTHER", "text": mention + "compute 3+3", "ts": "1700000001.000100", "channel": "C0MATH",
	}}); err != nil {
		t.Fatal(err)
	}
	// An answered question, then an edit of it.
	d := h.post("C0MATH", "U0ALICE", mention+"compute 5+5", "")
	h.waitReplies("C0MATH", d.TS, 1)
	if err := h.slack.Edit("C0MATH", d.TS, mention+"compute 6+6"); err != nil {
		t.Fatal(err)
	}
	// In the bot's thread, a reply addressed to someone else.
	h.post("C0MATH", "U0BOB", "<@U0ALICE> compute 7+7 yourself", d.TS)
	// A marker question proves the events above were handled first.
	marker := h.post("C0MATH", "U0ALICE", mention+"compute 8+8", "")
	h.waitReplies("C0MATH", marker.TS, 1)
	time.Sleep(200 * time.Millisecond)

	var answered int
	for _, m := range h.slack.Messages("C0MATH") {
		if isAnswer(m) || isNotice(m) {
			answered++
		}
	}
	if answered != 2 {
		t.Errorf("bot answered %d messages, want 2 (the two mentions):\n%s", answered, dump(h.slack.Messages("C0MATH")))
	}
}

func TestDirectMessage(t *testing.T) {
	h := newHarness(t)
	d := h.post("D0ALICE", "U0ALICE", "compute 3*3", "")
	msgs := h.waitReplies("D0ALICE", d.TS, 1)
	if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "9") {
		t.Errorf("DM answer = %q", got)
	}
	// A reply in the DM thread continues it.
	h.post("D0ALICE", "U0ALICE", "now square that", d.TS)
	msgs = h.waitReplies("D0ALICE", d.TS, 2)
	if got := botMessages(msgs, isAnswer)[1].Visible(); !strings.Contains(got, "1764") {
		t.Errorf("DM follow-up answer = %q", got)
	}
}

func TestFailingProgram(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"divide by zero please", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	card := botMessages(msgs, isCard)[0].Visible()
	for _, want := range []string{"Python failed", "exit 1", "before", "*Error*", "ZeroDivisionError: division by zero"} {
		if !strings.Contains(card, want) {
			t.Errorf("failed card lacks %q:\n%s", want, card)
		}
	}
	if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "ZeroDivisionError") {
		t.Errorf("answer = %q", got)
	}
}

func TestModelErrorStepLimitAndTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model *scriptedModel
		cfg   func(*bot.Config)
		want  string
	}{
		{"model error", &scriptedModel{code: defaultScript, err: &agent.APIError{StatusCode: 503, Message: "overloaded"}}, nil, "couldn't get an answer from the language model"},
		{"step limit", &scriptedModel{code: defaultScript, loop: true}, nil, "stopped after 4 steps"},
		{"timeout", &scriptedModel{code: defaultScript, delay: 4 * time.Second}, func(c *bot.Config) { c.AnswerTimeout = 2 * time.Second }, "gave up after 2.0 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []option{withModel(tc.model)}
			if tc.cfg != nil {
				opts = append(opts, withConfig(tc.cfg))
			}
			h := newHarness(t, opts...)
			d := h.post("C0MATH", "U0ALICE", mention+"compute 1+1", "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			notes := botMessages(msgs, isNotice)
			if len(notes) != 1 || !strings.Contains(notes[0].Visible(), tc.want) {
				t.Fatalf("want a notice containing %q:\n%s", tc.want, dump(msgs))
			}
			// The bot keeps serving.
			tc.model.heal()
			d = h.post("C0MATH", "U0ALICE", mention+"compute 2+3", "")
			msgs = h.waitReplies("C0MATH", d.TS, 1)
			if len(botMessages(msgs, isAnswer)) != 1 {
				t.Fatalf("no answer after the failure:\n%s", dump(msgs))
			}
		})
	}
}
