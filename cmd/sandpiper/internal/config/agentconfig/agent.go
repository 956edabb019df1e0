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
	var model, sb, files, state, sources error
	c.Model, model = LoadModel(ctx, lookup)
	c.Sandbox, sb = config.LoadSandbox(ctx, lookup)
	f, files := config.LoadFiles(ctx, lookup)
	c.Files = f.Limits()
	c.State, state = config.LoadState(ctx, lookup)
	c.Sandbox.StateSize = c.State.MaxSize.Bytes() // the backend bounds the state, and says so
	c.Sources, sources = LoadSources(ctx, lookup)
	// Restoring or saving a state takes about twice its size in the
	// run's memory, besides the interpreter's.
	room := sandbox.StateRoom(c.Sandbox.Memory.Bytes())
	return c, config.Join(model, sb, files, state, sources, config.CheckRange("SANDPIPER_STATE_MAX_SIZE", c.State.MaxSize,
		"at most half of SANDPIPER_SANDBOX_MEMORY less "+sandbox.FormatSize(sandbox.StateOverhead/2)+" ("+sandbox.FormatSize(max(room, 0))+")", state == nil && sb == nil && c.State.MaxSize.Bytes() > room))
}
