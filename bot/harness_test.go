package bot_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// The real local sandbox, shared by the tests. /usr/bin/python3 is the
// system interpreter (the first python3 on PATH may be a slow shim).
var (
	sandboxOnce sync.Once
	sandboxRun  *local.Sandbox
	sandboxErr  error
)

func realSandbox(t testing.TB) *local.Sandbox {
	t.Helper()
	sandboxOnce.Do(func() {
		sandboxRun, sandboxErr = local.New(context.Background(), local.Config{Python: "/usr/bin/python3", Concurrency: 2})
	})
	if sandboxErr != nil {
		t.Fatalf("local sandbox: %v", sandboxErr)
	}
	return sandboxRun
}

// defaultScript writes code for "compute EXPR" questions and for a few
// named programs.
var reCompute = regexp.MustCompile(`(?i)compute (.+?)\??$`)

func defaultScript(q string) (string, bool) {
	switch {
	case strings.Contains(q, "divide by zero"):
		return "x = 1\nprint('before')\nprint(x / 0)", true
	case strings.Contains(q, "five megabytes"):
		return "import sys\nfor i in range(5 * 1024):\n    sys.stdout.write(('%05d' % i) + 'x' * 1018 + '\\n')", true
	case strings.Contains(q, "ping everyone"):
		return "print('<!channel> <!here> <@U0ALICE> <https://evil.example|click me>')", true
	case strings.Contains(q, "sleep"):
		return "import time\ntime.sleep(3)\nprint('woke')", true
	case strings.Contains(q, "square that"):
		return "print(42 ** 2)", true
	}
	if m := reCompute.FindStringSubmatch(q); m != nil {
		return "print(" + m[1] + ")", true
	}
	return "", false
}

// harness is a running bot against a fake Slack, the real agent loop with
// the real OpenAI provider against a fake model API (wireModel), and the
// real sandbox.
type harness struct {
	t       *testing.T
	slack   *slacktest.Server
	wire    *wireModel // the language model, at the wire
	retry   agent.RetryPolicy
	cfg     bot.Config
	bot     *bot.Bot
	cancel  context.CancelFunc
	done    chan error
	logs    *syncBuffer
	running bool
	// state makes the runs keep the thread's Python state, within
	// stateLimits.StateSize (zero: the default).
	state       bool
	stateLimits sandbox.Limits
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type option func(*harness)

// withScript makes the model write the programs script maps questions to.
func withScript(script func(string) (string, bool)) option {
	return func(h *harness) { h.wire.setScript(script) }
}

// withRetry sets the model provider's retry policy.
func withRetry(p agent.RetryPolicy) option { return func(h *harness) { h.retry = p } }

// withState makes the runs keep the thread's Python state, as the
// configuration does by default (SANDPIPER_STATE=on); size bounds it (0:
// the default).
func withState(size int64) option {
	return func(h *harness) { h.state, h.stateLimits.StateSize = true, size }
}

func withConfig(f func(*bot.Config)) option {
	return func(h *harness) { f(&h.cfg) }
}

func newHarness(t *testing.T, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, slack: slacktest.New(t), wire: newWireModel(t, defaultScript), retry: testRetry, logs: &syncBuffer{}}
	h.slack.PingInterval = 500 * time.Millisecond
	h.slack.AddUser(slacktest.User{ID: "U0ALICE", Name: "alice"})
	h.slack.AddUser(slacktest.User{ID: "U0BOB", Name: "bob"})
	h.slack.AddUser(slacktest.User{ID: "U0OWNER", Name: "olive", IsOwner: true})
	h.cfg = bot.Config{
		BotToken:     slacktest.BotToken,
		AppToken:     slacktest.AppToken,
		APIURL:       h.slack.URL,
		DataDir:      t.TempDir(),
		HTTPAddr:     "127.0.0.1:0",
		Workers:      4,
		Admins:       []string{"U0ADMIN"},
		PingInterval: 5 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(h)
	}
	h.start()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("bot logs:\n%s", h.logs.String())
		}
	})
	return h
}

