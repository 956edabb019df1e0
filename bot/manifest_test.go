package bot

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"go.yaml.in/yaml/v4"
)

// TestManifestMatchesCode keeps manifest.yaml in step with what the bot
// uses: its scopes, events, slash command (its usage hint lists the
// commands of the table, in its order) and Socket Mode.
func TestManifestMatchesCode(t *testing.T) {
	data, err := os.ReadFile("../manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			AppHome struct {
				MessagesTab         bool `yaml:"messages_tab_enabled"`
				MessagesTabReadOnly bool `yaml:"messages_tab_read_only_enabled"`
			} `yaml:"app_home"`
			AgentView struct {
				Description string `yaml:"agent_description"`
			} `yaml:"agent_view"`
			SlashCommands []struct {
				Command     string `yaml:"command"`
				Description string `yaml:"description"`
				UsageHint   string `yaml:"usage_hint"`
			} `yaml:"slash_commands"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				Bot []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
			Interactivity struct {
				Enabled bool `yaml:"is_enabled"`
			} `yaml:"interactivity"`
			SocketMode bool `yaml:"socket_mode_enabled"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("manifest.yaml: %v", err)
	}
	scopes := slices.Sorted(slices.Values(m.OAuth.Scopes.Bot))
	want := slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(slackapi.OptionalScopes)), slackapi.RequiredScopes...)))
	if !slices.Equal(scopes, want) {
		t.Errorf("manifest bot scopes %v, code needs %v", scopes, want)
	}
	for _, ev := range []string{"app_mention", "message.channels", "message.groups", "message.im", "message.mpim",
		"assistant_thread_started", "app_home_opened", "agent_session_stopped"} {
		if !slices.Contains(m.Settings.Events.Bot, ev) {
			t.Errorf("manifest lacks bot event %s", ev)
		}
	}
	if !m.Settings.SocketMode || !m.Settings.Interactivity.Enabled {
		t.Error("manifest must enable Socket Mode and interactivity")
	}
	if !m.Features.AppHome.MessagesTab || m.Features.AppHome.MessagesTabReadOnly {
		t.Error("manifest must allow DMs (a writable messages tab)")
	}
	if m.Features.AgentView.Description == "" {
		t.Error("manifest must declare the agent view (features.agent_view with an agent_description)")
	}
	if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/sandpiper" || m.Features.SlashCommands[0].Description == "" {
		t.Fatalf("manifest slash commands = %+v, want /sandpiper", m.Features.SlashCommands)
	}
	if hint, want := m.Features.SlashCommands[0].UsageHint, usageHint(); hint != want {
		t.Errorf("manifest usage_hint %q, the commands table makes %q", hint, want)
		for _, c := range commands {
			if !strings.Contains(" "+hint+" ", " "+c.usage()+" ") {
				t.Errorf("the usage_hint lacks %q", c.usage())
			}
		}
	}
}
