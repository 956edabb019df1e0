package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// modelTurn is one scripted model turn: text streamed in pieces, then
// perhaps an executeCode call.
type modelTurn struct {
	deltas []string
	code   string // the turn calls executeCode with it
	// before is called before each delta after the first; it may wait
	// (a slow model, or one waiting for Slack to show the first words).
	before func(i int)
	// breakAfter > 0: the attempt breaks off after that many deltas, as
	// a dropped connection does (the agent runs the step again).
	breakAfter int
}

// scriptModel is a language model playing turns: script gets the question,
// the turn (from 0) and the attempt at it (from 0).
type scriptModel struct {
	script   func(question string, turn, attempt int) modelTurn
	mu       sync.Mutex
	attempts map[string]int
}

func (*scriptModel) ID() string { return "script" }

func (s *scriptModel) Generate(ctx context.Context, req *agent.Request, text func(string)) (*agent.Response, error) {
	var q string
	turn := 0
	for _, m := range req.Messages {
		switch m.Role {
		case agent.RoleUser:
			q, turn = m.Text, 0
		case agent.RoleAssistant:
			turn++
		}
	}
	s.mu.Lock()
	if s.attempts == nil {
		s.attempts = map[string]int{}
	}
	key := fmt.Sprint(q, "/", turn)
	attempt := s.attempts[key]
	s.attempts[key]++
	s.mu.Unlock()
	mt := s.script(q, turn, attempt)
	for i, d := range mt.deltas {
		if mt.breakAfter > 0 && i == mt.breakAfter {
			return nil, &agent.APIError{Provider: "script", Partial: true, Err: errors.New("connection reset")}
		}
		if i > 0 && mt.before != nil {
			mt.before(i)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		text(d)
	}
	resp := &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Text: strings.Join(mt.deltas, "")}, Finish: agent.FinishStop}
	if mt.code != "" {
		args, _ := json.Marshal(map[string]string{"code": mt.code})
		resp.Message.ToolCalls = []agent.ToolCall{{ID: fmt.Sprintf("call_%d", turn), Name: agent.ExecuteCodeName, Input: args}}
		resp.Finish = agent.FinishToolCalls
	}
	return resp, nil
}

// withModel runs the real agent loop on model, with the real sandbox.
func withModel(model agent.Model) option {
	return func(h *harness) {
		limits := sandbox.Limits{Timeout: 10 * time.Second}
		h.cfg.SandboxLimits = limits
		h.cfg.Agent = &agent.Agent{Model: model, MaxSteps: 4, Logger: h.cfg.Logger,
			Tools: []agent.Tool{agent.NewExecuteCode(realSandbox(h.t), agent.ExecuteCodeOptions{Limits: limits})}}
	}
}

// words cuts s into pieces of a few words, as a model streams.
func words(s string, n int) []string {
	var out []string
	f := strings.SplitAfter(s, " ")
	for i := 0; i < len(f); i += n {
		out = append(out, strings.Join(f[i:min(i+n, len(f))], ""))
	}
	return out
}

// seen returns the thread as a user reads it: the bot's messages that
// are not deleted, in order, rendered.
func seen(msgs []slacktest.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.User == slacktest.BotUserID && !m.Deleted && !m.Ephemeral {
			out = append(out, strings.TrimSpace(m.Visible()))
		}
	}
	return out
}

func isCommentary(m slacktest.Message) bool {
	return m.User == slacktest.BotUserID && strings.Contains(string(m.Metadata), "sandpiper_commentary")
}

// computeScript: "Let me compute that." and a run of print(6*7), then the
// answer, written slowly (about a second) so that it reaches Slack in
// pieces.
func computeScript(q string, turn, _ int) modelTurn {
	if turn == 0 {
		return modelTurn{deltas: words("Let me compute that.", 2), code: "print(6*7)"}
	}
	return modelTurn{deltas: words("The answer is **42**, computed in Python.", 1), before: func(int) { time.Sleep(150 * time.Millisecond) }}
}