func (h *harness) start() {
	h.t.Helper()
	cfg := h.cfg
	if cfg.Agent == nil {
		limits := sandbox.Limits{Timeout: 30 * time.Second, StateSize: h.stateLimits.StateSize} // generous: data runs on a loaded CI machine
		cfg.SandboxLimits = limits
		tools := []agent.Tool{agent.NewExecuteCode(realSandbox(h.t), agent.ExecuteCodeOptions{Limits: limits, KeepState: h.state})}
		if set, ok := cfg.Sources.(*datasource.Set); ok {
			tools = append(tools, set.Tools()...) // as the command does
		}
		cfg.Agent = &agent.Agent{
			Model:    h.wire.model(h.t, h.retry),
			Tools:    tools,
			MaxSteps: 4,
		}
	}
	before, _ := h.slack.Connections()
	b, err := bot.New(context.Background(), cfg)
	if err != nil {
		h.t.Fatalf("bot.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.bot, h.cancel, h.done, h.running = b, cancel, make(chan error, 1), true
	go func() { h.done <- b.Run(ctx) }()
	if !h.slack.WaitConnections(before+1, 5*time.Second) {
		h.t.Fatal("bot did not connect")
	}
}

// stop shuts the bot down as SIGTERM would and returns Run's error.
func (h *harness) stop() error {
	if !h.running {
		return nil
	}
	h.running = false
	h.cancel()
	select {
	case err := <-h.done:
		return err
	case <-time.After(20 * time.Second):
		h.t.Fatal("bot did not stop")
		return nil
	}
}

func (h *harness) restart() {
	h.t.Helper()
	if err := h.stop(); err != nil {
		h.t.Fatalf("Run: %v", err)
	}
	h.start()
}

// post is a human posting; it fails the test on error.
func (h *harness) post(channel, user, text, threadTS string) slacktest.Delivery {
	h.t.Helper()
	d, err := h.slack.UserPosts(slacktest.Post{Channel: channel, User: user, Text: text, ThreadTS: threadTS})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

const mention = "<@" + slacktest.BotUserID + "> "

// isAnswer reports whether m is the bot's final answer (not a tool card or
// a notice) by its visible text.
func isCard(m slacktest.Message) bool {
	return m.User == slacktest.BotUserID && strings.Contains(string(m.Metadata), "sandpiper_tool_run")
}

func isAnswer(m slacktest.Message) bool {
	return m.User == slacktest.BotUserID && strings.Contains(string(m.Metadata), "sandpiper_answer")
}

func isNotice(m slacktest.Message) bool {
	return m.User == slacktest.BotUserID && strings.Contains(string(m.Metadata), "sandpiper_notice")
}

// waitReplies waits until the thread has n bot replies that are answers or
// notices, and returns the thread.
func (h *harness) waitReplies(channel, ts string, n int) []slacktest.Message {
	h.t.Helper()
	msgs, ok := h.slack.WaitThread(channel, ts, 20*time.Second, func(ms []slacktest.Message) bool {
		c := 0
		for _, m := range ms {
			if isAnswer(m) || isNotice(m) {
				c++
			}
		}
		return c >= n
	})
	if !ok {
		h.t.Fatalf("thread %s: wanted %d answers; thread is:\n%s", ts, n, dump(msgs))
	}
	return msgs
}

func dump(ms []slacktest.Message) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "--- %s user=%s eph=%v\n%s\n", m.TS, m.User, m.Ephemeral, m.Visible())
	}
	return b.String()
}

func botMessages(ms []slacktest.Message, keep func(slacktest.Message) bool) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// eventually polls cond until it holds or timeout passes, and reports
// whether it held: the wait for a state nothing announces (a file, a
// log line, /metrics, Redis). What the fake Slack sees is waited for
// with its Wait methods instead.
func eventually(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// idle waits until the bot has no question or command waiting or being
// answered (sandpiper_jobs_in_flight): from then on nothing that came
// before can still post, or call the model.
func (h *harness) idle() {
	h.t.Helper()
	if !eventually(10*time.Second, func() bool { return h.metric(h.t, "sandpiper_jobs_in_flight") == "0" }) {
		h.t.Fatalf("jobs in flight: %s", h.metric(h.t, "sandpiper_jobs_in_flight"))
	}
}

// metric returns the value of a line of /metrics whose name and labels
// are series, or "".
func (h *harness) metric(t *testing.T, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + h.bot.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}
