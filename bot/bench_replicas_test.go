package bot_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// slowAgent is instantAgent after a pause: an answer's work (the model,
// the sandbox) takes d, so replicas add answers per second.
type slowAgent struct{ d time.Duration }

func (a slowAgent) Run(ctx context.Context, h []agent.Message, opts agent.RunOptions) (*agent.Outcome, error) {
	select {
	case <-time.After(a.d):
	case <-ctx.Done():
		return &agent.Outcome{}, ctx.Err()
	}
	return instantAgent{}.Run(ctx, h, opts)
}

// startReplicas starts n bots over one fake Slack that spreads envelopes
// over their connections; with redisURL empty, one bot without Redis.
func startReplicas(b *testing.B, n int, redisURL string, a bot.Agent) (*slacktest.Server, func()) {
	b.Helper()
	fake := slacktest.New(b)
	fake.Spread = true
	fake.EchoBotMessages = false
	fake.AddUser(slacktest.User{ID: "U0ALICE"})
	var stops []func()
	for i := range n {
		stops = append(stops, runBenchBot(b, fake, bot.Config{Agent: a, RedisURL: redisURL, Replica: fmt.Sprintf("r%d", i+1)}, i+1))
	}
	return fake, func() {
		for _, s := range stops {
			s()
		}
	}
}

// BenchmarkReplicas measures questions through the bot alone (no Redis)
// and through the Redis queue with one and two replicas, in one run:
// "latency" is one question at a time with an instant model and sandbox
// (ns/op is mention to answer: the difference to "local" is what the
// queue adds); "throughput" sends bursts of 32 questions whose answers
// take 400ms of work each, 8 workers per replica (with 100ms the fake
// Slack, on two cores, caps every mode near 60 questions/s).
func BenchmarkReplicas(b *testing.B) {
	modes := []struct {
		name     string
		replicas int
		redis    bool
	}{{"local", 1, false}, {"redis-1", 1, true}, {"redis-2", 2, true}}
	for _, m := range modes {
		b.Run("latency/"+m.name, func(b *testing.B) {
			fake, stop := startReplicas(b, m.replicas, redisURL(b, m.redis), instantAgent{})
			defer stop()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ask(b, fake, []string{"C0LAT"})
			}
		})
	}
	for _, m := range modes {
		b.Run("throughput/"+m.name, func(b *testing.B) {
			fake, stop := startReplicas(b, m.replicas, redisURL(b, m.redis), slowAgent{400 * time.Millisecond})
			defer stop()
			const burst = 32
			channels := make([]string, burst)
			for i := range channels {
				channels[i] = fmt.Sprintf("C0TP%02d", i)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				ask(b, fake, channels)
			}
			b.ReportMetric(float64(burst*b.N)/time.Since(start).Seconds(), "questions/s")
		})
	}
}

func redisURL(b *testing.B, on bool) string {
	if !on {
		return ""
	}
	return redistest.Start(b).URL(0)
}

// ask posts a question in each channel and waits for every answer.
func ask(b *testing.B, fake *slacktest.Server, channels []string) {
	var ds []slacktest.Delivery
	for _, ch := range channels {
		d, err := fake.UserPosts(slacktest.Post{Channel: ch, User: "U0ALICE", Text: "<@" + slacktest.BotUserID + "> compute 6*7"})
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, d)
	}
	for i, d := range ds {
		if _, ok := fake.WaitThread(channels[i], d.TS, 30*time.Second, func(ms []slacktest.Message) bool {
			return containsAnswer(ms) && len(ms[0].Reactions) == 0
		}); !ok {
			b.Fatal("no answer")
		}
	}
}