func TestStreamedAnswerReadsInOrder(t *testing.T) {
	for _, tc := range []struct {
		name, channel string
		recipient     bool
	}{
		{"channel", "C0MATH", true},
		{"DM", "D0ALICE", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withModel(&scriptModel{script: computeScript}))
			text := "compute it"
			if tc.recipient {
				text = mention + text
			}
			d := h.post(tc.channel, "U0ALICE", text, "")
			msgs := h.waitReplies(tc.channel, d.TS, 1)
			want := []string{"Let me compute that.", "Ran Python", "[task complete] Ran Python · ", "The answer is **42**, computed in Python."}
			got := seen(msgs)
			if len(got) != len(want) {
				t.Fatalf("thread reads:\n%s", dump(msgs))
			}
			for i := range want {
				if !strings.Contains(got[i], want[i]) {
					t.Errorf("message %d = %q, want %q first:\n%s", i, got[i], want[i], dump(msgs))
				}
			}
			var bot []slacktest.Message
			for _, m := range msgs {
				if m.User == slacktest.BotUserID {
					bot = append(bot, m)
				}
			}
			if !bot[0].Streamed || !isCommentary(bot[0]) || bot[0].Streaming || !isCard(bot[1]) ||
				!bot[2].Streamed || bot[2].Streaming || len(bot[2].Tasks) != 1 || bot[2].Tasks[0].Output != "42" || bot[2].Text != "" ||
				!bot[3].Streamed || !isAnswer(bot[3]) || bot[3].Streaming {
				t.Errorf("want a closed streamed commentary, a card, the run's task, a closed streamed answer:\n%+v", bot)
			}
			// The task showed in progress first, in a timeline.
			if starts := h.slack.Calls("chat.startStream"); len(starts) < 2 || !strings.Contains(starts[1].Form.Get("chunks"), `"status":"in_progress"`) ||
				starts[1].Form.Get("task_display_mode") != "timeline" {
				t.Errorf("the task's stream did not start in progress: %v", starts)
			}
			// The commentary was closed before the card was posted.
			var order []string
			for _, c := range h.slack.Calls("") {
				switch c.Method {
				case "chat.startStream", "chat.stopStream", "chat.postMessage":
					order = append(order, c.Method)
				}
			}
			if got := strings.Join(order, " "); !strings.HasPrefix(got, "chat.startStream chat.stopStream chat.postMessage chat.startStream") || !strings.HasSuffix(got, "chat.stopStream") {
				t.Errorf("calls in order: %s", got)
			}
			for _, c := range h.slack.Calls("chat.startStream") {
				u, team := c.Form.Get("recipient_user_id"), c.Form.Get("recipient_team_id")
				if tc.recipient && (u != "U0ALICE" || team != slacktest.TeamID) || !tc.recipient && (u != "" || team != "") {
					t.Errorf("startStream recipient = %q/%q in %s", u, team, tc.channel)
				}
				if c.Form.Get("thread_ts") != d.TS {
					t.Errorf("startStream thread_ts = %q, want %q", c.Form.Get("thread_ts"), d.TS)
				}
			}
			if n := len(h.slack.Calls("chat.appendStream")); n == 0 {
				t.Errorf("no chat.appendStream: the answer was not streamed in pieces")
			}
		})
	}
}

// TestFirstWordsBeforeTheModelFinishes: the model holds back the rest of
// its answer until Slack shows its first words (or 10s pass).
func TestFirstWordsBeforeTheModelFinishes(t *testing.T) {
	var h *harness
	shown := make(chan bool, 1)
	model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
		return modelTurn{deltas: []string{"First words, ", "then ", "the rest."}, before: func(i int) {
			if i == 1 {
				shown <- h.slack.Wait(10*time.Second, func() bool {
					return h.slack.AnyMessage(func(m slacktest.Message) bool { return m.Streaming && strings.Contains(m.Text, "First words") })
				})
			}
		}}
	}}
	h = newHarness(t, withModel(model))
	d := h.post("C0MATH", "U0ALICE", mention+"say something", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if !<-shown {
		t.Errorf("Slack did not show the first words while the model was still writing")
	}
	if a := botMessages(msgs, isAnswer); len(a) != 1 || strings.TrimSpace(a[0].Visible()) != "First words, then the rest." {
		t.Errorf("answer:\n%s", dump(msgs))
	}
}

