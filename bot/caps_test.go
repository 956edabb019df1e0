package bot

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestFiredCaps(t *testing.T) {
	for _, tt := range []struct {
		name string
		res  *sandbox.Result
		want []sandbox.Cap
	}{
		{"no result", nil, nil},
		{"nothing fired", &sandbox.Result{}, nil},
		{"from the sandbox", &sandbox.Result{Caps: []sandbox.Cap{sandbox.CapSocketFamily, sandbox.CapCPUQuota}}, []sandbox.Cap{sandbox.CapSocketFamily, sandbox.CapCPUQuota}},
		{"stdout cut", &sandbox.Result{StdoutTruncated: true}, []sandbox.Cap{sandbox.CapOutput}},
		{"stderr cut, already reported", &sandbox.Result{StderrTruncated: true, Caps: []sandbox.Cap{sandbox.CapOutput}}, []sandbox.Cap{sandbox.CapOutput}},
		{"out of memory", &sandbox.Result{OutOfMemory: true, Limit: sandbox.LimitMemory, Caps: []sandbox.Cap{sandbox.CapMemory}}, []sandbox.Cap{sandbox.CapMemory}},
		{"out of memory, not in caps", &sandbox.Result{OutOfMemory: true}, []sandbox.Cap{sandbox.CapMemory}},
		{"timeout", &sandbox.Result{TimedOut: true, Limit: sandbox.LimitTimeout}, []sandbox.Cap{"timeout"}},
		{"cpu and output", &sandbox.Result{Limit: sandbox.LimitCPU, StdoutTruncated: true, Caps: []sandbox.Cap{sandbox.CapResultList}}, []sandbox.Cap{sandbox.CapResultList, sandbox.CapOutput, "cpu"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before []sandbox.Cap
			if tt.res != nil {
				before = slices.Clone(tt.res.Caps)
			}
			got := firedCaps(tt.res)
			if !slices.Equal(got, tt.want) {
				t.Errorf("firedCaps = %v, want %v", got, tt.want)
			}
			if tt.res != nil && !slices.Equal(tt.res.Caps, before) {
				t.Errorf("firedCaps changed the result's Caps to %v", tt.res.Caps)
			}
		})
	}
}

func TestCapsMetric(t *testing.T) {
	m := newMetrics()
	var b strings.Builder
	m.write(&b, true, 0)
	if !strings.Contains(b.String(), "# TYPE sandpiper_caps_total counter\n") {
		t.Errorf("no sandpiper_caps_total before any cap fired:\n%s", &b)
	}
	for _, c := range []sandbox.Cap{sandbox.CapOutput, sandbox.CapPreview, sandbox.CapOutput} {
		m.caps.inc(string(c))
	}
	b.Reset()
	m.write(&b, true, 0)
	for _, want := range []string{`sandpiper_caps_total{cap="output"} 2`, `sandpiper_caps_total{cap="preview"} 1`} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, &b)
		}
	}
}

// TestCapFired: a cap reported outside a run (a preview cut while the
// question was put together) is counted and logged with the thread.
func TestCapFired(t *testing.T) {
	var logs strings.Builder
	b := &Bot{metrics: newMetrics()}
	p := &cardPoster{b: b, log: slog.New(slog.NewTextHandler(&logs, nil)).With("channel", "C1", "thread", "1.2")}
	var r CapReporter = p
	r.CapFired(sandbox.CapPreview)
	if got := b.metrics.caps.m["preview"]; got != 1 {
		t.Errorf("preview counted %d times, want 1", got)
	}
	if want := `level=WARN msg="a cap fired while preparing the question" channel=C1 thread=1.2 cap=preview`; !strings.Contains(logs.String(), want) {
		t.Errorf("log = %q, want %q", logs.String(), want)
	}
}
