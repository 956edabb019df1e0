package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// instantAgent answers at once after one instant run: the bot's own
// overhead is all that is left to measure.
type instantAgent struct{}

func (instantAgent) Run(ctx context.Context, _ []agent.Message, opts agent.RunOptions) (*agent.Outcome, error) {
	call := agent.ToolCallEvent{Step: 1, Call: agent.ToolCall{ID: "call_1", Name: agent.ExecuteCodeName}, Code: "print(6*7)"}
	opts.Observer.ToolCallStarted(ctx, call)
	opts.Observer.ToolCallFinished(ctx, agent.ToolResultEvent{ToolCallEvent: call,
		Sandbox: &sandbox.Result{Stdout: []byte("42\n"), StdoutSize: 3, Duration: time.Millisecond}, Duration: time.Millisecond})
	return &agent.Outcome{Answer: "The result is **42**.", Model: "instant", Steps: 2, Stop: agent.StopAnswered}, nil
}

func startBench(b *testing.B) (*slacktest.Server, func()) {
	b.Helper()
	return startBenchAgent(b, instantAgent{})
}

// startBenchAgent starts a bot answering with a against a fake Slack.
func startBenchAgent(b *testing.B, a bot.Agent) (*slacktest.Server, func()) {
	b.Helper()
	fake := slacktest.New(b)
	fake.AddUser(slacktest.User{ID: "U0ALICE"})
	return fake, runBenchBot(b, fake, bot.Config{Agent: a}, 1)
}

// runBenchBot runs a bot with cfg against fake (the tokens, the URL, a
// data directory, no HTTP server, 8 workers and a silent logger filled
// in), waits until fake has conns connections, and returns what stops
// the bot.
func runBenchBot(b *testing.B, fake *slacktest.Server, cfg bot.Config, conns int) func() {
	b.Helper()
	cfg.BotToken, cfg.AppToken, cfg.APIURL = slacktest.BotToken, slacktest.AppToken, fake.URL
	cfg.DataDir, cfg.HTTPAddr, cfg.Workers = b.TempDir(), "-", 8
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	bt, err := bot.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bt.Run(ctx) }()
	if !fake.WaitConnections(conns, 5*time.Second) {
		b.Fatal("no connection")
	}
	return func() { cancel(); <-done }
}

// BenchmarkEnvelopeAck sends envelopes in bursts of 100 and measures the
// time from the fake sending each one to reading its ack: "bot" is the real
// bot; "baseline" is a bare websocket client that acks each envelope as it
// reads it, in the same run, which is the floor the fake and the loopback
// socket set on this machine.
func BenchmarkEnvelopeAck(b *testing.B) {
	b.Run("bot", func(b *testing.B) {
		fake, stop := startBench(b)
		defer stop()
		benchmarkAcks(b, fake)
	})
	b.Run("baseline", func(b *testing.B) {
		fake := slacktest.New(b)
		stop := rawAcker(b, fake)
		defer stop()
		benchmarkAcks(b, fake)
	})
}

func benchmarkAcks(b *testing.B, fake *slacktest.Server) {
	fake.EchoBotMessages = false
	var lat []time.Duration
	const burst = 100
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var envs []string
		for j := 0; j < burst; j++ {
			// Channel chatter: acked, then ignored, so only the ack path runs.
			env, err := fake.SendEvent(slacktest.Event{Inner: map[string]any{
				"type": "message", "channel": "C0BENCH", "channel_type": "channel", "user": "U0ALICE",
				"text": "chatter", "ts": fmt.Sprintf("%d.%06d", 1700000000+i, j),
			}})
			if err != nil {
				b.Fatal(err)
			}
			envs = append(envs, env)
		}
		for _, env := range envs {
			a, ok := fake.WaitAck(env, 10*time.Second)
			if !ok {
				b.Fatalf("envelope %s not acked", env)
			}
			lat = append(lat, a.At.Sub(a.Sent))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// rawAcker connects to the fake's Socket Mode endpoint with a bare
// websocket client and acks every envelope at once.
func rawAcker(b *testing.B, fake *slacktest.Server) (stop func()) {
	b.Helper()
	resp, err := http.PostForm(fake.URL+"apps.connections.open", url.Values{"token": {slacktest.AppToken}})
	if err != nil {
		b.Fatal(err)
	}
	var open struct{ URL string }
	json.NewDecoder(resp.Body).Decode(&open)
	resp.Body.Close()
	ws, _, err := websocket.DefaultDialer.Dial(open.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var env struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(data, &env) == nil && env.EnvelopeID != "" {
				ws.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID})
			}
		}
	}()
	if !fake.WaitConnections(1, 5*time.Second) {
		b.Fatal("no connection")
	}
	return func() { ws.Close(); <-done }
}

// BenchmarkAnsweredQuestion measures a whole answered mention with an
// instant model and sandbox: the bot's own work and its Slack calls
// (reaction, status, card post and update, answer, reaction removal) on
// loopback.
func BenchmarkAnsweredQuestion(b *testing.B) {
	fake, stop := startBench(b)
	defer stop()
	fake.EchoBotMessages = false
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := fake.UserPosts(slacktest.Post{Channel: "C0BENCH", User: "U0ALICE", Text: "<@" + slacktest.BotUserID + "> compute 6*7"})
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := fake.WaitThread("C0BENCH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
			return len(ms) >= 3 && len(ms[0].Reactions) == 0 && ms[len(ms)-1].User == slacktest.BotUserID && ms[len(ms)-1].Metadata != nil && string(ms[len(ms)-1].Metadata) != "" && containsAnswer(ms)
		}); !ok {
			b.Fatal("no answer")
		}
	}
}

func containsAnswer(ms []slacktest.Message) bool {
	for _, m := range ms {
		if isAnswer(m) {
			return true
		}
	}
	return false
}
