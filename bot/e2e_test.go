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
	if got := answers[0].Visible(); !strings.Contains(got, "The result is **42**.") || !answers[0].Streamed {
		t.Errorf("answer = %q, want the model's Markdown, streamed, with the result", got)
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
	if card := h.waitRunningCard("C0MATH", d.TS).Visible(); !strings.Contains(card, "time.sleep(3)") {
		t.Errorf("running card lacks the code:\n%s", card)
	}
	msgs := h.waitReplies("C0MATH", d.TS, 1)
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
	reqs := h.wire.requests()
	last := reqs[len(reqs)-2] // the follow-up's first model call
	if got := last.transcript(); !strings.Contains(got, "40+2") || !strings.Contains(got, "print(40+2)") || !strings.Contains(got, "The result is **42**") {
		t.Errorf("follow-up history lacks the first turn:\n%s", got)
	}

	// With a mention, in the same thread.
	h.post("C0MATH", "U0ALICE", mention+"compute 2**10", d.TS)
	msgs = h.waitReplies("C0MATH", d.TS, 3)
	if got := botMessages(msgs, isAnswer)[2].Visible(); !strings.Contains(got, "1024") {
		t.Errorf("answer = %q, want 1024", got)
	}
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
	h.idle() // and any answer to them has been posted

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

// TestModelErrorStepLimitAndTimeout: the failures of the model API, made
// at the wire, reach the thread as one notice each, after the provider's
// real retries where retrying can help; the bot keeps serving.
func TestModelErrorStepLimitAndTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    fault
		cfg      func(*bot.Config)
		want     []string
		requests int // model requests for the failed answer; 0: not checked
	}{
		{"model error", fault{status: 500}, nil,
			[]string{"couldn't get an answer from the language model", "500 Internal Server Error", "after 2 retries"}, 3},
		{"rejected key", fault{status: 401}, nil,
			[]string{"couldn't get an answer from the language model", "API answered 401 Unauthorized", "The API rejected the key from TEST_API_KEY", "Incorrect API key provided"}, 1},
		{"cut stream", fault{cut: true}, nil,
			[]string{"couldn't get an answer from the language model", "the connection broke off", "after 2 retries"}, 3},
		{"step limit", fault{loop: true}, nil, []string{"stopped after 4 steps"}, 4},
		{"timeout", fault{stall: true}, func(c *bot.Config) { c.AnswerTimeout = 2 * time.Second }, []string{"gave up after 2.0 s"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []option
			if tc.cfg != nil {
				opts = append(opts, withConfig(tc.cfg))
			}
			h := newHarness(t, opts...)
			h.wire.fail(-1, tc.fault)
			d := h.post("C0MATH", "U0ALICE", mention+"compute 1+1", "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			notes := botMessages(msgs, isNotice)
			if len(notes) != 1 {
				t.Fatalf("want one notice:\n%s", dump(msgs))
			}
			for _, want := range tc.want {
				if !strings.Contains(notes[0].Visible(), want) {
					t.Errorf("notice lacks %q:\n%s", want, dump(msgs))
				}
			}
			if strings.Contains(notes[0].Visible(), wireKey) {
				t.Errorf("the notice shows the API key:\n%s", notes[0].Visible())
			}
			if n := len(h.wire.requests()); tc.requests != 0 && n != tc.requests {
				t.Errorf("%d model requests, want %d", n, tc.requests)
			}
			// The bot keeps serving.
			h.wire.heal()
			d = h.post("C0MATH", "U0ALICE", mention+"compute 2+3", "")
			msgs = h.waitReplies("C0MATH", d.TS, 1)
			if a := botMessages(msgs, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "The result is **5**.") {
				t.Fatalf("no answer after the failure:\n%s", dump(msgs))
			}
		})
	}
}

// TestModelHiccupsAreRetried: a failure the provider retries is not seen
// in the thread; the answer comes from the next attempt.
func TestModelHiccupsAreRetried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fault
		retry agent.RetryPolicy
	}{
		{"overloaded", fault{status: 503}, testRetry},
		{"rate limited", fault{status: 429, retryAfter: 50 * time.Millisecond}, testRetry},
		{"cut stream", fault{cut: true}, testRetry},
		{"stream ended early", fault{short: true}, testRetry},
		{"stalled stream", fault{stall: true}, agent.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, RequestTimeout: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withRetry(tc.retry))
			h.wire.fail(1, tc.fault)
			d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			cards, answers := botMessages(msgs, isCard), botMessages(msgs, isAnswer)
			if len(cards) != 1 || len(answers) != 1 || !strings.Contains(answers[0].Visible(), "The result is **42**.") {
				t.Fatalf("want a card and the answer 42 despite the failure:\n%s", dump(msgs))
			}
			reqs := h.wire.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests, want 3 (one retried)", len(reqs))
			}
			if gap := reqs[1].at.Sub(reqs[0].at); gap < tc.fault.retryAfter {
				t.Errorf("retried after %v, want Retry-After-Ms (%v) honoured", gap, tc.fault.retryAfter)
			}
		})
	}
}
