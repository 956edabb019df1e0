package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/botconfig"
)

// runBot is `sandpiper run`: answer questions in Slack until SIGINT or
// SIGTERM, then finish the answers in flight and exit 0.
func runBot(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	if err := noArgs("run", args); err != nil {
		return err
	}
	// Every setting that is missing or wrong is reported at once.
	lookup, err := cli.LoadEnv()
	if err != nil {
		return err
	}
	env, botErr := botconfig.Load(ctx, lookup)
	log := env.Logger(stderr)
	cfg := env.Config(log)
	slackErr := cfg.Validate()
	c, agentErr := agentconfig.Load(ctx, lookup)
	if err := config.Join(botErr, slackErr, agentErr); err != nil {
		return cli.ConfigError(config.Locate(lookup, err))
	}
	c.Sandbox.LongLived = true
	a, rt, sb, sources, err := start(ctx, c, log)
	if err != nil {
		return err
	}
	defer sb.Close()
	defer sources.Close()
	if rt.Python != "" {
		log.Info("sandbox runtime", "python", rt.String())
		if missing := rt.Missing(config.DataModules...); len(missing) > 0 {
			log.Warn("the sandbox's Python lacks modules for data questions and charts", "missing", strings.Join(missing, ", "))
		}
	}
	cfg.Agent, cfg.Files, cfg.SandboxLimits = a, c.Files, sb.Info().Limits // the limits the agent's runs get, as the sandbox says
	if m, ok := sb.(prometheus.Collector); ok {
		cfg.Metrics = append(cfg.Metrics, m) // the backend's own (the cluster's claims)
	}
	if sources != nil {
		cfg.Metrics = append(cfg.Metrics, sources.Collector()) // sandpiper_queries_total, sandpiper_query_seconds
		// Admins grant them per channel; the operator to direct messages.
		cfg.Sources, cfg.SourcesDM = sources, c.Sources.DM
	}
	b, err := bot.New(ctx, cfg)
	if err != nil {
		if _, ok := errors.AsType[*bot.ConfigError](err); ok {
			return cli.ConfigError(err)
		}
		return err
	}
	if addr := b.HTTPAddr(); addr != "" {
		log.Info("health and metrics", "addr", addr)
	}
	return b.Run(ctx)
}
