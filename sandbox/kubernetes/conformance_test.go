package kubernetes

import (
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

// TestConformance runs the backends' conformance suite against the test
// cluster: a real API server, agent-sandbox's CRDs and fake pods.
func TestConformance(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 2})
	s := ns.backend(t, nil)
	sandboxtest.TestRunner(t, func(*testing.T) sandboxtest.Runner { return s },
		sandboxtest.Skip{Test: "TimeoutOutput", Why: "the test cluster's pods run programs with sandbox/local, which returns nothing of a run it is told to kill; sandboxd streams the output as it is written"})
}