// TestStreamingRefusedFallsBack: when Slack will not stream, the answer
// is posted whole, once; a refusal for the workspace is remembered.
func TestStreamingRefusedFallsBack(t *testing.T) {
	for _, tc := range []struct {
		code     string
		remember bool // later answers do not try again
	}{
		{"unknown_method", true},
		{"not_allowed_token_type", true},
		{"missing_scope", true},
		{"channel_type_not_supported", true},
		{"internal_error", false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			h := newHarness(t, withModel(&scriptModel{script: computeScript}))
			h.slack.RefuseStreaming(tc.code)
			for i := range 2 {
				d := h.post("C0MATH", "U0ALICE", mention+"compute it", "")
				msgs := h.waitReplies("C0MATH", d.TS, 1)
				got := seen(msgs)
				answers := botMessages(msgs, isAnswer)
				if len(got) != 3 || len(answers) != 1 || answers[0].Streamed || !strings.Contains(got[0], "Let me compute that.") ||
					!strings.Contains(got[2], "The answer is *42*, computed in Python.") {
					t.Fatalf("answer %d: want commentary, card and the answer posted whole, once:\n%s", i, dump(msgs))
				}
			}
			starts := len(h.slack.Calls("chat.startStream"))
			// Once in all, or once an answer (which then goes on the old way).
			if tc.remember && starts != 1 || !tc.remember && starts != 2 {
				t.Errorf("%d chat.startStream calls", starts)
			}
		})
	}
}

// TestRateLimitedAppendsLoseNoText: an append Slack answers 429 is not
// sent again, nor any other before Retry-After: the text written from
// then on shows when the answer ends, none of it lost.
func TestRateLimitedAppendsLoseNoText(t *testing.T) {
	answer := strings.Repeat("All work and no play makes a dull answer. ", 30)
	// The model writes for about 3s: long enough to meet Slack's limit.
	model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
		return modelTurn{deltas: words(answer, 3), before: func(int) { time.Sleep(30 * time.Millisecond) }}
	}}
	h := newHarness(t, withModel(model))
	h.slack.RateLimit("chat.appendStream", 1, 1500*time.Millisecond, time.Second)
	d := h.post("C0MATH", "U0ALICE", mention+"write a long answer", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	a := botMessages(msgs, isAnswer)
	if len(a) != 1 || !a[0].Streamed || strings.TrimSpace(a[0].Visible()) != strings.TrimSpace(answer) {
		t.Fatalf("answer:\n%s", dump(msgs))
	}
	if h.slack.RateLimited("chat.appendStream") == 0 {
		t.Fatalf("no append was rate-limited: the test proves nothing")
	}
	// Retry-After (1s) was honoured: no append follows a 429 sooner.
	calls := h.slack.Calls("chat.appendStream")
	for _, at := range h.slack.RateLimitedAt("chat.appendStream") {
		for _, c := range calls {
			if c.At.After(at) && c.At.Sub(at) < 900*time.Millisecond {
				t.Errorf("an append came %v after a 429 with Retry-After: 1", c.At.Sub(at))
			}
		}
	}
}

