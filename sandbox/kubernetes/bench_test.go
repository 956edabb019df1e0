package kubernetes

import (
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// BenchmarkRun times one run of print(6 * 7), side by side: "local" is
// sandbox/local on this host, and "kubernetes" the whole run through this
// backend against the envtest API server and a fake pod whose program runs
// with that same local backend: claim from a warm pool, wait for ready,
// start the program over gRPC, list the files (the collector, a Python
// start on this host), delete the claim. The difference is the backend's
// overhead per run; claim-ms/op is the part from creating the claim to
// its sandbox being ready, agent-sandbox's own controller's reconciles
// included (it runs in the test process). A real pod adds the launcher's
// Python start and the network's round trips.
func BenchmarkRun(b *testing.B) {
	needCluster(b)
	req := sandbox.Request{Code: "print(6 * 7)"}
	check := func(b *testing.B, res *sandbox.Result, err error) {
		if err != nil || string(res.Stdout) != "42\n" {
			b.Fatalf("Run: %v, %v", res, err)
		}
	}
	b.Run("local", func(b *testing.B) {
		for b.Loop() {
			res, err := fake.local.Run(b.Context(), req)
			check(b, res, err)
		}
	})
	b.Run("kubernetes", func(b *testing.B) {
		ns := newNamespace(b, poolOptions{replicas: 2})
		s := ns.backend(b, func(c *Config) { c.Logger = nil })
		var claimed time.Duration
		s.onReady = func(d time.Duration) { claimed += d }
		for b.Loop() {
			res, err := s.Run(b.Context(), req)
			check(b, res, err)
		}
		b.ReportMetric(float64(claimed.Milliseconds())/float64(b.N), "claim-ms/op")
	})
}
