package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox/local"
	"github.com/sandpiper-bot/sandpiper/sandbox/vercel"
)

func TestLoadSandboxConfigVercel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c sandboxConfig)
	}{
		{name: "defaults", env: map[string]string{"SANDPIPER_SANDBOX": "vercel"}, check: func(t *testing.T, c sandboxConfig) {
			if c.VercelAPIURL != vercel.DefaultAPIURL || c.VercelVCPUs != 1 || c.Concurrency != 0 {
				t.Errorf("api %q vcpus %d concurrency %d", c.VercelAPIURL, c.VercelVCPUs, c.Concurrency)
			}
		}},
		{name: "all set", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": "http://proxy:8080/api",
			"SANDPIPER_VERCEL_VCPUS": "4", "VERCEL_TOKEN": "tok", "VERCEL_TEAM_ID": "team", "VERCEL_PROJECT_ID": "prj", "VERCEL_OIDC_TOKEN": "a.b.c"},
			check: func(t *testing.T, c sandboxConfig) {
				if c.VercelAPIURL != "http://proxy:8080/api" || c.VercelVCPUs != 4 || c.VercelToken != "tok" || c.VercelTeamID != "team" ||
					c.VercelProjectID != "prj" || c.VercelOIDCToken != "a.b.c" {
					t.Errorf("config %+v", c)
				}
			}},
		{name: "unknown backend", env: map[string]string{"SANDPIPER_SANDBOX": "docker"}, wantErr: `SANDPIPER_SANDBOX="docker": want "local" (this host) or "vercel"`},
		{name: "odd vcpus", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_VCPUS": "3"}, wantErr: "SANDPIPER_VERCEL_VCPUS=3"},
		{name: "too many vcpus", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_VCPUS": "16"}, wantErr: "SANDPIPER_VERCEL_VCPUS=16"},
		{name: "bad url", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": "api.vercel.com"}, wantErr: "SANDPIPER_VERCEL_API_URL"},
		{name: "vercel memory", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_SANDBOX_MEMORY": "32GiB"}, wantErr: "SANDPIPER_SANDBOX_MEMORY=32GiB is out of range: want at most 16GiB with SANDPIPER_SANDBOX=vercel"},
		{name: "memory too small", env: map[string]string{"SANDPIPER_SANDBOX_MEMORY": "8MiB"}, wantErr: "SANDPIPER_SANDBOX_MEMORY=8MiB is out of range: want at least 16MiB"},
		{name: "too many at once", env: map[string]string{"SANDPIPER_SANDBOX_CONCURRENCY": "300"}, wantErr: "SANDPIPER_SANDBOX_CONCURRENCY=300 is out of range: want 0 (the number of CPUs) to 256"},
		{name: "size overflow", env: map[string]string{"SANDPIPER_SANDBOX_MEMORY": "17179869185GiB"}, wantErr: "SANDPIPER_SANDBOX_MEMORY"},
		{name: "cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "0.5"}, check: func(t *testing.T, c sandboxConfig) {
			if c.CPUs != 0.5 || c.limits().CPUs != 0.5 {
				t.Errorf("CPUs %v, limits %v", c.CPUs, c.limits().CPUs)
			}
		}},
		{name: "cpus default", env: map[string]string{}, check: func(t *testing.T, c sandboxConfig) {
			if c.CPUs != 1 {
				t.Errorf("CPUs %v, want 1", c.CPUs)
			}
		}},
		{name: "no cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "0"}, wantErr: "SANDPIPER_SANDBOX_CPUS=0 is out of range: want 0.01 to 1024"},
		{name: "negative cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "-1"}, wantErr: "SANDPIPER_SANDBOX_CPUS=-1 is out of range"},
		{name: "not a number of cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "two"}, wantErr: "SANDPIPER_SANDBOX_CPUS"},
		{name: "NaN cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "NaN"}, wantErr: "SANDPIPER_SANDBOX_CPUS=NaN is out of range"},
		{name: "vercel knobs ignored by local", env: map[string]string{"SANDPIPER_SANDBOX": "local", "SANDPIPER_VERCEL_VCPUS": "3"}},
		{name: "preload default", env: map[string]string{}, check: func(t *testing.T, c sandboxConfig) {
			if !slices.Equal(c.preload(), local.DefaultPreload) {
				t.Errorf("preload %q, want %q", c.preload(), local.DefaultPreload)
			}
		}},
		{name: "preload off", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": ""}, check: func(t *testing.T, c sandboxConfig) {
			if c.preload() != nil {
				t.Errorf("preload %q, want none", c.preload())
			}
		}},
		{name: "preload list", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": " numpy , scipy.stats,,"}, check: func(t *testing.T, c sandboxConfig) {
			if !slices.Equal(c.preload(), []string{"numpy", "scipy.stats"}) {
				t.Errorf("preload %q", c.preload())
			}
		}},
		{name: "preload not a module", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": "numpy,os;x"}, wantErr: `SANDPIPER_SANDBOX_PRELOAD="numpy,os;x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadSandboxConfig(t.Context(), envconfig.MapLookuper(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// scriptedVercel answers the Sandbox API calls one run makes, printing 42
// for the program and an empty file list for the collector.
func scriptedVercel(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var calls []string
	mux := http.NewServeMux()
	ndjson := func(w http.ResponseWriter, lines ...any) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, l := range lines {
			json.NewEncoder(w).Encode(l)
		}
	}
	cmds := map[string]string{} // command id -> what it prints
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		if r.Header.Get("Authorization") != "Bearer tok_cmd" || r.URL.Query().Get("teamId") != "team_cmd" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/sandboxes":
			json.NewEncoder(w).Encode(map[string]any{"sandboxes": []any{}, "pagination": map[string]any{"count": 0}})
		case r.Method == "POST" && r.URL.Path == "/v1/sandboxes":
			json.NewEncoder(w).Encode(map[string]any{"sandbox": map[string]any{"id": "sbx_1", "status": "running"}, "routes": []any{}})
		case r.Method == "POST" && r.URL.Path == "/v1/sandboxes/sbx_1/cmd":
			var body struct{ Args []string }
			json.NewDecoder(r.Body).Decode(&body)
			id := "cmd_" + string(rune('a'+len(cmds)))
			cmds[id] = "42\n"
			if strings.Contains(strings.Join(body.Args, " "), "hashlib") {
				cmds[id] = `{"files": [], "omitted": []}`
			}
			zero := 0
			ndjson(w, map[string]any{"command": map[string]any{"id": id, "exitCode": nil}},
				map[string]any{"command": map[string]any{"id": id, "exitCode": &zero}})
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/logs"):
			id := strings.Split(r.URL.Path, "/")[5]
			ndjson(w, map[string]any{"stream": "stdout", "data": cmds[id]})
		case r.Method == "POST" && r.URL.Path == "/v1/sandboxes/sbx_1/stop":
			json.NewEncoder(w).Encode(map[string]any{"sandbox": map[string]any{"id": "sbx_1", "status": "stopping"}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), calls...)
	}
}

func setVercelEnv(t *testing.T, apiURL string, env map[string]string) {
	for _, k := range []string{"VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_TEAM_ID", "VERCEL_PROJECT_ID", "SANDPIPER_VERCEL_VCPUS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("SANDPIPER_SANDBOX", "vercel")
	t.Setenv("SANDPIPER_VERCEL_API_URL", apiURL)
	for k, v := range env {
		t.Setenv(k, v)
	}
}

var cmdCreds = map[string]string{"VERCEL_TOKEN": "tok_cmd", "VERCEL_TEAM_ID": "team_cmd", "VERCEL_PROJECT_ID": "prj_cmd"}

func TestNewSandboxVercel(t *testing.T) {
	srv, _ := scriptedVercel(t)
	c, err := loadSandboxConfig(t.Context(), envconfig.MapLookuper(map[string]string{
		"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": srv.URL,
		"VERCEL_TOKEN": "tok_cmd", "VERCEL_TEAM_ID": "team_cmd", "VERCEL_PROJECT_ID": "prj_cmd",
	}))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := newSandbox(t.Context(), c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, ok := sb.(*vercel.Sandbox); !ok {
		t.Errorf("newSandbox gave %T, want *vercel.Sandbox", sb)
	}

	c.VercelToken = ""
	sb, err = newSandbox(t.Context(), c, slog.New(slog.DiscardHandler))
	if sb != nil || err == nil || !strings.Contains(err.Error(), "VERCEL_TOKEN not set") || !strings.Contains(err.Error(), "VERCEL_OIDC_TOKEN") {
		t.Errorf("without a token: %v, %v; want a nil backend and an error naming the variables", sb, err)
	}
}

func TestExecWithVercel(t *testing.T) {
	srv, calls := scriptedVercel(t)
	setVercelEnv(t, srv.URL, cmdCreds)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "-c", "print(6 * 7)"}, strings.NewReader(""), &out, &errb)
	if code != 0 || out.String() != "42\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if got := strings.Join(calls(), ", "); !strings.HasSuffix(got, "POST /v1/sandboxes/sbx_1/stop") {
		t.Errorf("calls %s: the sandbox was not stopped", got)
	}
}

func TestExecWithVercelNoCredentials(t *testing.T) {
	srv, calls := scriptedVercel(t)
	setVercelEnv(t, srv.URL, map[string]string{"VERCEL_TOKEN": "tok_cmd"})
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "-c", "print(1)"}, strings.NewReader(""), &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "VERCEL_TEAM_ID and VERCEL_PROJECT_ID not set") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if strings.Contains(errb.String(), "tok_cmd") {
		t.Errorf("stderr shows the token: %q", errb.String())
	}
	if n := len(calls()); n != 0 {
		t.Errorf("%d API calls without credentials", n)
	}
}

func TestDoctorWithVercel(t *testing.T) {
	srv, _ := scriptedVercel(t)
	setVercelEnv(t, srv.URL, cmdCreds)
	t.Setenv("SLACK_BOT_TOKEN", "")
	os.Unsetenv("SLACK_BOT_TOKEN")
	t.Setenv("SANDPIPER_DATA_DIR", t.TempDir())
	var out, errb bytes.Buffer
	run(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(out.String(), "ok   sandbox: print(6 * 7) → 42") {
		t.Errorf("doctor output has no passing sandbox check:\n%s%s", out.String(), errb.String())
	}
}
