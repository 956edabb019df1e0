//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestChartHelper: every run, warm and cold, stateful or not, can import
// the chart helper; it writes a spec the host can read beside a PNG, and
// a program's own chart.py wins.
func TestChartHelper(t *testing.T) {
	hasPlot := exec.Command(testPython(), "-c", "import matplotlib").Run() == nil
	for _, tc := range []struct {
		name  string
		s     *Sandbox
		state bool
	}{{"warm", newTestSandbox(t), false}, {"cold", coldSandbox(t), false}, {"cold stateful", coldSandbox(t), true}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.s.Run(t.Context(), sandbox.Request{KeepState: tc.state, Code: `import chart
print(chart.line(["W1", "W2", "W3"], {"sign-ups": [120, 135.5, 160]}, title="Weekly sign-ups", y_label="people"))`})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || string(res.Stdout) != "weekly-sign-ups.png\n" {
				t.Fatalf("exit %d stdout %q stderr %q; want the PNG's name", res.ExitCode, res.Stdout, res.Stderr)
			}
			files := map[string][]byte{}
			for _, f := range res.Files {
				files[f.Name] = f.Data
			}
			var spec struct {
				Version    int
				Type       string
				Title      string
				YLabel     string `json:"y_label"`
				Categories []string
				Series     []struct {
					Name   string
					Values []float64
				}
				Image string
			}
			if err := json.Unmarshal(files[sandbox.ChartSpecDir+"/weekly-sign-ups.json"], &spec); err != nil {
				t.Fatalf("spec: %v (files %v)", err, len(res.Files))
			}
			if spec.Version != 1 || spec.Type != "line" || spec.Title != "Weekly sign-ups" || spec.YLabel != "people" ||
				len(spec.Categories) != 3 || len(spec.Series) != 1 || spec.Series[0].Name != "sign-ups" || spec.Series[0].Values[1] != 135.5 {
				t.Errorf("spec = %+v", spec)
			}
			if hasPlot {
				if spec.Image != "weekly-sign-ups.png" || !bytes.HasPrefix(files["weekly-sign-ups.png"], []byte("\x89PNG")) {
					t.Errorf("image %q, PNG %d bytes; want the PNG beside the spec", spec.Image, len(files["weekly-sign-ups.png"]))
				}
			}
		})
	}
	t.Run("own chart.py wins", func(t *testing.T) {
		res := run(t, newTestSandbox(t), `import chart; print(chart.mine)`, sandbox.Limits{}, sandbox.File{Name: "chart.py", Data: []byte("mine = 'yes'\n")})
		if string(res.Stdout) != "yes\n" {
			t.Errorf("stdout %q stderr %q; want the program's own chart module", res.Stdout, res.Stderr)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		res := run(t, newTestSandbox(t), `import chart; chart.bar(["a", "b"], {"x": [1, float("nan")]})`, sandbox.Limits{})
		if res.ExitCode == 0 || !bytes.Contains(res.Stderr, []byte("finite number")) {
			t.Errorf("exit %d stderr %q; want a ValueError naming the NaN", res.ExitCode, res.Stderr)
		}
	})
}
