package main

import (
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

// TestKubernetesConfig: the kubeconfig falls back to KUBECONFIG, and the
// limits and concurrency are the sandbox's.
func TestKubernetesConfig(t *testing.T) {
	c := config.Sandbox{KubernetesWarmPool: "python", Kubeconfig: "/a:/b", KubernetesReadyTimeout: 90 * time.Second, Concurrency: 20, Timeout: time.Minute}
	k := kubernetesConfig(c, nil)
	if k.WarmPool != "python" || k.Kubeconfig != "/a:/b" || k.ReadyTimeout != 90*time.Second || k.Concurrency != 20 || k.Limits.Timeout != time.Minute {
		t.Errorf("config %+v", k)
	}
	c.KubernetesKubeconfig = "/k"
	if k := kubernetesConfig(c, nil); k.Kubeconfig != "/k" {
		t.Errorf("kubeconfig %q, want SANDPIPER_KUBERNETES_KUBECONFIG's", k.Kubeconfig)
	}
}
