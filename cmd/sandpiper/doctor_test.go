package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

func TestDoctorReportsSlackProblems(t *testing.T) {
	fake := slacktest.New(t)
	t.Setenv("SLACK_API_URL", fake.URL)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-wrong")
	t.Setenv("SLACK_APP_TOKEN", slacktest.AppToken)
	dataDir := filepath.Join(t.TempDir(), "not", "yet")
	t.Setenv("SANDPIPER_DATA_DIR", dataDir)
	for _, k := range []string{"SANDPIPER_MODEL_API_KEY", "AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN", "OPENAI_API_KEY", "SANDPIPER_MODEL_BASE_URL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("SANDPIPER_SANDBOX", "none") // keep the sandbox out of this test
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errb)
	got := out.String()
	for _, want := range []string{
		"FAIL Slack bot token (auth.test): invalid_auth",
		"ok   Slack app token (apps.connections.open)",
		"ok   SANDPIPER_DATA_DIR: " + dataDir + " does not exist yet; the bot will create it",
		"FAIL model: config: no model API key: set SANDPIPER_MODEL_API_KEY, AI_GATEWAY_API_KEY, VERCEL_OIDC_TOKEN or OPENAI_API_KEY",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, got)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if strings.Contains(got, "xoxb-wrong") {
		t.Error("doctor printed the token")
	}
	if _, err := os.Stat(filepath.Dir(dataDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("doctor created part of %s: %v", dataDir, err)
	}
}

// TestDoctorListsTheSandboxModules: doctor says which Python modules the
// sandbox has, and names the data modules it lacks.
func TestDoctorListsTheSandboxModules(t *testing.T) {
	requireSandbox(t)
	t.Chdir(t.TempDir())
	t.Setenv("SLACK_BOT_TOKEN", "")
	t.Setenv("SANDPIPER_DATA_DIR", t.TempDir())
	t.Setenv("SANDPIPER_SANDBOX", "local")
	t.Setenv("SANDPIPER_PYTHON", testPython)
	t.Setenv("SANDPIPER_FILES_MAX_COUNT", "99")
	var out, errb bytes.Buffer
	run(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errb)
	got := out.String()
	if !strings.Contains(got, "sandbox Python modules: Python 3.") {
		t.Errorf("doctor output has no module check:\n%s%s", got, errb.String())
	}
	if strings.Contains(got, "ok   sandbox Python modules") && !strings.Contains(got, "numpy") {
		t.Errorf("modules passed without numpy:\n%s", got)
	}
	if !strings.Contains(got, "FAIL file limits: config: SANDPIPER_FILES_MAX_COUNT=99 is out of range: want 1 to 64") {
		t.Errorf("doctor does not check the file limits:\n%s", got)
	}
}

// TestDoctorKubernetesNoCluster: with SANDPIPER_SANDBOX=kubernetes and no
// cluster to use, doctor says so once, and what the sandbox's checks
// would repeat is left out.
func TestDoctorKubernetesNoCluster(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
	t.Setenv("SLACK_BOT_TOKEN", "")
	t.Setenv("SANDPIPER_DATA_DIR", t.TempDir())
	t.Setenv("SANDPIPER_SANDBOX", "kubernetes")
	t.Setenv("SANDPIPER_KUBERNETES_WARM_POOL", "python")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errb)
	got := out.String()
	if want := "FAIL kubernetes cluster: kubernetes: no cluster configured: the bot is not in a pod"; !strings.Contains(got, want) {
		t.Errorf("doctor output lacks %q:\n%s", want, got)
	}
	if strings.Contains(got, "FAIL sandbox:") || strings.Contains(got, "kubernetes CRDs") {
		t.Errorf("doctor went on past the missing cluster:\n%s", got)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestDescribePython(t *testing.T) {
	python := hostPython(t)
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	link, shim := filepath.Join(dir, "python3"), filepath.Join(dir, "shim")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	py := local.Python{Executable: real, Version: "3.0.0"}
	chosen := &local.Choice{Python: "python3", Why: "SANDPIPER_PYTHON unset: python3 on PATH, which has numpy"}
	for _, test := range []struct {
		ls   config.Local
		want string
	}{
		{config.Local{Python: real}, real + " (Python 3.0.0)"},
		{config.Local{Python: link}, real + " (Python 3.0.0), the file " + link + " links to"},
		{config.Local{Python: shim}, real + " (Python 3.0.0), which the shim " + shim + " runs; set SANDPIPER_PYTHON=" + real + " to skip the shim"},
		{config.Local{Choice: chosen}, real + " (Python 3.0.0), the file " + link + " links to (SANDPIPER_PYTHON unset: python3 on PATH, which has numpy)"},
	} {
		if got := describePython(&test.ls, py); got != test.want {
			t.Errorf("describePython(%+v):\n got %s\nwant %s", test.ls, got, test.want)
		}
	}
}

// TestDoctorAim: with Slack unreachable, doctor blames the network, not
// the tokens; a model that answers with nothing fails; a server on
// loopback, which needs no key, is said to get none, and to be asked for
// the default model's id when SANDPIPER_MODEL is not set.
func TestDoctorAim(t *testing.T) {
	t.Chdir(t.TempDir())
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens: as offline
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Stream bool }
		json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`)
	}))
	defer model.Close()
	t.Setenv("SLACK_API_URL", gone.URL+"/api/")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-1")
	t.Setenv("SLACK_APP_TOKEN", "xapp-1")
	t.Setenv("SANDPIPER_DATA_DIR", t.TempDir())
	t.Setenv("SANDPIPER_MODEL_BASE_URL", model.URL+"/v1")
	t.Setenv("SANDPIPER_MODEL", "")
	t.Setenv("SANDPIPER_MODEL_API", "")
	for _, k := range []string{"SANDPIPER_MODEL_API_KEY", "AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN", "OPENAI_API_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("SANDPIPER_SANDBOX", "none") // keep the sandbox out of this test
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"doctor"}, strings.NewReader(""), &out, &errb)
	got := out.String()
	for _, want := range []string{
		"FAIL Slack: cannot reach Slack at " + gone.URL + "/api/: ",
		": check the network, a proxy, or SLACK_API_URL\n",
		"FAIL model anthropic/claude-opus-4.8: openai at " + model.URL + "/v1 answered with nothing",
		"(no key sent: a server on this machine needs none)",
		"warn model id: SANDPIPER_MODEL is not set, so the default anthropic/claude-opus-4.8 is asked for, which a server on this machine may not have",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"check SLACK_BOT_TOKEN", "check SLACK_APP_TOKEN", "key from no variable", `answered ""`} {
		if strings.Contains(got, bad) {
			t.Errorf("doctor output says %q:\n%s", bad, got)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}
