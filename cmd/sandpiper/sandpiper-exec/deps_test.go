package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDeps fails if sandpiper-exec links what it exists to leave out, in
// the manner of tailscale's tstest/deptest: the terminal UI and its
// Markdown renderer, the bot and the Slack library, the agent and its
// providers. Their packages' initialisation would cost each exec more
// than its sandbox does.
func TestDeps(t *testing.T) {
	bad := map[string]string{
		"github.com/charmbracelet/bubbletea":                             "the terminal UI",
		"github.com/charmbracelet/glamour":                               "the Markdown renderer",
		"github.com/alecthomas/chroma/v2":                                "the Markdown renderer's highlighter",
		"github.com/yuin/goldmark":                                       "the Markdown parser",
		"github.com/sandpiper-bot/sandpiper/bot":                         "the bot",
		"github.com/slack-go/slack":                                      "the Slack library",
		"github.com/sandpiper-bot/sandpiper/agent":                       "the agent",
		"github.com/sandpiper-bot/sandpiper/agent/openai":                "a model provider",
		"github.com/sandpiper-bot/sandpiper/agent/anthropic":             "a model provider",
		"github.com/openai/openai-go/v3":                                 "a model provider's SDK",
		"github.com/anthropics/anthropic-sdk-go":                         "a model provider's SDK",
		"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/tui":  "the terminal UI",
		"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/chat": "the terminal chat",
		"github.com/sandpiper-bot/sandpiper/sandbox/kubernetes":          "the cluster backend (exec hands a run on a cluster back to sandpiper)",
		"k8s.io/client-go":                                               "the Kubernetes client",
		"google.golang.org/grpc":                                         "gRPC",
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		for pkg, why := range bad {
			if dep == pkg || strings.HasPrefix(dep, pkg+"/") {
				t.Errorf("sandpiper-exec links %s (%s)", dep, why)
			}
		}
	}
	// The list is the one wanted: it holds the sandbox.
	if want := "github.com/sandpiper-bot/sandpiper/sandbox/local"; !slices.Contains(deps, want) {
		t.Errorf("sandpiper-exec does not link %s; go list said %q", want, deps)
	}
}
