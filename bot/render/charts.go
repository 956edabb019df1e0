package render

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
)

// MetaChart marks a message showing the charts a run drew.
const MetaChart = "sandpiper_chart"

// ChartBlock returns c as a data_visualization block, Slack's own
// interactive chart, or why it cannot be one: a spec the host could not
// use, or data past Slack's limits (points, series, label lengths), in
// words for the card's debug note. Text is cut nowhere: a label too long
// for Slack makes the chart a PNG rather than a chart that misleads.
func ChartBlock(c agent.Chart) (slack.Block, string) {
	if c.Unfit != "" {
		return nil, c.Unfit
	}
	title := c.Title
	if title == "" {
		title = strings.ToUpper(string(c.Kind[:1])) + string(c.Kind[1:]) + " chart"
	}
	if n := utf8.RuneCountInString(title); n > chartTitleChars {
		return nil, fmt.Sprintf("its title has %d characters; Slack's charts hold %d", n, chartTitleChars)
	}
	if len(c.Series) > chartSeries {
		return nil, fmt.Sprintf("it has %d series; Slack's charts hold %d", len(c.Series), chartSeries)
	}
	if len(c.Categories) > chartPoints {
		return nil, fmt.Sprintf("it has %d points a series; Slack's charts hold %d", len(c.Categories), chartPoints)
	}
	if why := labelsFit("category", c.Categories); why != "" {
		return nil, why
	}
	names := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i] = s.Name
	}
	if c.Kind == agent.ChartPie {
		if len(c.Categories) > chartSeries {
			return nil, fmt.Sprintf("the pie has %d slices; Slack's pies hold %d", len(c.Categories), chartSeries)
		}
		segs := make([]slack.DataVisualizationSegment, len(c.Categories))
		for i, l := range c.Categories {
			segs[i] = slack.NewDataVisualizationSegment(l, c.Series[0].Values[i])
		}
		return slack.NewDataVisualizationBlock(title, slack.NewDataVisualizationPieChart(segs...)), ""
	}
	if why := labelsFit("series name", names); why != "" {
		return nil, why
	}
	for _, l := range []string{c.XLabel, c.YLabel} {
		if n := utf8.RuneCountInString(l); n > chartTitleChars {
			return nil, fmt.Sprintf("an axis label has %d characters; Slack's charts hold %d", n, chartTitleChars)
		}
	}
	axis := slack.NewDataVisualizationAxisConfig(c.Categories...).WithXLabel(c.XLabel).WithYLabel(c.YLabel)
	series := make([]slack.DataVisualizationDataSeries, len(c.Series))
	for i, s := range c.Series {
		pts := make([]slack.DataVisualizationDataPoint, len(s.Values))
		for j, v := range s.Values {
			pts[j] = slack.NewDataVisualizationDataPoint(c.Categories[j], v)
		}
		series[i] = slack.NewDataVisualizationDataSeries(s.Name, pts...)
	}
	var chart slack.DataVisualizationChart
	switch c.Kind {
	case agent.ChartLine:
		chart = slack.NewDataVisualizationLineChart(axis, series...)
	case agent.ChartBar:
		chart = slack.NewDataVisualizationBarChart(axis, series...)
	case agent.ChartArea:
		chart = slack.NewDataVisualizationAreaChart(axis, series...)
	default:
		return nil, "Slack draws no " + string(c.Kind) + " chart"
	}
	return slack.NewDataVisualizationBlock(title, chart), ""
}

// labelsFit says why labels cannot label a Slack chart (empty, too long,
// the same twice), or "".
func labelsFit(what string, labels []string) string {
	seen := map[string]bool{}
	for _, l := range labels {
		switch n := utf8.RuneCountInString(l); {
		case n == 0:
			return "a " + what + " is empty"
		case n > chartLabelChars:
			return fmt.Sprintf("a %s has %d characters; Slack's charts hold %d", what, n, chartLabelChars)
		case seen[l]:
			return "two " + what + "s are the same"
		}
		seen[l] = true
	}
	return ""
}

// ChartsFallback is the notification text of a message of charts.
func ChartsFallback(titles []string) string {
	return Truncate("Chart: "+strings.Join(titles, " · "), FallbackTextChars)
}
