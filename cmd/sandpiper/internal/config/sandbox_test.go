package config

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

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
			if c.VercelAPIURL != vercel.DefaultAPIURL || c.VercelVCPUs != 1 || c.Concurrency != 0 {
				t.Errorf("api %q vcpus %d concurrency %d", c.VercelAPIURL, c.VercelVCPUs, c.Concurrency)
			}
		}},
		{name: "all set", env: map[string]string{"SANDPIPER_SANDBOX": "vercel", "SANDPIPER_VERCEL_API_URL": "http://proxy:8080/api",
			"SANDPIPER_VERCEL_VCPUS": "4", "VERCEL_TOKEN": "tok", "VERCEL_TEAM_ID": "team", "VERCEL_PROJECT_ID": "prj", "VERCEL_OIDC_TOKEN": "a.b.c"},
			check: func(t *testing.T, c Sandbox) {
				if c.VercelAPIURL != "http://proxy:8080/api" || c.VercelVCPUs != 4 || c.VercelToken != "tok" || c.VercelTeamID != "team" ||
					c.VercelProjectID != "prj" || c.VercelOIDCToken != "a.b.c" {
					t.Errorf("config %+v", c)
				}
			}},
		{name: "unknown backend", env: map[string]string{"SANDPIPER_SANDBOX": "docker"}, wantErr: `SANDPIPER_SANDBOX="docker": want "local" (this host), "vercel" (Vercel Sandbox) or "kubernetes"`},
		{name: "kubernetes", env: map[string]string{"SANDPIPER_SANDBOX": "kubernetes", "SANDPIPER_KUBERNETES_WARM_POOL": "python", "KUBECONFIG": "/a:/b"},
			check: func(t *testing.T, c Sandbox) {
				if c.KubernetesWarmPool != "python" || c.Kubeconfig != "/a:/b" || c.KubernetesReadyTimeout != 0 || c.KubernetesNamespace != "" {
					t.Errorf("config %+v", c) // a zero ready timeout is the backend's default
				}
			}},
		{name: "kubernetes all set", env: map[string]string{"SANDPIPER_SANDBOX": "kubernetes", "SANDPIPER_KUBERNETES_WARM_POOL": "python",
			"SANDPIPER_KUBERNETES_NAMESPACE": "ns", "SANDPIPER_KUBERNETES_KUBECONFIG": "/k", "KUBECONFIG": "/ignored",
			"SANDPIPER_KUBERNETES_CONTEXT": "ctx", "SANDPIPER_KUBERNETES_READY_TIMEOUT": "90s", "SANDPIPER_SANDBOX_CONCURRENCY": "20"},
			check: func(t *testing.T, c Sandbox) {
				if c.KubernetesNamespace != "ns" || c.KubernetesKubeconfig != "/k" || c.KubernetesContext != "ctx" || c.KubernetesReadyTimeout != 90*time.Second || c.Concurrency != 20 {
					t.Errorf("config %+v", c)
				}
			}},
		{name: "kubernetes without a pool", env: map[string]string{"SANDPIPER_SANDBOX": "kubernetes"}, wantErr: "SANDPIPER_KUBERNETES_WARM_POOL"},
		{name: "kubernetes no wait", env: map[string]string{"SANDPIPER_SANDBOX": "kubernetes", "SANDPIPER_KUBERNETES_WARM_POOL": "p", "SANDPIPER_KUBERNETES_READY_TIMEOUT": "-1s"},
			wantErr: "SANDPIPER_KUBERNETES_READY_TIMEOUT=-1s is out of range"},
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
			if !slices.Equal(c.PreloadModules(), local.DefaultPreload) {
				t.Errorf("preload %q, want %q", c.PreloadModules(), local.DefaultPreload)
			}
		}},
		{name: "preload off", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": ""}, check: func(t *testing.T, c Sandbox) {
			if c.PreloadModules() != nil {
				t.Errorf("preload %q, want none", c.PreloadModules())
			}
		}},
		{name: "preload list", env: map[string]string{"SANDPIPER_SANDBOX_PRELOAD": " numpy , scipy.stats,,"}, check: func(t *testing.T, c Sandbox) {
			if !slices.Equal(c.PreloadModules(), []string{"numpy", "scipy.stats"}) {
				t.Errorf("preload %q", c.PreloadModules())
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

	c.VercelToken = ""
	sb, err = c.New(t.Context(), slog.New(slog.DiscardHandler))
	if sb != nil || err == nil || !strings.Contains(err.Error(), "VERCEL_TOKEN not set") || !strings.Contains(err.Error(), "VERCEL_OIDC_TOKEN") {
		t.Errorf("without a token: %v, %v; want a nil backend and an error naming the variables", sb, err)
	}
}
