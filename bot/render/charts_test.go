package render

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

func weekly(weeks, series int) agent.Chart {
	c := agent.Chart{Kind: agent.ChartLine, Title: "Weekly sign-ups", XLabel: "week", YLabel: "people"}
	for i := range weeks {
		c.Categories = append(c.Categories, fmt.Sprintf("W%d", i+1))
	}
	for s := range series {
		ser := agent.ChartSeries{Name: fmt.Sprintf("plan %d", s+1)}
		for i := range weeks {
			ser.Values = append(ser.Values, float64(100+10*i+s))
		}
		c.Series = append(c.Series, ser)
	}
	return c
}

// TestChartBlock: a chart within Slack's limits becomes a block Slack
// takes (the fake checks it), one past them says why and becomes its PNG.
func TestChartBlock(t *testing.T) {
	pie := agent.Chart{Kind: agent.ChartPie, Title: "Sign-ups by platform", Categories: []string{"iOS", "Android", "Web"},
		Series: []agent.ChartSeries{{Name: "value", Values: []float64{40, 35, 25}}}}
	bar := weekly(3, 2)
	bar.Kind, bar.Title = agent.ChartBar, ""
	long := weekly(3, 1)
	long.Categories[1] = "a week that has a long name"
	for _, tc := range []struct {
		name   string
		c      agent.Chart
		why    string // "" when it fits
		golden bool
	}{
		{"chart_line", weekly(12, 1), "", true},
		{"chart_bar_untitled", bar, "", true},
		{"chart_pie", pie, "", true},
		{"twenty points", weekly(20, 6), "", false},
		{"too many points", weekly(21, 1), "21 points a series", false},
		{"too many series", weekly(5, 7), "7 series", false},
		{"long category", long, "27 characters", false},
		{"long title", agent.Chart{Kind: agent.ChartLine, Title: strings.Repeat("t", 51), Categories: []string{"a"}, Series: []agent.ChartSeries{{Name: "x", Values: []float64{1}}}}, "title has 51", false},
		{"unfit spec", agent.Chart{Unfit: "its spec is not valid"}, "not valid", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, why := ChartBlock(tc.c)
			if tc.why != "" {
				if b != nil || !strings.Contains(why, tc.why) {
					t.Errorf("ChartBlock = %v, %q; want no block and a why saying %q", b, why, tc.why)
				}
				return
			}
			if b == nil {
				t.Fatalf("no block: %s", why)
			}
			if err := slacktest.CheckBlocks([]slack.Block{b}); err != nil {
				t.Errorf("Slack would refuse it: %v", err)
			}
			if tc.golden {
				slacktest.GoldenJSON(t, filepath.Join("testdata", "charts", tc.name+".json"), []slack.Block{b})
			}
		})
	}
	t.Run("three in a message", func(t *testing.T) {
		b, _ := ChartBlock(weekly(3, 1))
		if err := slacktest.CheckBlocks([]slack.Block{b, b, b}); err == nil {
			t.Errorf("three charts in a message passed the fake; Slack allows %d", ChartsPerMessage)
		}
	})
}
