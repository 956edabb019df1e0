package agent

import (
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestTakeCharts(t *testing.T) {
	png := sandbox.File{Name: "sales.png", Data: []byte("\x89PNG")}
	spec := func(s string) sandbox.File {
		return sandbox.File{Name: sandbox.ChartSpecDir + "/sales.json", Data: []byte(s)}
	}
	good := `{"version":1,"type":"bar","title":"Sales\u001b[31m","x_label":"","y_label":"EUR","categories":["N","S"],"series":[{"name":"2025","values":[1,2.5]}],"image":"sales.png"}`
	for _, tc := range []struct {
		name, spec string
		unfit      string // a word of why, "" when it fits
	}{
		{"good", good, ""},
		{"unknown field", strings.Replace(good, `"image"`, `"script":"x","image"`, 1), "not valid"},
		{"two documents", good + good, "not valid"},
		{"too large", `{"version":1,"type":"line","title":"t","image":"sales.png","too_large":"3 series of 5000 points"}`, "too many"},
		{"too big a file", strings.Replace(good, `"title":"Sales`, `"title":"`+strings.Repeat("x", MaxChartSpec), 1), "larger than"},
		{"kind", strings.Replace(good, `"bar"`, `"scatter"`, 1), "no known kind"},
		{"ragged", strings.Replace(good, `[1,2.5]`, `[1]`, 1), "one value per category"},
		{"pie of negatives", strings.Replace(strings.Replace(good, `"bar"`, `"pie"`, 1), `[1,2.5]`, `[1,-2]`, 1), "positive"},
		{"overflow", strings.Replace(good, `2.5`, `1e999`, 1), "not valid"},
		{"version", strings.Replace(good, `"version":1`, `"version":2`, 1), "version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			charts, rest := TakeCharts([]sandbox.File{png, spec(tc.spec)})
			if len(rest) != 1 || rest[0].Name != "sales.png" {
				t.Errorf("rest = %v; want the PNG alone, the spec taken out", rest)
			}
			if len(charts) != 1 {
				t.Fatalf("charts = %+v", charts)
			}
			c := charts[0]
			if c.Image != "sales.png" {
				t.Errorf("image %q, want sales.png: the PNG is the fallback", c.Image)
			}
			if tc.unfit == "" {
				if c.Unfit != "" || c.Kind != ChartBar || c.Title != "Sales␛[31m" || c.YLabel != "EUR" || len(c.Series) != 1 || c.Series[0].Values[1] != 2.5 {
					t.Errorf("chart = %+v; want the bar chart, its text neutralised", c)
				}
			} else if !strings.Contains(c.Unfit, tc.unfit) {
				t.Errorf("unfit %q, want it to say %q", c.Unfit, tc.unfit)
			}
		})
	}
	t.Run("image outside the files", func(t *testing.T) {
		charts, _ := TakeCharts([]sandbox.File{spec(strings.Replace(good, `"sales.png"`, `"../etc/passwd"`, 1))})
		if len(charts) != 1 || charts[0].Image != "" {
			t.Errorf("charts = %+v; want no image", charts)
		}
	})
	t.Run("no specs", func(t *testing.T) {
		files := []sandbox.File{png}
		if charts, rest := TakeCharts(files); charts != nil || len(rest) != 1 {
			t.Errorf("TakeCharts = %v, %v", charts, rest)
		}
	})
}
