package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/bot"
)

// botEnv is the bot's part of the environment. Its defaults are bot's.
type botEnv struct {
	BotToken        string        `env:"SLACK_BOT_TOKEN"`
	AppToken        string        `env:"SLACK_APP_TOKEN"`
	APIURL          string        `env:"SLACK_API_URL"`
	Admins          []string      `env:"SANDPIPER_ADMINS"`
	DataDir         string        `env:"SANDPIPER_DATA_DIR"`
	ThreadTTL       time.Duration `env:"SANDPIPER_THREAD_TTL"`
	ShutdownTimeout time.Duration `env:"SANDPIPER_SHUTDOWN_TIMEOUT"`
	AnswerTimeout   time.Duration `env:"SANDPIPER_ANSWER_TIMEOUT"`
	Workers         int           `env:"SANDPIPER_WORKERS"`
	LogLevel        string        `env:"SANDPIPER_LOG_LEVEL"`
	// HTTPAddr is "-" when SANDPIPER_HTTP_ADDR is set empty: no server.
	HTTPAddr string `env:"SANDPIPER_HTTP_ADDR"`
}

// loadBotEnv reads and checks the bot's variables; errors name the
// variable to fix.
func loadBotEnv(ctx context.Context, lookup envconfig.Lookuper) (botEnv, error) {
	e := botEnv{
		APIURL: bot.DefaultAPIURL, DataDir: bot.DefaultDataDir, ThreadTTL: bot.DefaultThreadTTL,
		ShutdownTimeout: bot.DefaultShutdownTimeout, AnswerTimeout: bot.DefaultAnswerTimeout,
		Workers: bot.DefaultWorkers, LogLevel: "info", HTTPAddr: bot.DefaultHTTPAddr,
	}
	if err := process(ctx, lookup, &e); err != nil {
		return e, err
	}
	if v, ok := lookup.Lookup("SANDPIPER_HTTP_ADDR"); ok && strings.TrimSpace(v) == "" {
		e.HTTPAddr = "-"
	}
	return e, checkRanges(
		rangeCheck{"SANDPIPER_THREAD_TTL", e.ThreadTTL.String(), "at least 1m", e.ThreadTTL < time.Minute},
		rangeCheck{"SANDPIPER_SHUTDOWN_TIMEOUT", e.ShutdownTimeout.String(), "more than 0s", e.ShutdownTimeout <= 0},
		rangeCheck{"SANDPIPER_ANSWER_TIMEOUT", e.AnswerTimeout.String(), "at least 10s", e.AnswerTimeout < 10*time.Second},
		rangeCheck{"SANDPIPER_WORKERS", strconv.Itoa(e.Workers), "at least 1", e.Workers < 1},
	)
}

func (e botEnv) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(e.LogLevel)); err != nil {
		return nil, fmt.Errorf("config: SANDPIPER_LOG_LEVEL: %q is not debug, info, warn or error", e.LogLevel)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

func (e botEnv) botConfig(log *slog.Logger) bot.Config {
	return bot.Config{
		BotToken: e.BotToken, AppToken: e.AppToken, APIURL: e.APIURL,
		Admins: e.Admins, DataDir: e.DataDir, ThreadTTL: e.ThreadTTL,
		ShutdownTimeout: e.ShutdownTimeout, AnswerTimeout: e.AnswerTimeout,
		HTTPAddr: e.HTTPAddr, Workers: e.Workers, Logger: log,
	}
}

// runBot is `sandpiper run`: answer questions in Slack until SIGINT or
// SIGTERM, then finish the answers in flight and exit 0.
func runBot(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	if len(args) > 0 {
		return usageError(errors.New("run takes no arguments"), usage)
	}
	lookup, env, err := load(ctx, loadBotEnv)
	if err != nil {
		return err
	}
	log, err := env.logger(stderr)
	if err != nil {
		return configError(err)
	}
	cfg := env.botConfig(log)
	if err := cfg.Validate(); err != nil {
		return configError(fmt.Errorf("config: %w", err))
	}
	c, err := loadAgentConfig(ctx, lookup)
	if err != nil {
		return configError(err)
	}
	c.sandbox.longLived = true
	a, rt, sb, err := c.start(ctx, log)
	if err != nil {
		return err
	}
	defer sb.Close()
	if rt.Python != "" {
		log.Info("sandbox runtime", "python", rt.String())
		if missing := rt.Missing(dataModules...); len(missing) > 0 {
			log.Warn("the sandbox's Python lacks modules for data questions and charts", "missing", strings.Join(missing, ", "))
		}
	}
	cfg.Agent, cfg.Files, cfg.SandboxLimits = a, c.files, c.sandbox.limits()
	b, err := bot.New(ctx, cfg)
	if err != nil {
		if _, ok := errors.AsType[*bot.ConfigError](err); ok {
			return configError(err)
		}
		return err
	}
	if addr := b.HTTPAddr(); addr != "" {
		log.Info("health and metrics", "addr", addr)
	}
	return b.Run(ctx)
}