// TestRetriedStepIsNotShownTwice: the model's answer breaks off after
// Slack showed part of it; the agent asks again, and the thread shows the
// answer once.
func TestRetriedStepIsNotShownTwice(t *testing.T) {
	var h *harness
	model := &scriptModel{script: func(q string, turn, attempt int) modelTurn {
		mt := modelTurn{deltas: []string{"The answer ", "is 7."}}
		if attempt == 0 {
			mt.breakAfter = 1
			mt.before = nil
			mt.deltas = []string{"The answer ", "is 7.", ""}
			// Slack shows the first piece before the break.
			mt.breakAfter = 2
			mt.before = func(i int) {
				h.slack.Wait(10*time.Second, func() bool { return h.slack.AnyMessage(func(m slacktest.Message) bool { return m.Streaming }) })
			}
		}
		return mt
	}}
	h = newHarness(t, withModel(model))
	d := h.post("C0MATH", "U0ALICE", mention+"what is 3+4?", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	got := seen(msgs)
	if len(got) != 1 || got[0] != "The answer is 7." {
		t.Errorf("thread reads %q:\n%s", got, dump(msgs))
	}
	deleted := 0
	for _, m := range msgs {
		if m.Deleted && m.Streamed && !m.Streaming {
			deleted++
		}
	}
	if deleted != 1 {
		t.Errorf("%d closed and removed partial messages, want 1:\n%s", deleted, dump(msgs))
	}
}

// TestConcurrentAnswersShareAppendBudget: three answers stream at once
// against a Slack that allows 5 appends a second. With the workspace's
// budget at 60 a minute (and a burst of 3), together they stay under it;
// with 600 a minute (each answer pacing only itself, two a second),
// Slack answers 429, and still no text is lost.
func TestConcurrentAnswersShareAppendBudget(t *testing.T) {
	for _, tc := range []struct {
		perMinute int
		limited   bool
	}{
		{60, false},
		{600, true},
	} {
		t.Run(fmt.Sprint(tc.perMinute), func(t *testing.T) {
			answer := strings.Repeat("Streaming is fun. ", 40)
			// Each answer is written over about 5s, so the three stream at once.
			model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
				return modelTurn{deltas: words(answer, 1), before: func(int) { time.Sleep(40 * time.Millisecond) }}
			}}
			h := newHarness(t, withModel(model), withConfig(func(c *bot.Config) { c.StreamAppendsPerMinute = tc.perMinute }))
			h.slack.RateLimit("chat.appendStream", 5, time.Second, time.Second)
			var ds []slacktest.Delivery
			for _, ch := range []string{"C0ONE", "C0TWO", "C0THREE"} {
				ds = append(ds, h.post(ch, "U0ALICE", mention+"talk", ""))
			}
			for i, ch := range []string{"C0ONE", "C0TWO", "C0THREE"} {
				msgs := h.waitReplies(ch, ds[i].TS, 1)
				if a := botMessages(msgs, isAnswer); len(a) != 1 || strings.TrimSpace(a[0].Visible()) != strings.TrimSpace(answer) {
					t.Errorf("%s: answer:\n%s", ch, dump(msgs))
				}
			}
			if n := h.slack.RateLimited("chat.appendStream"); (n > 0) != tc.limited {
				t.Errorf("%d appends rate-limited (of %d)", n, len(h.slack.Calls("chat.appendStream")))
			}
		})
	}
}

// TestThreeAnswersUnderOneBudget: three answers in a row in one thread,
// while Slack allows fewer appends than the bot's budget and asks for a
// 30s pause when it refuses one. Each answer streams until Slack refuses
// (each tries its first append, the later ones too), and then shows the
// rest of its text whole when it ends, without waiting out the pause: no
// text lost or shown twice, and no message appends again after a 429.
func TestThreeAnswersUnderOneBudget(t *testing.T) {
	answer := strings.Repeat("Streaming is fun. ", 20)
	model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
		return modelTurn{deltas: words(answer, 1), before: func(int) { time.Sleep(40 * time.Millisecond) }}
	}}
	h := newHarness(t, withModel(model))
	const retryAfter = 30 * time.Second
	h.slack.RateLimit("chat.appendStream", 3, time.Minute, retryAfter)
	start := time.Now()
	d := h.post("C0ONE", "U0ALICE", mention+"talk", "")
	h.waitReplies("C0ONE", d.TS, 1)
	for i := 2; i <= 3; i++ {
		h.post("C0ONE", "U0ALICE", mention+"talk more", d.TS)
		h.waitReplies("C0ONE", d.TS, i)
	}
	if took := time.Since(start); took > retryAfter*2/3 {
		t.Errorf("the three answers took %v: one waited out Slack's %v pause", took, retryAfter)
	}
	answers := botMessages(h.slack.Thread("C0ONE", d.TS), isAnswer)
	if len(answers) != 3 {
		t.Fatalf("%d answers, want 3:\n%s", len(answers), dump(h.slack.Thread("C0ONE", d.TS)))
	}
	limited := map[string]bool{}
	for _, c := range h.slack.Calls("chat.appendStream") {
		ts := c.Form.Get("ts")
		if limited[ts] {
			t.Errorf("message %s appended again after a 429", ts)
		}
		limited[ts] = limited[ts] || c.Error == "ratelimited"
	}
	for i, a := range answers {
		if !a.Streamed || a.Deleted || strings.TrimSpace(a.Visible()) != strings.TrimSpace(answer) {
			t.Errorf("answer %d: streamed %v, deleted %v, text:\n%s", i+1, a.Streamed, a.Deleted, a.Visible())
		}
		if _, tried := limited[a.TS]; !tried {
			t.Errorf("answer %d made no chat.appendStream call", i+1)
		}
	}
	if h.slack.RateLimited("chat.appendStream") < 2 {
		t.Errorf("%d appends rate-limited, want the 2nd and 3rd answers' at least: the test proves nothing", h.slack.RateLimited("chat.appendStream"))
	}
}

