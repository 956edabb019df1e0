package bot_test

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

func TestRedeliveredEventAnsweredOnce(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 7*6", "")
	if err := h.slack.Redeliver(d); err != nil {
		t.Fatal(err)
	}
	h.waitReplies("C0MATH", d.TS, 1)
	// A marker question shows the redelivery was handled before it.
	m := h.post("C0MATH", "U0ALICE", mention+"compute 1", "")
	h.waitReplies("C0MATH", m.TS, 1)
	msgs := h.slack.Thread("C0MATH", d.TS)
	if n := len(botMessages(msgs, isAnswer)); n != 1 {
		t.Errorf("answers = %d, want 1:\n%s", n, dump(msgs))
	}
	if n := len(botMessages(msgs, isCard)); n != 1 {
		t.Errorf("cards = %d, want 1", n)
	}
	// Every envelope, the redelivered ones too, was acked.
	acked := map[string]bool{}
	for _, a := range h.slack.Acks() {
		acked[a.EnvelopeID] = true
	}
	for _, env := range d.Envelopes {
		if !acked[env] {
			t.Errorf("envelope %s not acked", env)
		}
	}
	if len(h.slack.Acks()) < 2*len(d.Envelopes) {
		t.Errorf("acks = %d, want the redeliveries acked too", len(h.slack.Acks()))
	}
}

func TestUnparseableEnvelopeIsAcked(t *testing.T) {
	h := newHarness(t)
	raw := []byte(`{"envelope_id":"env-odd","type":"events_api","payload":{"type":"event_callback","event_id":"Ev-odd","event":{"type":"no_such_event_type_v9"}},"accepts_response_payload":false,"retry_attempt":0}`)
	if err := h.slack.SendEnvelope("env-odd", raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck("env-odd", 5*time.Second); !ok {
		t.Fatal("an envelope slack-go cannot parse was not acked")
	}
}

func TestReconnects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(*slacktest.Server) error
	}{
		{"disconnect frame", func(s *slacktest.Server) error { return s.Disconnect("refresh_requested") }},
		{"dropped socket", func(s *slacktest.Server) error { s.DropConnections(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			before, _ := h.slack.Connections()
			if err := tc.cut(h.slack); err != nil {
				t.Fatal(err)
			}
			if !h.slack.WaitConnections(before+1, 10*time.Second) {
				t.Fatal("no reconnect")
			}
			d := h.post("C0MATH", "U0ALICE", mention+"compute 9*9", "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "81") {
				t.Errorf("answer after reconnect = %q", got)
			}
		})
	}
}

