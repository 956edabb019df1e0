package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func TestRunConfigErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no bot token", map[string]string{"SLACK_APP_TOKEN": "xapp-1"}, "SLACK_BOT_TOKEN: not set"},
		{"user token", map[string]string{"SLACK_BOT_TOKEN": "xoxp-1", "SLACK_APP_TOKEN": "xapp-1"}, `SLACK_BOT_TOKEN: must be a bot token starting with "xoxb-"`},
		{"no app token", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_APP_TOKEN: not set"},
		{"bad admin", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SANDPIPER_ADMINS": "alice"}, "SANDPIPER_ADMINS"},
		{"bad ttl", map[string]string{"SANDPIPER_THREAD_TTL": "soon"}, "SANDPIPER_THREAD_TTL"},
		{"bad api url", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_API_URL": "slack.com"}, "SLACK_API_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SANDPIPER_ADMINS", "SANDPIPER_THREAD_TTL", "SLACK_API_URL"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"run"}, strings.NewReader(""), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tc.want)
			}
			if strings.Contains(errb.String(), "xoxp-1") {
				t.Errorf("stderr shows the token: %q", errb.String())
			}
		})
	}
}

// TestRunNamesEverySetting: run with nothing set names every setting to
// fix in one go, the tokens and the model's key, not one a try.
func TestRunNamesEverySetting(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, k := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SANDPIPER_MODEL_API_KEY", "AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN", "OPENAI_API_KEY", "SANDPIPER_MODEL_BASE_URL", "SANDPIPER_MODEL_API"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("SANDPIPER_WORKERS", "x")
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"run"}, strings.NewReader(""), &out, &errb)
	got := errb.String()
	for _, want := range []string{
		"sandpiper: config: 4 settings to fix:\n",
		"\n  SANDPIPER_WORKERS=x is not a whole number: want e.g. SANDPIPER_WORKERS=8\n",
		"\n  SLACK_BOT_TOKEN: not set",
		"\n  SLACK_APP_TOKEN: not set",
		"\n  no model API key: set SANDPIPER_MODEL_API_KEY",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}