// TestStreamedTextCannotPing: what the model streams cannot ping, link
// behind other text, or carry control characters; it is shown as typed.
func TestStreamedTextCannotPing(t *testing.T) {
	const evil = "Hey <!channel> <!here> <@U0ALICE> @here @everyone, see <https://evil.example|the docs>, [click me](https://evil.example) ![x](https://evil.example/i.png)\n\n[ref]: https://evil.example \x1b]52;c;cm0=\x07 \u202etxt.exe"
	model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
		return modelTurn{deltas: strings.SplitAfter(evil, "")} // one byte at a time: constructs cut anywhere
	}}
	h := newHarness(t, withModel(model))
	d := h.post("C0MATH", "U0ALICE", mention+"be evil", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	a := botMessages(msgs, isAnswer)
	if len(a) != 1 || !a[0].Streamed {
		t.Fatalf("answer:\n%s", dump(msgs))
	}
	if p := a[0].Pings(); len(p) != 0 {
		t.Errorf("pings %q", p)
	}
	if l := a[0].Links(); len(l) != 0 {
		t.Errorf("links %q", l)
	}
	if r, i := slacktest.UnsafeRune(a[0].Text); r >= 0 {
		t.Errorf("control %U at %d in %q", r, i, a[0].Text)
	}
	v := a[0].Visible()
	for _, want := range []string{"<!channel> <!here> <@U0ALICE> @here @everyone", "[click me](https://evil.example)", "␛]52;c;cm0=␇"} {
		if !strings.Contains(v, want) {
			t.Errorf("answer does not show %q as typed:\n%s", want, v)
		}
	}
}

// TestLongStreamedAnswer: an answer longer than a message goes on in
// further messages, code blocks closed and reopened across the cut; one
// longer than four is attached whole.
func TestLongStreamedAnswer(t *testing.T) {
	line := "A line of a long answer, numbered so that nothing is lost: %05d\n"
	for _, tc := range []struct {
		lines, parts int
		attached     bool
	}{
		{300, 2, false},
		{900, 4, true},
	} {
		t.Run(fmt.Sprint(tc.lines), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("```\n")
			for i := range tc.lines {
				fmt.Fprintf(&b, line, i)
			}
			b.WriteString("```\n")
			answer := b.String()
			model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
				return modelTurn{deltas: words(answer, 200)}
			}}
			h := newHarness(t, withModel(model))
			d := h.post("C0MATH", "U0ALICE", mention+"write a lot", "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			if tc.attached {
				msgs, _ = h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
					for _, m := range ms {
						if len(m.Files) > 0 {
							return true
						}
					}
					return false
				})
			}
			var parts []slacktest.Message
			for _, m := range msgs {
				if m.Streamed && !m.Deleted {
					parts = append(parts, m)
				}
			}
			if len(parts) != tc.parts || !isAnswer(parts[len(parts)-1]) {
				t.Fatalf("%d parts, want %d, the last the answer:\n%s", len(parts), tc.parts, dump(msgs))
			}
			var all strings.Builder
			for _, p := range parts {
				if strings.Count(p.Text, "```")%2 != 0 {
					t.Errorf("part %s leaves a code block open", p.TS)
				}
				all.WriteString(strings.TrimSuffix(strings.TrimPrefix(p.Text, "```\n"), "\n```"))
			}
			shown := all.String()
			for i := range tc.lines {
				if n := strings.Count(shown, fmt.Sprintf(line, i)); n != 1 && !(tc.attached && n == 0) {
					t.Fatalf("line %d shown %d times", i, n)
				}
			}
			var attached bool
			for _, m := range msgs {
				for _, f := range m.Files {
					attached = attached || f.Name == "answer.md" && strings.TrimSpace(string(f.Data)) == strings.TrimSpace(answer)
				}
			}
			if attached != tc.attached {
				t.Errorf("answer.md attached: %v", attached)
			}
		})
	}
}

