package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
)

// probeTimeout bounds asking the sandbox which Python modules it has.
const probeTimeout = 30 * time.Second

// start builds the configured model, the sandbox and the agent running
// code in it, telling the agent which Python the sandbox has. The caller
// closes the sandbox.
func start(ctx context.Context, c agentconfig.Agent, log *slog.Logger) (*agent.Agent, agent.Runtime, config.Backend, error) {
	model, err := c.Model.New(log)
	if err != nil {
		return nil, agent.Runtime{}, nil, cli.ConfigError(err)
	}
	sb, err := newBackend(ctx, c.Sandbox, log)
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
