package execcmd

import (
	"os"
	"testing"
)

// TestSameBuild: a binary is of its own build, and not of a file that is
// no Go program's or not there. (TestExecHandsBack, in cmd/sandpiper,
// builds a sandpiper-exec of another build.)
func TestSameBuild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !sameBuild(self) {
		t.Errorf("sameBuild(%s), the test binary itself, is false", self)
	}
	for _, path := range []string{"/bin/sh", "/nonexistent/sandpiper"} {
		if sameBuild(path) {
			t.Errorf("sameBuild(%s) is true", path)
		}
	}
}