func TestRateLimitedPostIsRetried(t *testing.T) {
	h := newHarness(t)
	// The tool card's post is rate limited once.
	h.slack.FailNext("chat.postMessage", slacktest.Failure{Status: 429, RetryAfter: 1})
	d := h.post("C0MATH", "U0ALICE", mention+"compute 12*12", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if len(botMessages(msgs, isCard)) != 1 || !strings.Contains(botMessages(msgs, isAnswer)[0].Visible(), "144") {
		t.Fatalf("want a card and the answer despite a 429:\n%s", dump(msgs))
	}
	calls := h.slack.Calls("chat.postMessage")
	if len(calls) < 2 {
		t.Fatalf("chat.postMessage calls = %d, want the 429 retried", len(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < 900*time.Millisecond {
		t.Errorf("retried after %v, want Retry-After (1s) honoured", gap)
	}
}

func TestHugeOutputFitsSlack(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"print five megabytes", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	cards := botMessages(msgs, isCard)
	if len(cards) != 1 {
		t.Fatalf("cards = %d:\n%s", len(cards), dump(msgs))
	}
	card := cards[0].Visible()
	for _, want := range []string{"Ran Python", "Showing the first 2,600 of", "attached as `output-1.txt`", "the sandbox kept the first 1.0 MiB"} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q:\n%s", want, card)
		}
	}
	var file *slacktest.File
	for _, m := range msgs {
		for i := range m.Files {
			if m.Files[i].Name == "output-1.txt" {
				file = &m.Files[i]
			}
		}
	}
	if file == nil {
		t.Fatalf("no output-1.txt in the thread:\n%s", dump(msgs))
	}
	if len(file.Data) != 1<<20 {
		t.Errorf("attached output = %d bytes, want the 1 MiB the sandbox kept", len(file.Data))
	}
	if !strings.HasPrefix(string(file.Data), "00000xxx") {
		t.Errorf("attached output starts %q", file.Data[:10])
	}
	// The sandbox's output cap fired, and the tool result the model read
	// was cut to its size: counted, and logged once with the run's thread.
	for _, c := range []string{"output", "tool_result"} {
		if got := h.metric(t, `sandpiper_caps_total{cap="`+c+`"}`); got != "1" {
			t.Errorf(`sandpiper_caps_total{cap="%s"} = %q, want 1`, c, got)
		}
	}
	re := regexp.MustCompile(`(?m)^.*level=WARN msg="caps fired during a run" channel=C0MATH thread=` + regexp.QuoteMeta(d.TS) + ` .*run=1 caps="\[output tool_result\]"$`)
	if n := len(re.FindAllString(h.logs.String(), -1)); n != 1 {
		t.Errorf("%d log lines for the run's caps, want 1:\n%s", n, h.logs.String())
	}
}

func TestNothingPings(t *testing.T) {
	h := newHarness(t, withScript(func(q string) (string, bool) {
		return "print('<!channel> <!here> <@U0ALICE> <https://evil.example|click me>')", true
	}))
	d := h.post("C0MATH", "U0ALICE", mention+"ping everyone", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	for _, m := range msgs[1:] {
		if p := m.Pings(); len(p) != 0 {
			t.Errorf("bot message pings %v:\n%s", p, m.Visible())
		}
		if l := m.Links(); len(l) != 0 {
			t.Errorf("bot message links %v:\n%s", l, m.Visible())
		}
	}
	// They are shown as typed.
	card := botMessages(msgs, isCard)[0].Visible()
	if !strings.Contains(card, "<!channel> <!here> <@U0ALICE> <https://evil.example|click me>") {
		t.Errorf("card does not show the output as written:\n%s", card)
	}
	answer := botMessages(msgs, isAnswer)[0].Visible()
	if !strings.Contains(answer, "<!channel>") {
		t.Errorf("answer does not show <!channel> as text: %q", answer)
	}
}

func TestHelp(t *testing.T) {
	h := newHarness(t)
	for _, text := range []string{mention + "help", mention} {
		d := h.post("C0MATH", "U0BOB", text, "")
		msgs := h.waitReplies("C0MATH", d.TS, 1)
		got := botMessages(msgs, isNotice)[0].Visible()
		if !strings.Contains(got, "I'm sandpiper") || !strings.Contains(got, "debug on|off|status") {
			t.Errorf("help for %q = %q", text, got)
		}
	}
	env, err := h.slack.SlashCommand("C0MATH", "U0BOB", "/sandpiper", "help")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		t.Fatal("slash command not acked")
	}
	msgs, found := waitEphemeral(h, "C0MATH", "U0BOB", "I'm sandpiper")
	if !found {
		t.Errorf("no private help for /sandpiper help:\n%s", dump(msgs))
	}
}

func waitEphemeral(h *harness, channel, user, want string) ([]slacktest.Message, bool) {
	return h.slack.WaitMessages(channel, 10*time.Second, func(msgs []slacktest.Message) bool {
		for _, m := range msgs {
			if m.Ephemeral && m.EphemeralTo == user && strings.Contains(m.Visible(), want) {
				return true
			}
		}
		return false
	})
}

func TestDebugToggle(t *testing.T) {
	h := newHarness(t)

	// A non-admin is refused, privately, and nothing changes.
	d := h.post("C0MATH", "U0BOB", mention+"debug on", "")
	if msgs, ok := waitEphemeral(h, "C0MATH", "U0BOB", "only workspace admins"); !ok {
		t.Fatalf("no private refusal:\n%s", dump(msgs))
	}
	for _, m := range h.slack.Thread("C0MATH", d.TS)[1:] {
		if !m.Ephemeral {
			t.Errorf("refusal posted publicly: %s", m.Visible())
		}
	}
	q := h.post("C0MATH", "U0ALICE", mention+"compute 2+2", "")
	msgs := h.waitReplies("C0MATH", q.TS, 1)
	if got := botMessages(msgs, isAnswer)[0].Visible(); strings.Contains(got, "tokens") {
		t.Errorf("debug footer shown after a refused toggle: %q", got)
	}

	// A configured admin turns it on with a mention; a workspace owner
	// with the slash command elsewhere.
	d = h.post("C0MATH", "U0ADMIN", mention+"debug on", "")
	msgs = h.waitReplies("C0MATH", d.TS, 1)
	if got := botMessages(msgs, isNotice)[0].Visible(); !strings.Contains(got, "Debug is now *on*") {
		t.Errorf("toggle reply = %q", got)
	}

	assertDebug := func(channel string, want bool) {
		t.Helper()
		q := h.post(channel, "U0ALICE", mention+"divide by zero", "")
		msgs := h.waitReplies(channel, q.TS, 1)
		answer := botMessages(msgs, isAnswer)[0].Visible()
		card := botMessages(msgs, isCard)[0].Visible()
		// Two model calls of 100 tokens in and 20 out, as the API reported.
		hasFooter := strings.Contains(answer, "model fake/wire") && strings.Contains(answer, "200 tokens in, 40 out")
		hasLimits := strings.Contains(card, "limits: 30.0 s, 512.0 MiB")
		if hasFooter != want || hasLimits != want {
			t.Errorf("%s: debug footer %v, debug card %v, want %v\nanswer: %s\ncard: %s", channel, hasFooter, hasLimits, want, answer, card)
		}
	}
	assertDebug("C0MATH", true)
	assertDebug("C0OTHER", false) // not leaking to another channel

	// It survives a restart.
	h.restart()
	assertDebug("C0MATH", true)

	// Status, and a workspace owner turning it off with /sandpiper.
	env, err := h.slack.SlashCommand("C0MATH", "U0OWNER", "/sandpiper", "debug off")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		t.Fatal("slash command not acked")
	}
	if msgs, ok := waitEphemeral(h, "C0MATH", "U0OWNER", "Debug is now *off*"); !ok {
		t.Fatalf("no reply to /sandpiper debug off:\n%s", dump(msgs))
	}
	assertDebug("C0MATH", false)
	if _, err := h.slack.SlashCommand("C0MATH", "U0BOB", "/sandpiper", "debug status"); err != nil {
		t.Fatal(err)
	}
	if msgs, ok := waitEphemeral(h, "C0MATH", "U0BOB", "Debug is *off* in this channel. Last changed by <@U0OWNER>"); !ok {
		t.Fatalf("no status reply:\n%s", dump(msgs))
	}
}

func TestFollowUpAfterRestart(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 40+2", "")
	h.waitReplies("C0MATH", d.TS, 1)
	got := squareAfterRestart(t, h, d.TS)
	for _, want := range []string{"user: compute 40+2", `"code":"print(40+2)"`, "result 42", "The result is **42**.", "user: now square that"} {
		if !strings.Contains(got, want) {
			t.Errorf("rebuilt history lacks %q:\n%s", want, got)
		}
	}
	if n := len(h.slack.Calls("conversations.replies")); n == 0 {
		t.Error("thread not read from conversations.replies")
	}
}

// TestRestartKeepsOnlyWhatTheBotAnswered: a rebuilt thread shows the model
// the questions the bot answered, not replies people addressed to each
// other (which the bot ignored), as a thread kept in memory does.
func TestRestartKeepsOnlyWhatTheBotAnswered(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 40+2", "")
	h.waitReplies("C0MATH", d.TS, 1)
	h.post("C0MATH", "U0CAROL", "<@U0DAVE> compute 7+7 yourself", d.TS)
	got := squareAfterRestart(t, h, d.TS)
	for _, want := range []string{"user: compute 40+2", "result 42", "user: now square that"} {
		if !strings.Contains(got, want) {
			t.Errorf("rebuilt history lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"7+7", "did not answer"} {
		if strings.Contains(got, bad) {
			t.Errorf("rebuilt history has %q:\n%s", bad, got)
		}
	}
}

// squareAfterRestart restarts the bot (its memory is gone; the thread is
// rebuilt from Slack), asks "now square that" in the thread whose first
// answer was 42, and returns the transcript the model was given.
func squareAfterRestart(t *testing.T, h *harness, thread string) string {
	t.Helper()
	h.restart()
	h.post("C0MATH", "U0BOB", "now square that", thread)
	msgs := h.waitReplies("C0MATH", thread, 2)
	if got := botMessages(msgs, isAnswer)[1].Visible(); !strings.Contains(got, "1764") {
		t.Errorf("follow-up after restart = %q", got)
	}
	reqs := h.wire.requests()
	return reqs[len(reqs)-2].transcript()
}

func TestShutdownDuringAnswer(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a bit", "")
	// Wait for the run to start, then stop the bot as SIGTERM does.
	if _, ok := h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, isCard)) > 0
	}); !ok {
		t.Fatal("no card")
	}
	start := time.Now()
	if err := h.stop(); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
	// The answer in flight was finished before Run returned.
	msgs := h.slack.Thread("C0MATH", d.TS)
	if a := botMessages(msgs, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "woke") {
		t.Errorf("answer in flight not finished (stopped after %v):\n%s", time.Since(start), dump(msgs))
	}
	if _, open := h.slack.Connections(); open != 0 {
		t.Errorf("%d sockets still open after shutdown", open)
	}
}

