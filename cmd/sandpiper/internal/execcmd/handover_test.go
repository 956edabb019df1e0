package execcmd

import (
	"os"
	"runtime/debug"
	"slices"
	"testing"
)

// TestSameBuild: sandpiper and sandpiper-exec are of one build when their
// Go, main module, build settings and the modules sandpiper-exec links
// are the same; sandpiper links more. (TestExecHandsBack, in
// cmd/sandpiper, builds a sandpiper-exec of another build.)
func TestSameBuild(t *testing.T) {
	const mod = "github.com/sandpiper-bot/sandpiper"
	lean := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      mod + "/cmd/sandpiper/sandpiper-exec",
		Main:      debug.Module{Path: mod, Version: "v1.2.0", Sum: "h1:main"},
		Deps:      []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.50.0", Sum: "h1:sys"}},
		Settings:  []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "CGO_ENABLED", Value: "1"}},
	}
	sandpiper := func(change func(b *debug.BuildInfo)) *debug.BuildInfo {
		b := *lean
		b.Path = mod + "/cmd/sandpiper"
		b.Deps = append(slices.Clone(lean.Deps), &debug.Module{Path: "github.com/charmbracelet/bubbletea", Version: "v1.3.10"})
		b.Settings = slices.Clone(lean.Settings)
		if change != nil {
			change(&b)
		}
		return &b
	}
	if !sameBuild(lean, sandpiper(nil)) {
		t.Error("sandpiper of the same build is not")
	}
	for name, change := range map[string]func(b *debug.BuildInfo){
		"another Go":      func(b *debug.BuildInfo) { b.GoVersion = "go1.26.9" },
		"another release": func(b *debug.BuildInfo) { b.Main.Version = "v1.3.0" },
		"other linker flags": func(b *debug.BuildInfo) {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: "-ldflags", Value: "-X main.v=2"})
		},
		"another x/sys": func(b *debug.BuildInfo) { b.Deps[0] = &debug.Module{Path: "golang.org/x/sys", Version: "v0.51.0"} },
		"x/sys replaced": func(b *debug.BuildInfo) {
			b.Deps[0] = &debug.Module{Path: "golang.org/x/sys", Version: "v0.50.0", Sum: "h1:sys", Replace: &debug.Module{Path: "../sys"}}
		},
		"no x/sys": func(b *debug.BuildInfo) { b.Deps = b.Deps[1:] },
		"another version stamp": func(b *debug.BuildInfo) {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: "vcs.revision", Value: "abc"})
		},
	} {
		if sameBuild(lean, sandpiper(change)) {
			t.Errorf("%s: sandpiper is of the same build", name)
		}
	}
	// A file that is no sandpiper is never handed back to.
	self, _ := os.Executable()
	for _, f := range []string{"/bin/sh", "/nonexistent/sandpiper", self} {
		if handBack(f) {
			t.Errorf("handBack(%s) is true", f)
		}
	}
}
