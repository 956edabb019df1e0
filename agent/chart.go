package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// ChartKind is the kind of a [Chart].
type ChartKind string

const (
	ChartLine ChartKind = "line"
	ChartBar  ChartKind = "bar"
	ChartArea ChartKind = "area"
	ChartPie  ChartKind = "pie"
)

// Bounds of a chart spec the host reads. The chart helper keeps within
// them; a spec past them is not read, and its chart is the PNG alone.
const (
	// MaxChartSpec bounds the bytes of one spec.
	MaxChartSpec = 64 << 10
	// MaxChartPoints bounds categories × series of one chart.
	MaxChartPoints = 1000
	// MaxChartSeries bounds the series of one chart.
	MaxChartSeries = 50
	// MaxChartText bounds a title, a label, a category or a series' name,
	// in characters.
	MaxChartText = 200
	// MaxCharts bounds the charts read from one run; the others are
	// their PNGs alone.
	MaxCharts = 10
)

// Chart is a chart a run drew with the sandbox's chart helper, as data:
// its spec read, checked and its text neutralised ([safetext.Line]), so
// a front end may draw it natively. Image names its PNG among the run's
// files ("" when the run drew none). A chart whose spec could not be used
// has Unfit set, saying why, and only its PNG to show.
type Chart struct {
	Kind       ChartKind
	Title      string
	XLabel     string
	YLabel     string
	Categories []string
	Series     []ChartSeries
	Image      string
	Unfit      string
}

// ChartSeries is one named series of a chart: a value per category (a
// pie has one series, its slices' values).
type ChartSeries struct {
	Name   string
	Values []float64
}

// chartSpec is the spec's schema (sandbox/chart.py writes it).
type chartSpec struct {
	Version    int               `json:"version"`
	Type       ChartKind         `json:"type"`
	Title      string            `json:"title"`
	XLabel     string            `json:"x_label"`
	YLabel     string            `json:"y_label"`
	Categories []string          `json:"categories"`
	Series     []chartSpecSeries `json:"series"`
	Image      string            `json:"image"`
	TooLarge   string            `json:"too_large"`
}

type chartSpecSeries struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// TakeCharts takes the chart specs out of a run's files: it returns the
// charts they describe, in the order of their files, and the other
// files. A spec is never kept or delivered as a file.
func TakeCharts(files []sandbox.File) (charts []Chart, rest []sandbox.File) {
	prefix := sandbox.ChartSpecDir + "/"
	rest = files[:0:0]
	for _, f := range files {
		if !strings.HasPrefix(f.Name, prefix) {
			rest = append(rest, f)
		}
	}
	if len(rest) == len(files) {
		return nil, files
	}
	for _, f := range files {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || !strings.HasSuffix(name, ".json") || strings.Contains(name, "/") {
			continue
		}
		c := readChart(f.Data, rest)
		if c.Image == "" && c.Unfit != "" {
			// Name the PNG the helper would have written beside it.
			if png := strings.TrimSuffix(name, ".json") + ".png"; slices.ContainsFunc(rest, func(f sandbox.File) bool { return f.Name == png }) {
				c.Image = png
			}
		}
		if len(charts) == MaxCharts {
			c = Chart{Image: c.Image, Title: c.Title, Unfit: fmt.Sprintf("a run shows at most %d charts as data", MaxCharts)}
		}
		charts = append(charts, c)
	}
	return charts, rest
}

// readChart reads one spec; files are the run's other files, where its
// image must be.
func readChart(data []byte, files []sandbox.File) Chart {
	if len(data) > MaxChartSpec {
		return Chart{Unfit: fmt.Sprintf("its spec is larger than %s", sandbox.FormatSize(MaxChartSpec))}
	}
	var s chartSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || dec.More() {
		return Chart{Unfit: "its spec is not valid"}
	}
	c := Chart{Kind: s.Type, Title: chartText(s.Title)}
	if s.Image != "" {
		img := path.Clean(s.Image)
		if strings.HasSuffix(img, ".png") && !sandbox.HiddenPath(img) && slices.ContainsFunc(files, func(f sandbox.File) bool { return f.Name == img }) {
			c.Image = img
		}
	}
	if why := checkSpec(&s); why != "" {
		c.Unfit = why
		return c
	}
	c.XLabel, c.YLabel = chartText(s.XLabel), chartText(s.YLabel)
	for _, v := range s.Categories {
		c.Categories = append(c.Categories, chartText(v))
	}
	for _, ser := range s.Series {
		c.Series = append(c.Series, ChartSeries{Name: chartText(ser.Name), Values: ser.Values})
	}
	return c
}

// checkSpec says why s cannot be drawn as data, or "".
func checkSpec(s *chartSpec) string {
	switch {
	case s.TooLarge != "":
		return "it has " + chartText(s.TooLarge) + ", too many to carry as data"
	case s.Version != 1:
		return "its spec is of an unknown version"
	case !slices.Contains([]ChartKind{ChartLine, ChartBar, ChartArea, ChartPie}, s.Type):
		return "its spec names no known kind of chart"
	case len(s.Categories) == 0 || len(s.Series) == 0:
		return "it has no data"
	case len(s.Series) > MaxChartSeries || len(s.Categories)*len(s.Series) > MaxChartPoints:
		return fmt.Sprintf("it has %d series of %d points, too many to carry as data", len(s.Series), len(s.Categories))
	case s.Type == ChartPie && len(s.Series) != 1:
		return "a pie has one series"
	}
	for _, ser := range s.Series {
		if len(ser.Values) != len(s.Categories) {
			return "a series has not one value per category"
		}
		for _, v := range ser.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || s.Type == ChartPie && v <= 0 {
				return "a value is not a finite number (a positive one, for a pie)"
			}
		}
	}
	return ""
}

// chartText is a spec's text as the host shows it: one line, neutralised,
// within MaxChartText characters.
func chartText(s string) string {
	s = strings.Join(strings.Fields(safetext.Line(s)), " ")
	if utf8.RuneCountInString(s) > MaxChartText {
		s = string([]rune(s)[:MaxChartText])
	}
	return s
}
