package bot_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// BenchmarkFirstTokenToSlack measures the time from the model writing the
// first word of its answer to Slack receiving it, for a model that writes
// 40 pieces 10 ms apart (about 0.4 s): "streamed" is the bot as it is;
// "whole" (SANDPIPER_STREAM=false) posts the answer when the model is
// done, as the bot did before streaming. Both against the fake Slack on
// loopback, in the same run. Reported: p50 and max in ms.
func BenchmarkFirstTokenToSlack(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noStream bool
	}{{"streamed", false}, {"whole", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var mu sync.Mutex
			first := map[string]time.Time{} // first word → when the model wrote it
			model := &scriptModel{script: func(q string, _, _ int) modelTurn {
				word := strings.Fields(q)[len(strings.Fields(q))-1]
				deltas := []string{word + " "}
				for i := range 39 {
					deltas = append(deltas, fmt.Sprintf("piece%d ", i))
				}
				return modelTurn{deltas: deltas, before: func(i int) {
					if i == 1 {
						mu.Lock()
						first[word] = time.Now()
						mu.Unlock()
					}
					time.Sleep(10 * time.Millisecond)
				}}
			}}
			fake := slacktest.New(b)
			fake.EchoBotMessages = false
			fake.AddUser(slacktest.User{ID: "U0ALICE"})
			defer runBenchBot(b, fake, bot.Config{NoStream: mode.noStream, Agent: &agent.Agent{Model: model}}, 1)()
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				word := fmt.Sprintf("word%dx", i)
				d, err := fake.UserPosts(slacktest.Post{Channel: "C0BENCH", User: "U0ALICE", Text: "<@" + slacktest.BotUserID + "> say " + word})
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := fake.WaitThread("C0BENCH", d.TS, 20*time.Second, func(ms []slacktest.Message) bool {
					return slices.ContainsFunc(ms, isAnswer)
				}); !ok {
					b.Fatal("no answer")
				}
				var at time.Time
				for _, c := range fake.Calls("") {
					if (c.Method == "chat.startStream" || c.Method == "chat.postMessage") && strings.Contains(c.Form.Encode(), word) {
						at = c.At
						break
					}
				}
				mu.Lock()
				lat = append(lat, at.Sub(first[word]))
				mu.Unlock()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}
