package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
)

// probeTimeout bounds asking the sandbox which Python modules it has.
const probeTimeout = 30 * time.Second

// start builds the configured model, the sandbox, the data sources and
// the agent running code in the sandbox and queries on the sources,
// telling the agent which Python the sandbox has. The caller closes the
// sandbox and the sources (nil when none is configured). A source that
// cannot be reached does not stop it: it is logged, and the model is
// told it is unavailable.
func start(ctx context.Context, c agentconfig.Agent, log *slog.Logger) (*agent.Agent, agent.Runtime, config.Runner, *datasource.Set, error) {
	model, err := c.Model.New(log)
	if err != nil {
		return nil, agent.Runtime{}, nil, nil, cli.ConfigError(err)
	}
	sources, err := c.Sources.Open(c.Files, log, nil)
	if err != nil {
		return nil, agent.Runtime{}, nil, nil, cli.ConfigError(fmt.Errorf("config: %w", err))
	}
	sb, err := c.Sandbox.New(ctx, log)
	if err != nil {
		sources.Close()
		return nil, agent.Runtime{}, nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	rt, err := agent.ProbeRuntime(pctx, sb)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			sb.Close()
			sources.Close()
			return nil, agent.Runtime{}, nil, nil, ctx.Err()
		}
		log.Warn("could not list the sandbox's Python modules; the model will not know them", "err", err)
	}
	tool := agent.NewExecuteCode(sb, agent.ExecuteCodeOptions{Runtime: rt, Logger: log, KeepState: bool(c.State.On)})
	tools := []agent.Tool{tool}
	if sources != nil {
		tools = append(tools, sources.Tools()...)
		go checkSources(ctx, sources, log)
	}
	return c.Model.Agent(model, tools, log), rt, sb, sources, nil
}

// checkSources logs the sources that cannot be used, at start.
func checkSources(ctx context.Context, sources *datasource.Set, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, c := range sources.Check(ctx) {
		switch {
		case !c.OK:
			log.Warn("data source unavailable", "source", c.Name, "why", c.Detail)
		case c.Warn:
			log.Warn("data source", "source", c.Name, "detail", c.Detail)
		default:
			log.Info("data source", "source", c.Name, "detail", c.Detail)
		}
	}
}
