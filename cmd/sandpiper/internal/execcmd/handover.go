package execcmd

import (
	"debug/buildinfo"
	"os"
	"path"
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
// version would, and does not return. Otherwise it returns the sandpiper
// that handed the run over ("" when none did), for [Exec.HandBack]. It
// takes HandoverEnv out of the environment.
func TakeHandover(args []string) (from string) {
	from = os.Getenv(HandoverEnv)
	os.Unsetenv(HandoverEnv)
	if from == "" || from == "off" {
		return ""
	}
	if handBack(from) {
		handBackTo(from, append([]string{"exec"}, args...))
	}
	return from
}

// handBackTo runs sandpiper, at path, with args and the environment, to
// run exec itself; it returns only if that cannot be done (then this
// binary's exec is the one there is).
func handBackTo(path string, args []string) {
	syscall.Exec(path, append([]string{path}, args...), append(os.Environ(), HandoverEnv+"=off"))
}

// handBack reports whether a run handed over by the binary at path goes
// back to it: it is a sandpiper (the command beside which this one's
// package lies), of another build than this one.
func handBack(file string) bool {
	own, ok := debug.ReadBuildInfo()
	other, err := buildinfo.ReadFile(file)
	if !ok || err != nil || other.Path != path.Dir(own.Path) {
		return false // no sandpiper: this binary's exec is the one there is
	}
	return !sameBuild(own, other)
}

// sameBuild reports whether two binaries were built alike: the same Go,
// main module version, build settings (flags, tags, cgo, target, version
// control stamp), and versions of every module the first links. Two
// builds of one unversioned tree with no version control stamp look
// alike; build the two binaries together.
func sameBuild(own, other *debug.BuildInfo) bool {
	if other.GoVersion != own.GoVersion || module(&other.Main) != module(&own.Main) || !slices.Equal(other.Settings, own.Settings) {
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
