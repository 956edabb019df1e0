package schedule

import (
	"fmt"
	"math"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent/numcheck"
)

// MaxFigures bounds the figures a fire keeps.
const MaxFigures = 50

// FiguresOf returns the figures of an answer worth comparing next time:
// those its sources held (runs, queries), named by a label no other
// figure of the answer has.
func FiguresOf(figs []numcheck.Figure) []Figure {
	count := map[string]int{}
	for _, f := range figs {
		count[labelKey(f.Label)]++
	}
	var out []Figure
	for _, f := range figs {
		k := labelKey(f.Label)
		if !f.Verified || k == "" || count[k] > 1 || len(out) == MaxFigures {
			continue
		}
		out = append(out, Figure{Label: f.Label, Text: f.Text, Value: f.Value})
	}
	return out
}

func labelKey(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// A Change is a figure whose value moved between two fires.
type Change struct {
	Label    string
	Old, New Figure
}

// Changes returns the figures of cur whose label prev has with another
// value, in cur's order.
func Changes(prev, cur []Figure) []Change {
	old := map[string]Figure{}
	for _, f := range prev {
		old[labelKey(f.Label)] = f
	}
	var out []Change
	for _, f := range cur {
		p, ok := old[labelKey(f.Label)]
		if !ok || p.Value == f.Value {
			continue
		}
		out = append(out, Change{Label: f.Label, Old: p, New: f})
	}
	return out
}

// String writes the change as "North: $1,234 → $1,456 (+18.0%)".
func (c Change) String() string {
	s := fmt.Sprintf("%s: %s → %s", c.Label, c.Old.Text, c.New.Text)
	if c.Old.Value != 0 && !strings.HasSuffix(c.New.Text, "%") {
		pct := (c.New.Value - c.Old.Value) / math.Abs(c.Old.Value) * 100
		s += fmt.Sprintf(" (%+.1f%%)", pct)
	} else if strings.HasSuffix(c.New.Text, "%") {
		s += fmt.Sprintf(" (%+.1f points)", c.New.Value-c.Old.Value)
	}
	return s
}
