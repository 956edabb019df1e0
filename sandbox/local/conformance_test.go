package local

import (
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

// TestConformance runs the backends' conformance suite on this host's
// mode: as root, with cgroups where the host has them. TestUnprivileged
// runs it without (init's watcher), as an unprivileged user.
func TestConformance(t *testing.T) {
	s := newTestSandbox(t)
	t.Logf("mode: %s", s.Enforcement())
	sandboxtest.TestRunner(t, func(*testing.T) sandboxtest.Runner { return s })
}
