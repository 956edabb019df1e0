package vercel

import (
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

// TestConformance runs the backends' conformance suite against the fake
// Sandbox API, which runs the programs on this host.
func TestConformance(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	sandboxtest.TestRunner(t, func(*testing.T) sandboxtest.Runner { return s })
}
