// Package agentconfig reads the model's part of sandpiper's configuration
// (see package config), and with it everything the commands that run the
// agent read: `sandpiper exec` links neither the agent nor its providers.
package agentconfig

import (
	"context"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Agent is what every command that runs the agent reads: the model,
// the sandbox and the file limits.
type Agent struct {
	Model   Model
	Sandbox config.Sandbox
	Files   sandbox.FileLimits
}

// Load reads the agent's variables; its errors name the variable to fix.
func Load(ctx context.Context, lookup envconfig.Lookuper) (Agent, error) {
	var c Agent
	var err error
	if c.Model, err = LoadModel(ctx, lookup); err != nil {
		return c, err
	}
	if c.Sandbox, err = config.LoadSandbox(ctx, lookup); err != nil {
		return c, err
	}
	f, err := config.LoadFiles(ctx, lookup)
	c.Files = f.Limits()
	return c, err
}
