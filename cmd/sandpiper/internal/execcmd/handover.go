package execcmd

import (
	"debug/buildinfo"
	"os"
	"runtime/debug"
	"slices"
	"syscall"
)

// HandoverEnv is set by sandpiper, when it hands `sandpiper exec` over to
// sandpiper-exec, to its own path; set to "off", it has sandpiper run exec
// itself.
const HandoverEnv = "SANDPIPER_EXEC_HANDOVER"

// TakeHandover is for sandpiper-exec, before it runs exec with args. When
// sandpiper handed the run over, and the two binaries are not of one build
// (see sameBuild), it hands the run back, to run in sandpiper as that
// version would, and does not return. It takes HandoverEnv out of the
// environment.
func TakeHandover(args []string) {
	from := os.Getenv(HandoverEnv)
	os.Unsetenv(HandoverEnv)
	if from == "" || from == "off" || sameBuild(from) {
		return
	}
	argv := append([]string{from, "exec"}, args...)
	syscall.Exec(from, argv, append(os.Environ(), HandoverEnv+"=off"))
	// Not executed: this binary's exec, then, is the one there is.
}

// sameBuild reports whether the binary at path (sandpiper) and this one
// were built alike: the same Go, main module version, build settings
// (flags, tags, cgo, target, version control stamp), and versions of
// every module this one links. Two builds of one unversioned tree with
// no version control stamp look alike; build the two binaries together.
func sameBuild(path string) bool {
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	other, err := buildinfo.ReadFile(path)
	if err != nil || other.GoVersion != own.GoVersion || module(&other.Main) != module(&own.Main) ||
		!slices.Equal(other.Settings, own.Settings) {
		return false
	}
	theirs := make(map[string]string, len(other.Deps))
	for _, m := range other.Deps {
		theirs[m.Path] = module(m)
	}
	for _, m := range own.Deps {
		if theirs[m.Path] != module(m) {
			return false
		}
	}
	return true
}

// module names a module version and what replaces it, if anything.
func module(m *debug.Module) string {
	s := m.Path + "@" + m.Version + " " + m.Sum
	if m.Replace != nil {
		s += " => " + module(m.Replace)
	}
	return s
}
