package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
)

// botEnv is the bot's part of the environment.
type botEnv struct {
	BotToken        string        `env:"SLACK_BOT_TOKEN"`
	AppToken        string        `env:"SLACK_APP_TOKEN"`
	APIURL          string        `env:"SLACK_API_URL, default=https://slack.com/api/"`
	Admins          []string      `env:"SANDPIPER_ADMINS"`
	DataDir         string        `env:"SANDPIPER_DATA_DIR, default=./data"`
	ThreadTTL       time.Duration `env:"SANDPIPER_THREAD_TTL, default=24h"`
	ShutdownTimeout time.Duration `env:"SANDPIPER_SHUTDOWN_TIMEOUT, default=30s"`
	AnswerTimeout   time.Duration `env:"SANDPIPER_ANSWER_TIMEOUT, default=10m"`
	Workers         int           `env:"SANDPIPER_WORKERS, default=8"`
	LogLevel        string        `env:"SANDPIPER_LOG_LEVEL, default=info"`
}

// loadBotEnv reads and checks the bot's variables; errors name the
// variable to fix. httpAddr is "-" when SANDPIPER_HTTP_ADDR is set empty.
func loadBotEnv(ctx context.Context, lookup envconfig.Lookuper) (e botEnv, httpAddr string, err error) {
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &e, Lookuper: lookup}); err != nil {
		return e, "", fmt.Errorf("config: %s", envNames(err.Error(), e))
	}
	httpAddr = bot.DefaultHTTPAddr
	if v, ok := lookup.Lookup("SANDPIPER_HTTP_ADDR"); ok {
		httpAddr = v
		if strings.TrimSpace(v) == "" {
			httpAddr = "-"
		}
	}
	if err := checkRanges(
		rangeCheck{"SANDPIPER_THREAD_TTL", e.ThreadTTL.String(), "at least 1m", e.ThreadTTL < time.Minute},
		rangeCheck{"SANDPIPER_SHUTDOWN_TIMEOUT", e.ShutdownTimeout.String(), "more than 0s", e.ShutdownTimeout <= 0},
		rangeCheck{"SANDPIPER_ANSWER_TIMEOUT", e.AnswerTimeout.String(), "at least 10s", e.AnswerTimeout < 10*time.Second},
		rangeCheck{"SANDPIPER_WORKERS", strconv.Itoa(e.Workers), "at least 1", e.Workers < 1},
	); err != nil {
		return e, "", err
	}
	return e, httpAddr, nil
}

// envNames rewrites envconfig's "Field: problem" errors to name the
// environment variable instead of the Go field.
func envNames(msg string, target any) string {
	t := reflect.TypeOf(target)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name != "" && strings.HasPrefix(msg, f.Name+":") {
			return name + strings.TrimPrefix(msg, f.Name)
		}
	}
	return msg
}

func (e botEnv) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(e.LogLevel)); err != nil {
		return nil, fmt.Errorf("config: SANDPIPER_LOG_LEVEL: %q is not debug, info, warn or error", e.LogLevel)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

func (e botEnv) botConfig(httpAddr string, log *slog.Logger) bot.Config {
	return bot.Config{
		BotToken: e.BotToken, AppToken: e.AppToken, APIURL: e.APIURL,
		Admins: e.Admins, DataDir: e.DataDir, ThreadTTL: e.ThreadTTL,
		ShutdownTimeout: e.ShutdownTimeout, AnswerTimeout: e.AnswerTimeout,
		HTTPAddr: httpAddr, Workers: e.Workers, Logger: log,
	}
}

// runBot is `sandpiper run`: answer questions in Slack until SIGINT or
// SIGTERM, then finish the answers in flight and exit 0.
func runBot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "sandpiper: run takes no arguments\n\n%s", usage)
		return 2
	}
	lookup, _, err := envLookuper(".")
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	env, httpAddr, err := loadBotEnv(ctx, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	log, err := env.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	cfg := env.botConfig(httpAddr, log)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "sandpiper: config: %v\n", err)
		return 2
	}
	ac, err := loadAgentConfig(ctx, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	mc, sbCfg := ac.model, ac.sandbox
	cfg.Files = ac.files
	model, err := mc.newModel(log)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	sbCfg.longLived = true
	sb, err := newSandbox(ctx, sbCfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 1
	}
	defer sb.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	rt, err := agent.ProbeRuntime(pctx, sb)
	cancel()
	if err != nil {
		log.Warn("could not list the sandbox's Python modules; the model will not know them", "err", err)
	} else {
		log.Info("sandbox runtime", "python", rt.String())
		if missing := missingDataModules(rt); len(missing) > 0 {
			log.Warn("the sandbox's Python lacks modules for data questions and charts", "missing", strings.Join(missing, ", "))
		}
	}
	cfg.SandboxLimits = sbCfg.limits()
	cfg.Agent = mc.newAgent(model, []agent.Tool{
		agent.NewExecuteCode(sb, agent.ExecuteCodeOptions{Runtime: rt, Limits: sbCfg.limits(), Logger: log}),
	}, log)
	b, err := bot.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		var ce *bot.ConfigError
		if errors.As(err, &ce) {
			return 2
		}
		return 1
	}
	if addr := b.HTTPAddr(); addr != "" {
		log.Info("health and metrics", "addr", addr)
	}
	if err := b.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 1
	}
	return 0
}

// dataModules are the modules data questions and charts need.
var dataModules = []string{"numpy", "pandas", "matplotlib", "scipy", "sympy", "openpyxl"}

// missingDataModules lists the dataModules the runtime lacks.
func missingDataModules(rt agent.Runtime) []string {
	var missing []string
	for _, m := range dataModules {
		if !rt.Has(m) {
			missing = append(missing, m)
		}
	}
	return missing
}
