package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

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
