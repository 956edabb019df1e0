package config

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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
		check   func(t *testing.T, c Sandbox)
	}{
		{name: "defaults", env: map[string]string{"SANDPIPER_SANDBOX": "vercel"}, check: func(t *testing.T, c Sandbox) {
			v := c.Settings().(*Vercel)
			if v.APIURL != vercel.DefaultAPIURL || v.VCPUs != 1 || c.Concurrency != 0 {
				t.Errorf("api %q vcpus %d concurrency %d", v.APIURL, v.VCPUs, c.Concurrency)
			}
		}},
		{name: "all set", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": "http://proxy:8080/api",
			"SANDPIPER_VERCEL_VCPUS": "4", "VERCEL_TOKEN": "tok", "VERCEL_TEAM_ID": "team", "VERCEL_PROJECT_ID": "prj", "VERCEL_OIDC_TOKEN": "a.b.c"},
			check: func(t *testing.T, c Sandbox) {
				if v := c.Settings().(*Vercel); *v != (Vercel{APIURL: "http://proxy:8080/api", VCPUs: 4, Token: "tok", TeamID: "team", ProjectID: "prj", OIDCToken: "a.b.c"}) {
					t.Errorf("settings %+v", v)
				}
			}},
		{name: "unknown backend", env: map[string]string{"SANDPIPER_SANDBOX": "docker"}, wantErr: `SANDPIPER_SANDBOX=docker is not a sandbox backend: want local (this host), vercel (Vercel Sandbox) or kubernetes`},
		// The cluster's backend is not linked here (cmd/sandpiper's tests
		// check its settings): loading leaves it to New to refuse.
		{name: "kubernetes not linked", env: map[string]string{"SANDPIPER_SANDBOX": "kubernetes"}, check: func(t *testing.T, c Sandbox) {
			if c.Settings() != nil {
				t.Errorf("settings %+v for a backend this binary does not link", c.Settings())
			}
			if _, err := c.New(t.Context(), nil); !errors.Is(err, ErrNotLinked) {
				t.Errorf("New: %v, want ErrNotLinked", err)
			}
		}},
		{name: "odd vcpus", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_VCPUS": "3"}, wantErr: "SANDPIPER_VERCEL_VCPUS=3"},
		{name: "too many vcpus", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_VCPUS": "16"}, wantErr: "SANDPIPER_VERCEL_VCPUS=16"},
		{name: "bad url", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": "api.vercel.com"}, wantErr: "SANDPIPER_VERCEL_API_URL"},
		{name: "vercel memory", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_SANDBOX_MEMORY": "32GiB"}, wantErr: "SANDPIPER_SANDBOX_MEMORY=32GiB is out of range: want at most 16.0 GiB with SANDPIPER_SANDBOX=vercel"},
		{name: "memory too small", env: map[string]string{"SANDPIPER_SANDBOX_MEMORY": "8MiB"}, wantErr: "SANDPIPER_SANDBOX_MEMORY=8MiB is out of range: want at least 16MiB"},
		{name: "too many at once", env: map[string]string{"SANDPIPER_SANDBOX_CONCURRENCY": "300"}, wantErr: "SANDPIPER_SANDBOX_CONCURRENCY=300 is out of range: want 0 (the number of CPUs) to 256"},
		{name: "size overflow", env: map[string]string{"SANDPIPER_SANDBOX_MEMORY": "17179869185GiB"}, wantErr: "SANDPIPER_SANDBOX_MEMORY"},
		{name: "cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "0.5"}, check: func(t *testing.T, c Sandbox) {
			if c.CPUs != 0.5 || c.Limits().CPUs != 0.5 {
				t.Errorf("CPUs %v, limits %v", c.CPUs, c.Limits().CPUs)
			}
		}},
		{name: "cpus default", env: map[string]string{}, check: func(t *testing.T, c Sandbox) {
			if c.CPUs != 1 {
				t.Errorf("CPUs %v, want 1", c.CPUs)
			}
		}},
		{name: "no cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "0"}, wantErr: "SANDPIPER_SANDBOX_CPUS=0 is out of range: want 0.01 to 1024"},
		{name: "negative cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "-1"}, wantErr: "SANDPIPER_SANDBOX_CPUS=-1 is out of range"},
		{name: "not a number of cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "two"}, wantErr: "SANDPIPER_SANDBOX_CPUS"},
		{name: "NaN cpus", env: map[string]string{"SANDPIPER_SANDBOX_CPUS": "NaN"}, wantErr: "SANDPIPER_SANDBOX_CPUS=NaN is out of range"},
		{name: "vercel knobs ignored by local", env: map[string]string{"SANDPIPER_SANDBOX": "local", "SANDPIPER_VERCEL_VCPUS": "3"}},
		{name: "preload default", env: map[string]string{}, check: func(t *testing.T, c Sandbox) {
			if !slices.Equal(c.Settings().(*Local).PreloadModules(), local.DefaultPreload) {
				t.Errorf("preload %q, want %q", c.Settings().(*Local).PreloadModules(), local.DefaultPreload)
			}
		}},
		{name: "preload off", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": ""}, check: func(t *testing.T, c Sandbox) {
			if c.Settings().(*Local).PreloadModules() != nil {
				t.Errorf("preload %q, want none", c.Settings().(*Local).PreloadModules())
			}
		}},
		{name: "preload list", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": " numpy , scipy.stats,,"}, check: func(t *testing.T, c Sandbox) {
			if !slices.Equal(c.Settings().(*Local).PreloadModules(), []string{"numpy", "scipy.stats"}) {
				t.Errorf("preload %q", c.Settings().(*Local).PreloadModules())
			}
		}},
		{name: "preload not a module", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": "numpy,os;x"}, wantErr: `SANDPIPER_SANDBOX_PRELOAD="numpy,os;x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadSandbox(t.Context(), envconfig.MapLookuper(tc.env))
			if failed(t, err, tc.wantErr) {
				return
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// credentialsOnlyVercel answers the Sandbox API call that checks
// credentials, and refuses the others.
func credentialsOnlyVercel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/v1/sandboxes" || r.Header.Get("Authorization") != "Bearer tok_cmd" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"sandboxes": [], "pagination": {"count": 0}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNewSandboxVercel(t *testing.T) {
	srv := credentialsOnlyVercel(t)
	c, err := LoadSandbox(t.Context(), envconfig.MapLookuper(map[string]string{
		"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": srv.URL,
		"VERCEL_TOKEN": "tok_cmd", "VERCEL_TEAM_ID": "team_cmd", "VERCEL_PROJECT_ID": "prj_cmd",
	}))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.New(t.Context(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, ok := sb.(*vercel.Sandbox); !ok {
		t.Errorf("New gave %T, want *vercel.Sandbox", sb)
	}

	c.Settings().(*Vercel).Token = ""
	sb, err = c.New(t.Context(), slog.New(slog.DiscardHandler))
	if sb != nil || err == nil || !strings.Contains(err.Error(), "VERCEL_TOKEN not set") || !strings.Contains(err.Error(), "VERCEL_OIDC_TOKEN") {
		t.Errorf("without a token: %v, %v; want a nil backend and an error naming the variables", sb, err)
	}
}
