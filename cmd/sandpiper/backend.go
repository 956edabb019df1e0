package main

import (
	"cmp"
	"context"
	"log/slog"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox/kubernetes"
)

// newBackend builds the configured sandbox backend: the cluster's, which
// only this binary links (its client's packages take milliseconds to
// initialise, which sandpiper-exec does not pay), or those config builds.
func newBackend(ctx context.Context, c config.Sandbox, log *slog.Logger) (config.Backend, error) {
	if c.Backend != "kubernetes" {
		return c.New(ctx, log)
	}
	s, err := kubernetes.New(ctx, kubernetesConfig(c, log))
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

// kubernetesConfig is the Kubernetes backend's configuration.
func kubernetesConfig(c config.Sandbox, log *slog.Logger) kubernetes.Config {
	return kubernetes.Config{
		WarmPool:     c.KubernetesWarmPool,
		Namespace:    c.KubernetesNamespace,
		Kubeconfig:   cmp.Or(c.KubernetesKubeconfig, c.Kubeconfig),
		Context:      c.KubernetesContext,
		ReadyTimeout: c.KubernetesReadyTimeout,
		Concurrency:  c.Concurrency,
		Limits:       c.Limits(),
		Logger:       log,
	}
}
