package config

import (
	"context"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Agent is what every command that runs the agent reads: the model,
// the sandbox, the file limits and the state.
type Agent struct {
	Model   Model
	Sandbox Sandbox
	Files   sandbox.FileLimits
	State   State
}

// Limits are the limits of the agent's runs: the sandbox's, and the
// state's size.
func (c Agent) Limits() sandbox.Limits {
	l := c.Sandbox.Limits()
	l.StateSize = c.State.MaxSize.n
	return l
}

// LoadAgent reads the agent's variables; its errors name the variable
// to fix.
func LoadAgent(ctx context.Context, lookup envconfig.Lookuper) (Agent, error) {
	var c Agent
	var err error
	if c.Model, err = LoadModel(ctx, lookup); err != nil {
		return c, err
	}
	if c.Sandbox, err = LoadSandbox(ctx, lookup); err != nil {
		return c, err
	}
	if c.Files, err = LoadFiles(ctx, lookup); err != nil {
		return c, err
	}
	if c.State, err = LoadState(ctx, lookup); err != nil {
		return c, err
	}
	// Restoring or saving a state takes about twice its size in the
	// run's memory.
	if err := checkRanges(rangeCheck{"SANDPIPER_STATE_MAX_SIZE", c.State.MaxSize.String(),
		"at most SANDPIPER_SANDBOX_MEMORY (" + c.Sandbox.Memory.String() + ")", c.State.MaxSize.n > c.Sandbox.Memory.n}); err != nil {
		return c, err
	}
	return c, nil
}