// TestStreamedAnswerEndsWithFooter: the answer footer's blocks go in
// chat.stopStream, built knowing the streamed message's ts.
func TestStreamedAnswerEndsWithFooter(t *testing.T) {
	h := newHarness(t, withModel(&scriptModel{script: computeScript}))
	tsSeen := make(chan string, 1)
	h.bot.AddFooter(func(_ context.Context, ans bot.AnswerInfo) []slack.Block {
		tsSeen <- ans.TS
		return []slack.Block{slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "footer for "+ans.Answer, false, false))}
	})
	d := h.post("C0MATH", "U0ALICE", mention+"compute it", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	a := botMessages(msgs, isAnswer)
	if len(a) != 1 || !a[0].Streamed || !strings.Contains(a[0].Visible(), "footer for The answer is **42**") {
		t.Fatalf("answer:\n%s", dump(msgs))
	}
	if ts := <-tsSeen; ts != a[0].TS {
		t.Errorf("footer built for ts %q, the answer is %q", ts, a[0].TS)
	}
	stops := h.slack.Calls("chat.stopStream")
	if last := stops[len(stops)-1]; !strings.Contains(last.Form.Get("blocks"), "footer for") {
		t.Errorf("last chat.stopStream blocks = %s", last.Form.Get("blocks"))
	}
}

// TestSlackStopHaltsTheStream: Slack's own Stop on a streaming answer ends
// it: nothing more is streamed into the halted message, and the thread
// says who stopped it.
func TestSlackStopHaltsTheStream(t *testing.T) {
	// The model would write for 6s: the stop comes while it writes.
	model := &scriptModel{script: func(q string, turn, _ int) modelTurn {
		return modelTurn{deltas: words(strings.Repeat("slowly ", 300), 1), before: func(int) { time.Sleep(20 * time.Millisecond) }}
	}}
	h := newHarness(t, withModel(model))
	d := h.post("D0ALICE", "U0ALICE", "talk slowly", "")
	var streaming string
	h.slack.Wait(10*time.Second, func() bool {
		return h.slack.AnyMessage(func(m slacktest.Message) bool {
			if m.Streaming && m.Appends > 0 {
				streaming = m.TS
			}
			return streaming != ""
		})
	})
	if streaming == "" {
		t.Fatal("the answer did not stream")
	}
	if err := h.slack.StopAgentSession("D0ALICE", d.TS, "U0ALICE", streaming); err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("D0ALICE", d.TS, 1)
	notes := botMessages(msgs, isNotice)
	if len(notes) != 1 || !strings.Contains(notes[0].Visible(), "stopped") {
		t.Fatalf("want the stop notice:\n%s", dump(msgs))
	}
	var halted slacktest.Message
	for _, m := range msgs {
		if m.TS == streaming {
			halted = m
		}
	}
	if !halted.UserStopped || halted.Deleted || strings.Count(halted.Text, "slowly") >= 300 {
		t.Errorf("halted message: %+v", halted)
	}
	for _, m := range msgs {
		if m.Streamed && m.TS > streaming {
			t.Errorf("a new stream after the stop:\n%s", dump(msgs))
		}
	}
}
