package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

// loadEnv returns the variables: the environment, then .env.local and .env.
func loadEnv() (envconfig.Lookuper, error) {
	lookup, _, err := config.Lookup(".")
	if err != nil {
		return nil, configError(err)
	}
	return lookup, nil
}

// load reads the variables and the part of them f reads; its errors are
// configErrors.
func load[T any](ctx context.Context, f func(context.Context, envconfig.Lookuper) (T, error)) (envconfig.Lookuper, T, error) {
	lookup, err := loadEnv()
	if err != nil {
		var zero T
		return nil, zero, err
	}
	v, err := f(ctx, lookup)
	if err != nil {
		return nil, v, configError(err)
	}
	return lookup, v, nil
}

// probeTimeout bounds asking the sandbox which Python modules it has.
const probeTimeout = 30 * time.Second

// start builds the configured model, the sandbox and the agent running
// code in it, telling the agent which Python the sandbox has. The caller
// closes the sandbox.
func start(ctx context.Context, c config.Agent, log *slog.Logger) (*agent.Agent, agent.Runtime, config.Backend, error) {
	model, err := c.Model.New(log)
	if err != nil {
		return nil, agent.Runtime{}, nil, configError(err)
	}
	sb, err := c.Sandbox.New(ctx, log)
	if err != nil {
		return nil, agent.Runtime{}, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	rt, err := agent.ProbeRuntime(pctx, sb)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			sb.Close()
			return nil, agent.Runtime{}, nil, ctx.Err()
		}
		log.Warn("could not list the sandbox's Python modules; the model will not know them", "err", err)
	}
	tool := agent.NewExecuteCode(sb, agent.ExecuteCodeOptions{Runtime: rt, Limits: c.Limits(), Logger: log, KeepState: bool(c.State.On)})
	return c.Model.Agent(model, []agent.Tool{tool}, log), rt, sb, nil
}
