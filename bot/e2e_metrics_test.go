package bot_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandpiper-bot/sandpiper/bot"
)

// TestExtraMetrics: collectors given in Config.Metrics (the sandbox
// backend's) are served on /metrics beside the bot's own.
func TestExtraMetrics(t *testing.T) {
	claims := prometheus.NewCounter(prometheus.CounterOpts{Name: "sandpiper_test_claims_total", Help: "Claims, for the test."})
	claims.Add(3)
	h := newHarness(t, withConfig(func(c *bot.Config) { c.Metrics = []prometheus.Collector{claims} }))
	if got := h.metric(t, "sandpiper_test_claims_total"); got != "3" {
		t.Errorf("sandpiper_test_claims_total = %q, want 3", got)
	}
	if got := h.metric(t, "sandpiper_slack_connected"); got == "" {
		t.Error("the bot's own metrics are gone")
	}
}
