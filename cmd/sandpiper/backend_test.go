package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

// TestKubernetesSettings: this binary links the cluster's backend; its
// settings are read and checked, the kubeconfig falls back to
// KUBECONFIG, and the limits and concurrency are the sandbox's.
func TestKubernetesSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		want    kubernetesSettings
	}{
		{name: "pool", env: map[string]string{"SANDPIPER_KUBERNETES_WARM_POOL": "python", "KUBECONFIG": "/a:/b"},
			want: kubernetesSettings{WarmPool: "python", KUBECONFIG: "/a:/b"}}, // a zero ready timeout is the backend's default
		{name: "all set", env: map[string]string{"SANDPIPER_KUBERNETES_WARM_POOL": "python",
			"SANDPIPER_KUBERNETES_NAMESPACE": "ns", "SANDPIPER_KUBERNETES_KUBECONFIG": "/k", "KUBECONFIG": "/ignored",
			"SANDPIPER_KUBERNETES_CONTEXT": "ctx", "SANDPIPER_KUBERNETES_READY_TIMEOUT": "90s"},
			want: kubernetesSettings{WarmPool: "python", Namespace: "ns", Kubeconfig: "/k", KUBECONFIG: "/ignored", Context: "ctx", ReadyTimeout: 90 * time.Second}},
		{name: "without a pool", env: map[string]string{}, wantErr: "SANDPIPER_KUBERNETES_WARM_POOL"},
		{name: "no wait", env: map[string]string{"SANDPIPER_KUBERNETES_WARM_POOL": "p", "SANDPIPER_KUBERNETES_READY_TIMEOUT": "-1s"},
			wantErr: "SANDPIPER_KUBERNETES_READY_TIMEOUT=-1s is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["SANDPIPER_SANDBOX"] = "kubernetes"
			tc.env["SANDPIPER_SANDBOX_CONCURRENCY"] = "20"
			tc.env["SANDPIPER_SANDBOX_TIMEOUT"] = "1m"
			c, err := config.LoadSandbox(t.Context(), envconfig.MapLookuper(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			k, ok := c.Settings().(*kubernetesSettings)
			if !ok || *k != tc.want {
				t.Fatalf("settings %+v, want %+v", c.Settings(), tc.want)
			}
			kc := k.config(c, nil)
			if want := "/a:/b"; tc.want.Kubeconfig != "" {
				want = tc.want.Kubeconfig
				if kc.Kubeconfig != want {
					t.Errorf("kubeconfig %q, want %q", kc.Kubeconfig, want)
				}
			} else if kc.Kubeconfig != want {
				t.Errorf("kubeconfig %q, want KUBECONFIG's %q", kc.Kubeconfig, want)
			}
			if kc.Concurrency != 20 || kc.Limits.Timeout != time.Minute || kc.WarmPool != k.WarmPool || kc.ReadyTimeout != k.ReadyTimeout {
				t.Errorf("config %+v", kc)
			}
		})
	}
}