func TestShutdownTimeoutCancelsAnswer(t *testing.T) {
	h := newHarness(t, withConfig(func(c *bot.Config) { c.ShutdownTimeout = 300 * time.Millisecond }))
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a bit", "")
	if _, ok := h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, isCard)) > 0
	}); !ok {
		t.Fatal("no card")
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
	msgs := h.slack.Thread("C0MATH", d.TS)
	notes := botMessages(msgs, isNotice)
	if len(notes) != 1 || !strings.Contains(notes[0].Visible(), "restarted before I could finish") {
		t.Errorf("want a restart notice:\n%s", dump(msgs))
	}
	if c := botMessages(msgs, isCard)[0].Visible(); strings.Contains(c, "Running Python") {
		t.Errorf("card left running:\n%s", c)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 1+2", "")
	h.waitReplies("C0MATH", d.TS, 1)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + h.bot.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d while connected", code)
	}
	// The answer's latency is recorded just after it is posted.
	var code int
	var body string
	eventually(5*time.Second, func() bool {
		code, body = get("/metrics")
		return strings.Contains(body, "sandpiper_answer_seconds_count 1")
	})
	for _, want := range []string{"sandpiper_questions_total 1", `sandpiper_tool_runs_total{result="ok"} 1`, `sandpiper_sandbox_runs_total{start="cold"} 1`, `sandpiper_sandbox_runs_total{start="warm"} 0`, "sandpiper_slack_connected 1", "sandpiper_answer_seconds_count 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q:\n%s", code, want, body)
		}
	}
}

