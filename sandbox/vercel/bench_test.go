package vercel

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// BenchmarkRun measures one run against the fake API: the client's own
// cost plus two Python starts on this host (program and file collector).
// With rtt set, every API call first waits that long, as over a network;
// the real service's sandbox creation time is not modelled.
func BenchmarkRun(b *testing.B) {
	for _, bc := range []struct {
		name string
		rtt  time.Duration
	}{
		{"rtt=0", 0},
		{"rtt=30ms", 30 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFake(b)
			s, _ := newTestSandbox(b, f, Config{})
			if bc.rtt > 0 {
				f.setHook(func(w http.ResponseWriter, r *http.Request, op string, n int) bool {
					time.Sleep(bc.rtt)
					return false
				})
			}
			for b.Loop() {
				res, err := s.Run(b.Context(), sandbox.Request{Code: "print(6 * 7)"})
				if err != nil || string(res.Stdout) != "42\n" {
					b.Fatalf("Run: %v %v", res, err)
				}
			}
		})
	}
}
