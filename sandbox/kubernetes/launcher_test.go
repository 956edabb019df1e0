package kubernetes

import (
	"os/exec"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestLauncherServesChart: the launcher runs the code through the
// runner, so the chart helper imports, and exits with the code's status.
func TestLauncherServesChart(t *testing.T) {
	cmd := launcherCommand(sandbox.Limits{}.WithDefaults(), "import chart, sys\nprint(chart.SPEC_DIR)\nsys.exit(3)")
	c := exec.Command("/usr/bin/python3", cmd[1:]...)
	c.Dir = t.TempDir()
	out, err := c.Output()
	if string(out) != sandbox.ChartSpecDir+"\n" || c.ProcessState.ExitCode() != 3 {
		t.Errorf("output %q, exit %d (%v); want the chart helper's spec folder and exit 3", out, c.ProcessState.ExitCode(), err)
	}
}
