package bot_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// sleepAgent runs one program that sleeps for a minute in the real local
// sandbox, under the answer's context, as the agent's executeCode does.
type sleepAgent struct{ sb *local.Sandbox }

func (a sleepAgent) Run(ctx context.Context, _ []agent.Message, opts agent.RunOptions) (*agent.Outcome, error) {
	call := agent.ToolCallEvent{Step: 1, Call: agent.ToolCall{ID: "call_1", Name: agent.ExecuteCodeName}, Code: "import time\ntime.sleep(60)"}
	opts.Observer.ToolCallStarted(ctx, call)
	start := time.Now()
	res, err := a.sb.Run(ctx, sandbox.Request{Code: call.Code, Limits: sandbox.Limits{Timeout: 2 * time.Minute}})
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	opts.Observer.ToolCallFinished(ctx, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: res, Err: err, Duration: time.Since(start)})
	return &agent.Outcome{Model: "sleep", Steps: 1, Stop: agent.StopCanceled}, err
}

// BenchmarkStop measures a Stop click by the asker, from the click to the
// card saying "Stopped" (the sandbox run killed, the card updated), beside
// the same click by someone else, answered with an ephemeral refusal and
// nothing stopped: the round trip of a click through the fake Slack.
func BenchmarkStop(b *testing.B) {
	fake, stop := startBenchAgent(b, sleepAgent{realSandbox(b)})
	defer stop()
	fake.AddUser(slacktest.User{ID: "U0BOB"})
	fake.EchoBotMessages = false
	var stopLat, refuseLat []time.Duration
	for i := 0; i < b.N; i++ {
		d, err := fake.UserPosts(slacktest.Post{Channel: "C0BENCH", User: "U0ALICE", Text: "<@" + slacktest.BotUserID + "> sleep"})
		if err != nil {
			b.Fatal(err)
		}
		var card string
		if _, ok := fake.WaitThread("C0BENCH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
			for _, m := range ms {
				if isCard(m) && strings.Contains(string(m.Blocks), stopAction) {
					card = m.TS
					return true
				}
			}
			return false
		}); !ok {
			b.Fatal("no running card")
		}
		for _, c := range []struct {
			user, want string
			lat        *[]time.Duration
		}{{"U0BOB", "Only the asker", &refuseLat}, {"U0ALICE", "Stopped", &stopLat}} {
			at := time.Now()
			if _, err := fake.ClickButton(slacktest.Click{Channel: "C0BENCH", MessageTS: card, User: c.user, ActionID: stopAction}); err != nil {
				b.Fatal(err)
			}
			if _, ok := fake.WaitThread("C0BENCH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
				for _, m := range ms {
					if (m.Ephemeral || isCard(m)) && strings.Contains(m.Visible(), c.want) {
						return true
					}
				}
				return false
			}); !ok {
				b.Fatalf("no %q after a click by %s", c.want, c.user)
			}
			*c.lat = append(*c.lat, time.Since(at))
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		lat  []time.Duration
	}{{"stop", stopLat}, {"refusal-baseline", refuseLat}} {
		slices.Sort(m.lat)
		b.ReportMetric(float64(m.lat[len(m.lat)/2].Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(m.lat[len(m.lat)-1].Microseconds())/1000, m.name+"-max-ms")
	}
}
