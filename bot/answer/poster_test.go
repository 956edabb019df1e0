package answer

import (
	"slices"
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
		{"out of memory", &sandbox.Result{Limit: sandbox.LimitMemory, Caps: []sandbox.Cap{sandbox.CapMemory}}, []sandbox.Cap{sandbox.CapMemory}},
		{"out of memory, not in caps", &sandbox.Result{Limit: sandbox.LimitMemory}, []sandbox.Cap{sandbox.CapMemory}},
		{"timeout", &sandbox.Result{Limit: sandbox.LimitTimeout}, []sandbox.Cap{"timeout"}},
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