// TestRefusedCardIsPostedPlain: when Slack refuses a finished card's
// blocks, the card still leaves "running", says why, and its code and
// output arrive as files.
func TestRefusedCardIsPostedPlain(t *testing.T) {
	h := newHarness(t)
	h.slack.FailNext("chat.update", slacktest.Failure{Error: "invalid_blocks"})
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	cards := botMessages(msgs, isCard)
	if len(cards) != 1 {
		t.Fatalf("cards = %d:\n%s", len(cards), dump(msgs))
	}
	card := cards[0].Visible()
	for _, want := range []string{"Ran Python", "Slack refused to show this card (invalid_blocks)"} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q:\n%s", want, card)
		}
	}
	if strings.Contains(card, "Running Python") {
		t.Errorf("card still running:\n%s", card)
	}
	var names []string
	for _, m := range msgs {
		for _, f := range m.Files {
			names = append(names, f.Name)
		}
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "code-1.py") || !strings.Contains(got, "output-1.txt") {
		t.Errorf("files in the thread: %q, want the code and the output", got)
	}
	if !strings.Contains(botMessages(msgs, isAnswer)[0].Visible(), "42") {
		t.Errorf("answer:\n%s", dump(msgs))
	}
}

// TestRefusedAnswerIsAttached: when Slack refuses the answer's blocks, the
// user still gets it, as a file, with a notice saying why.
func TestRefusedAnswerIsAttached(t *testing.T) {
	h := newHarness(t)
	h.slack.RefuseStreaming("unknown_method") // the answer is posted whole
	h.slack.FailNext("chat.postMessage", slacktest.Failure{Error: "invalid_blocks", Match: "sandpiper_answer"})
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs, ok := h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			for _, f := range m.Files {
				if f.Name == "answer.md" {
					return true
				}
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no answer.md:\n%s", dump(msgs))
	}
	if n := botMessages(msgs, isNotice); len(n) == 0 || !strings.Contains(n[0].Visible(), "Slack refused to show my answer") {
		t.Errorf("no notice:\n%s", dump(msgs))
	}
}

