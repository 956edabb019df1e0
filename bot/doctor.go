package bot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/store"
)

// Check is one result of [Doctor].
type Check struct {
	Name string
	OK   bool
	// Detail says what was found, or what to fix when not OK.
	Detail string
	// Warn marks a check that passed with something to fix for a feature
	// that is off meanwhile (an optional scope missing).
	Warn bool
}

// Doctor checks the Slack side of cfg: both tokens, the bot token's
// scopes, and the data directory. It never prints a token.
func Doctor(ctx context.Context, cfg Config) []Check {
	cfg.setDefaults()
	var checks []Check
	add := func(name string, err error, ok string) { checks = append(checks, result(name, err, ok)) }
	tokensOK := true
	for _, c := range []struct{ v, val, prefix string }{
		{"SLACK_BOT_TOKEN", cfg.BotToken, "xoxb-"}, {"SLACK_APP_TOKEN", cfg.AppToken, "xapp-"},
	} {
		switch {
		case c.val == "":
			add(c.v, fmt.Errorf("not set"), "")
			tokensOK = false
		case !strings.HasPrefix(c.val, c.prefix):
			add(c.v, fmt.Errorf("must start with %q", c.prefix), "")
			tokensOK = false
		}
	}
	if tokensOK {
		api := slackapi.New(cfg.BotToken, cfg.AppToken, cfg.APIURL, slackapi.CallTimeout)
		auth, err := api.AuthTestContext(ctx)
		switch {
		case err != nil && !slackapi.Refused(err):
			// Slack never answered: not the tokens' fault, and the app
			// token's check would say the same.
			add("Slack", fmt.Errorf("cannot reach Slack at %s: %v: check the network, a proxy, or SLACK_API_URL", cfg.APIURL, err), "")
			return append(checks, doctorData(ctx, cfg)...)
		case err != nil:
			add("Slack bot token (auth.test)", fmt.Errorf("%v: check SLACK_BOT_TOKEN (OAuth & Permissions → Bot User OAuth Token) and that the app is installed", slackapi.Explain(err)), "")
		default:
			add("Slack bot token (auth.test)", nil, fmt.Sprintf("workspace %s, bot user %s", auth.Team, auth.UserID))
			have := map[string]bool{}
			for _, s := range strings.Split(auth.Header.Get("X-OAuth-Scopes"), ",") {
				have[strings.TrimSpace(s)] = true
			}
			var missing []string
			for _, s := range slackapi.RequiredScopes {
				if !have[s] {
					missing = append(missing, s)
				}
			}
			switch {
			case auth.Header.Get("X-OAuth-Scopes") == "":
				add("Slack scopes", nil, "not checked: Slack did not list the token's scopes (needed: "+strings.Join(slackapi.RequiredScopes, ", ")+")")
			case len(missing) > 0:
				add("Slack scopes", fmt.Errorf("missing %s: add them (or re-create the app from manifest.yaml) and reinstall the app", strings.Join(missing, ", ")), "")
			default:
				add("Slack scopes", nil, "all required scopes granted")
			}
			for _, s := range slices.Sorted(maps.Keys(slackapi.OptionalScopes)) {
				if !have[s] && auth.Header.Get("X-OAuth-Scopes") != "" {
					checks = append(checks, Check{Name: "Slack scope " + s, OK: true, Warn: true,
						Detail: "missing, so " + slackapi.OptionalScopes[s] + ": add it (manifest.yaml has it) and reinstall the app"})
				}
			}
		}
		if _, _, err := api.StartSocketModeContext(ctx); err != nil {
			add("Slack app token (apps.connections.open)", fmt.Errorf("%v: check SLACK_APP_TOKEN (Basic Information → App-Level Tokens, scope connections:write) and that Socket Mode is on", slackapi.Explain(err)), "")
		} else {
			add("Slack app token (apps.connections.open)", nil, "Socket Mode connection allowed")
		}
	}
	return append(checks, doctorData(ctx, cfg)...)
}

// result is a check that failed with err, or passed saying ok.
func result(name string, err error, ok string) Check {
	if err != nil {
		return Check{Name: name, Detail: err.Error()}
	}
	return Check{Name: name, OK: true, Detail: ok}
}

// doctorData checks Redis, when configured, and the data directory.
func doctorData(ctx context.Context, cfg Config) []Check {
	var checks []Check
	add := func(name string, err error, ok string) { checks = append(checks, result(name, err, ok)) }
	if cfg.RedisURL != "" {
		checks = append(checks, doctorRedis(ctx, cfg))
	}
	if _, err := os.Stat(cfg.DataDir); errors.Is(err, fs.ErrNotExist) {
		// Check without creating it: doctor should change nothing.
		parent := filepath.Dir(filepath.Clean(cfg.DataDir))
		for {
			if _, err := os.Stat(parent); err == nil || parent == filepath.Dir(parent) {
				break
			}
			parent = filepath.Dir(parent)
		}
		if probe, err := os.MkdirTemp(parent, ".sandpiper-doctor-"); err != nil {
			add("SANDPIPER_DATA_DIR", fmt.Errorf("%s does not exist and cannot be created in %s: %w", cfg.DataDir, parent, err), "")
		} else {
			os.Remove(probe)
			add("SANDPIPER_DATA_DIR", nil, cfg.DataDir+" does not exist yet; the bot will create it")
		}
	} else if _, err := store.OpenSettings(cfg.DataDir); err != nil {
		add("SANDPIPER_DATA_DIR", err, "")
	} else {
		add("SANDPIPER_DATA_DIR", nil, cfg.DataDir+" is writable")
	}
	return checks
}

// doctorRedis checks the Redis of SANDPIPER_REDIS_URL: it answers PING,
// and its version and this user's permissions have the Streams, consumer
// groups and scripts the queue needs. It changes nothing in Redis.
func doctorRedis(ctx context.Context, cfg Config) Check {
	name := "Redis (" + replica.EnvURL + ")"
	quiet := cfg
	quiet.Logger = slog.New(slog.DiscardHandler)
	if quiet.Replica == "" {
		quiet.Replica = "doctor"
	}
	st, err := openShared(ctx, quiet)
	if err != nil {
		return Check{Name: name, Detail: err.Error()}
	}
	defer st.Close()
	info, err := st.Check(ctx)
	if err != nil {
		return Check{Name: name, Detail: err.Error()}
	}
	detail := fmt.Sprintf("Redis %s at %s, db %d: PING answered; Streams with consumer groups (XAUTOCLAIM) and scripts work", info.Version, info.Addr, info.DB)
	for _, w := range info.Warnings {
		detail += "; warning: " + w
	}
	return Check{Name: name, OK: true, Detail: detail}
}
