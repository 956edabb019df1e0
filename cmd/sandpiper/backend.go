package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/kubernetes"
)

// The cluster's backend is linked here, not in package config: its
// client's packages take milliseconds to initialise, which sandpiper-exec
// does not pay (it hands such runs back to sandpiper).
func init() {
	config.Register(sandbox.BackendKubernetes, func() config.Settings { return &kubernetesSettings{} })
}

// kubernetesSettings are the Kubernetes backend's (agent-sandbox) settings:
// a claim per run from the warm pool; the kubeconfig falls back to
// KUBECONFIG, then in a pod to its service account.
type kubernetesSettings struct {
	WarmPool     string        `env:"SANDPIPER_KUBERNETES_WARM_POOL"`
	Namespace    string        `env:"SANDPIPER_KUBERNETES_NAMESPACE"`
	Kubeconfig   string        `env:"SANDPIPER_KUBERNETES_KUBECONFIG"`
	Context      string        `env:"SANDPIPER_KUBERNETES_CONTEXT"`
	ReadyTimeout time.Duration `env:"SANDPIPER_KUBERNETES_READY_TIMEOUT"` // 0: the backend's default
	KUBECONFIG   string        `env:"KUBECONFIG"`
}

// Check requires the warm pool and a ready timeout that is not negative.
func (k *kubernetesSettings) Check(config.Sandbox) error {
	if k.WarmPool == "" {
		return errors.New("config: SANDPIPER_SANDBOX=kubernetes needs SANDPIPER_KUBERNETES_WARM_POOL, the SandboxWarmPool to claim sandboxes from")
	}
	return config.CheckRange("SANDPIPER_KUBERNETES_READY_TIMEOUT", k.ReadyTimeout, "more than 0s", k.ReadyTimeout < 0)
}

// New builds the Kubernetes backend, checking the cluster.
func (k *kubernetesSettings) New(ctx context.Context, c config.Sandbox, log *slog.Logger) (config.Runner, error) {
	s, err := kubernetes.New(ctx, k.config(c, log))
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

// Precheck is the cluster's checks for doctor: reachable, CRDs, RBAC,
// the warm pool, one run.
func (k *kubernetesSettings) Precheck(ctx context.Context, c config.Sandbox, log *slog.Logger) []config.Check {
	var checks []config.Check
	for _, d := range kubernetes.Doctor(ctx, k.config(c, log)) {
		checks = append(checks, config.Check{Name: d.Name, OK: d.OK, Warn: d.Warn, Detail: d.Detail})
	}
	return checks
}

// config is the Kubernetes backend's configuration.
func (k *kubernetesSettings) config(c config.Sandbox, log *slog.Logger) kubernetes.Config {
	return kubernetes.Config{
		WarmPool:     k.WarmPool,
		Namespace:    k.Namespace,
		Kubeconfig:   cmp.Or(k.Kubeconfig, k.KUBECONFIG),
		Context:      k.Context,
		ReadyTimeout: k.ReadyTimeout,
		Concurrency:  c.Concurrency,
		Limits:       c.Limits(),
		Logger:       log,
	}
}
