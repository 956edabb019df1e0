package sandboxtest

import (
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestVerdicts: the runs cover every kind of verdict, each under its
// name, and a note.
func TestVerdicts(t *testing.T) {
	kinds := map[sandbox.VerdictKind]bool{}
	note := false
	for _, r := range Verdicts() {
		v := r.Verdict()
		if v.Note == "" && string(v.Kind) != r.Name {
			t.Errorf("run %q has a verdict of kind %q", r.Name, v.Kind)
		}
		kinds[v.Kind] = true
		note = note || v.Note != ""
	}
	for _, k := range []sandbox.VerdictKind{sandbox.VerdictOK, sandbox.VerdictExit, sandbox.VerdictTimeout, sandbox.VerdictMemory,
		sandbox.VerdictCPU, sandbox.VerdictStopped, sandbox.VerdictGone, sandbox.VerdictError} {
		if !kinds[k] {
			t.Errorf("no run of kind %q", k)
		}
	}
	if !note {
		t.Error("no run with a note")
	}
}
