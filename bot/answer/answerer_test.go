package answer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/sandpiper-bot/sandpiper/bot/stream"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

type noAgent struct{}

func (noAgent) Run(context.Context, []agent.Message, agent.RunOptions) (*agent.Outcome, error) {
	return &agent.Outcome{}, nil
}

type noSettings struct{}

func (noSettings) Get(string) store.ChannelSettings { return store.ChannelSettings{} }

// TestNewNeedsDeps: an Answerer missing something it needs is not made,
// and the error says what; with all of them, zero limits take the
// defaults.
func TestNewNeedsDeps(t *testing.T) {
	api := slack.New("xoxb-test", slack.OptionAPIURL("http://127.0.0.1:1/"))
	ws, err := thread.NewWorkspaces(t.TempDir(), time.Hour, sandbox.FileLimits{}.WithDefaults(), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := func() Deps {
		return Deps{
			Slack: api, SlackFiles: api, Agent: noAgent{},
			Memory: thread.NewMemory(api, "U0BOT", time.Hour), Workspaces: ws, Settings: noSettings{},
			Stream:  stream.New(stream.Config{Web: api, BotToken: "xoxb-test", APIURL: "http://127.0.0.1:1/"}),
			Metrics: NewMetrics(prometheus.NewRegistry(), prometheus.NewCounterVec(prometheus.CounterOpts{Name: "e"}, []string{"kind"})),
		}
	}
	for _, tt := range []struct {
		name   string
		change func(*Deps)
		want   string
	}{
		{"no Slack", func(d *Deps) { d.SlackFiles = nil }, "no Slack client"},
		{"no agent", func(d *Deps) { d.Agent = nil }, "no Agent"},
		{"no memory", func(d *Deps) { d.Memory = nil }, "no thread memory"},
		{"no settings", func(d *Deps) { d.Settings = nil }, "settings"},
		{"no metrics", func(d *Deps) { d.Metrics = nil }, "metrics"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := full()
			tt.change(&d)
			if a, err := New(d); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, %v; want an error about %q", a, err, tt.want)
			}
		})
	}
	a, err := New(full())
	if err != nil {
		t.Fatal(err)
	}
	if a.lim.Answer != DefaultTimeout || a.lim.Status != DefaultStatusInterval || a.lim.Files != (sandbox.FileLimits{}).WithDefaults() {
		t.Errorf("limits = %+v, want the defaults", a.lim)
	}
}