// TestBadTokensFailAtStart: a wrong token stops start-up with an error
// that names the variable to fix.
func TestBadTokensFailAtStart(t *testing.T) {
	fake := slacktest.New(t)
	for _, tc := range []struct {
		name     string
		bot, app string
		want     []string
	}{
		{"bot token", "xoxb-wrong", slacktest.AppToken, []string{"SLACK_BOT_TOKEN", "auth.test failed", "invalid_auth"}},
		{"app token", slacktest.BotToken, "xapp-wrong", []string{"SLACK_APP_TOKEN", "apps.connections.open failed", "invalid_auth", "connections:write"}},
		{"slack unreachable", slacktest.BotToken, slacktest.AppToken, []string{"SLACK_API_URL", "cannot reach Slack at http://127.0.0.1:1/api/", "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fake.URL
			if tc.name == "slack unreachable" {
				url = "http://127.0.0.1:1/api/"
			}
			_, err := bot.New(t.Context(), bot.Config{BotToken: tc.bot, AppToken: tc.app, APIURL: url, DataDir: t.TempDir(), HTTPAddr: "-",
				Agent: instantAgent{}})
			var ce *bot.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
}

// TestThreadAnsweredInOrder: follow-ups sent in a burst are answered one
// at a time, in the order they were asked.
func TestThreadAnsweredInOrder(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 1+1", "")
	h.waitReplies("C0MATH", d.TS, 1)
	for _, q := range []string{"compute 2+2", "compute 3+3", "compute 4+4"} {
		h.post("C0MATH", "U0ALICE", q, d.TS)
	}
	msgs := h.waitReplies("C0MATH", d.TS, 4)
	var got []string
	for _, a := range botMessages(msgs, isAnswer) {
		for _, n := range []string{"2", "4", "6", "8"} {
			if strings.Contains(a.Visible(), "**"+n+"**") || strings.Contains(a.Visible(), "*"+n+"*") {
				got = append(got, n)
			}
		}
	}
	if strings.Join(got, " ") != "2 4 6 8" {
		t.Errorf("answers in order %v, want 2 4 6 8:\n%s", got, dump(msgs))
	}
}

// TestStatusKeptAliveAndDebugLogged: during a long run the "working"
// status is renewed, and with debug on the run's code and output are
// logged for the channel.
func TestStatusKeptAliveAndDebugLogged(t *testing.T) {
	h := newHarness(t, withConfig(func(c *bot.Config) { c.StatusInterval = 300 * time.Millisecond }))
	on := h.post("C0MATH", "U0ADMIN", mention+"debug on", "")
	h.waitReplies("C0MATH", on.TS, 1)
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a bit", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	var renewals int
	for _, c := range h.slack.Calls("assistant.threads.setStatus") {
		if c.Form.Get("thread_ts") == d.TS && c.Form.Get("status") != "" {
			renewals++
		}
	}
	if renewals < 5 { // a 3 s run renewed every 300 ms
		t.Errorf("status set %d times during a 3 s run, want it renewed", renewals)
	}
	if a := botMessages(msgs, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "model ") {
		t.Errorf("want an answer with the debug footer:\n%s", dump(msgs))
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "msg=execution") || !strings.Contains(logs, "time.sleep(3)") || !strings.Contains(logs, "woke") {
		t.Errorf("debug did not log the run's code and output:\n%s", logs)
	}
}

// TestReactionFailures: the 👀 reaction's calls that find their work done
// (already_reacted, no_reaction) are no failure; one Slack refuses is
// counted, and the question is answered either way.
func TestReactionFailures(t *testing.T) {
	for _, tc := range []struct {
		method, code string
		counted      string
	}{
		{"reactions.add", "already_reacted", "0"},
		{"reactions.remove", "no_reaction", "0"},
		{"reactions.add", "missing_scope", "1"},
	} {
		t.Run(tc.method+" "+tc.code, func(t *testing.T) {
			h := newHarness(t)
			h.slack.FailNext(tc.method, slacktest.Failure{Error: tc.code})
			d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
			msgs := h.waitReplies("C0MATH", d.TS, 1)
			if a := botMessages(msgs, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "42") {
				t.Errorf("answer:\n%s", dump(msgs))
			}
			if got := h.metric(t, `sandpiper_errors_total{kind="slack"}`); got != tc.counted {
				t.Errorf(`sandpiper_errors_total{kind="slack"} = %q, want %s`, got, tc.counted)
			}
		})
	}
}
