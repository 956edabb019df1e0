package bot

import (
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

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
