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
// the sandbox, the file limits, the state and the data sources.
type Agent struct {
	Model   Model
	Sandbox config.Sandbox
	Files   sandbox.FileLimits
	State   config.State
	Sources Sources
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
	if err != nil {
		return c, err
	}
	c.Files = f.Limits()
	if c.State, err = config.LoadState(ctx, lookup); err != nil {
		return c, err
	}
	c.Sandbox.StateSize = c.State.MaxSize.Bytes() // the backend bounds the state, and says so
	if c.Sources, err = LoadSources(ctx, lookup); err != nil {
		return c, err
	}
	// Restoring or saving a state takes about twice its size in the
	// run's memory, besides the interpreter's.
	room := sandbox.StateRoom(c.Sandbox.Memory.Bytes())
	return c, config.CheckRange("SANDPIPER_STATE_MAX_SIZE", c.State.MaxSize,
		"at most half of SANDPIPER_SANDBOX_MEMORY less "+sandbox.FormatSize(sandbox.StateOverhead/2)+" ("+sandbox.FormatSize(max(room, 0))+")", c.State.MaxSize.Bytes() > room)
}
