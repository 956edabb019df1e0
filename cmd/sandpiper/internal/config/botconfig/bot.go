// Package botconfig reads the bot's part of sandpiper's configuration
// (see package config), apart from what every command reads: only
// `sandpiper run` and doctor link the bot.
package botconfig

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

// Bot is the bot's part of the environment. Its defaults are bot's.
type Bot struct {
	// NumberCheck lists under an answer its numbers found in no run's
	// output.
	NumberCheck config.OnOff `env:"SANDPIPER_NUMBER_CHECK"`

	BotToken        string        `env:"SLACK_BOT_TOKEN"`
	AppToken        string        `env:"SLACK_APP_TOKEN"`
	APIURL          string        `env:"SLACK_API_URL"`
	Admins          []string      `env:"SANDPIPER_ADMINS"`
	DataDir         string        `env:"SANDPIPER_DATA_DIR"`
	ThreadTTL       time.Duration `env:"SANDPIPER_THREAD_TTL"`
	ShutdownTimeout time.Duration `env:"SANDPIPER_SHUTDOWN_TIMEOUT"`
	AnswerTimeout   time.Duration `env:"SANDPIPER_ANSWER_TIMEOUT"`
	Workers         int           `env:"SANDPIPER_WORKERS"`
	// Level is SANDPIPER_LOG_LEVEL's (config.LogLevel).
	Level slog.Level
	// HTTPAddr is "-" when SANDPIPER_HTTP_ADDR is set empty: no server.
	HTTPAddr string `env:"SANDPIPER_HTTP_ADDR"`
	// RedisURL turns on replicas sharing state through Redis; empty, the
	// bot runs alone, as it always has.
	RedisURL        string        `env:"SANDPIPER_REDIS_URL"`
	RedisClaimAfter time.Duration `env:"SANDPIPER_REDIS_CLAIM_AFTER"`
	// Replica names this process among the replicas; empty, the host name
	// and a random suffix.
	Replica string `env:"SANDPIPER_REPLICA"`
	// Stream streams answers as the model writes them (chat.startStream);
	// false posts each answer whole when it is done.
	Stream           config.OnOff `env:"SANDPIPER_STREAM"`
	StreamAppendsMin int          `env:"SANDPIPER_STREAM_APPENDS_PER_MINUTE"`

	// Schedules turns scheduled reports ("repeat every monday 9:00") on
	// or off; the limits bound them.
	Schedules           config.OnOff  `env:"SANDPIPER_SCHEDULES"`
	SchedulesPerChannel int           `env:"SANDPIPER_SCHEDULES_PER_CHANNEL"`
	SchedulesPerUser    int           `env:"SANDPIPER_SCHEDULES_PER_USER"`
	ScheduleMinInterval time.Duration `env:"SANDPIPER_SCHEDULE_MIN_INTERVAL"`
}

// reReplica is what a replica name may hold (Redis consumer names).
var reReplica = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,100}$`)

// Load reads and checks the bot's variables; errors name the variable to
// fix.
func Load(ctx context.Context, lookup envconfig.Lookuper) (Bot, error) {
	e := Bot{
		APIURL: bot.DefaultAPIURL, DataDir: bot.DefaultDataDir, ThreadTTL: bot.DefaultThreadTTL,
		ShutdownTimeout: bot.DefaultShutdownTimeout, AnswerTimeout: bot.DefaultAnswerTimeout, NumberCheck: bot.DefaultNumberCheck,
		Workers: bot.DefaultWorkers, HTTPAddr: bot.DefaultHTTPAddr,
		RedisClaimAfter: bot.DefaultRedisClaimAfter,
		Stream:          true, StreamAppendsMin: bot.DefaultStreamAppendsPerMinute,
		Schedules: true, SchedulesPerChannel: schedule.DefaultPerChannel, SchedulesPerUser: schedule.DefaultPerUser,
		ScheduleMinInterval: schedule.DefaultMinInterval,
	}
	parse := config.Process(ctx, lookup, &e)
	if v, ok := lookup.Lookup("SANDPIPER_HTTP_ADDR"); ok && strings.TrimSpace(v) == "" {
		e.HTTPAddr = "-"
	}
	var level error
	e.Level, level = config.LogLevel(lookup, slog.LevelInfo)
	return e, config.Join(parse, level,
		config.CheckRange("SANDPIPER_THREAD_TTL", e.ThreadTTL, "at least 1m", e.ThreadTTL < time.Minute),
		config.CheckRange("SANDPIPER_SHUTDOWN_TIMEOUT", e.ShutdownTimeout, "more than 0s", e.ShutdownTimeout <= 0),
		config.CheckRange("SANDPIPER_ANSWER_TIMEOUT", e.AnswerTimeout, "at least 10s", e.AnswerTimeout < 10*time.Second),
		config.CheckRange("SANDPIPER_WORKERS", e.Workers, "at least 1", e.Workers < 1),
		config.CheckRange("SANDPIPER_REDIS_CLAIM_AFTER", e.RedisClaimAfter, "at least 1s", e.RedisClaimAfter < time.Second),
		config.CheckRange("SANDPIPER_REPLICA", e.Replica, "1 to 100 letters, digits and . _ : -", e.Replica != "" && !reReplica.MatchString(e.Replica)),
		config.CheckRange("SANDPIPER_STREAM_APPENDS_PER_MINUTE", e.StreamAppendsMin, "between 1 and 6000", e.StreamAppendsMin < 1 || e.StreamAppendsMin > 6000),
		config.CheckRange("SANDPIPER_SCHEDULES_PER_CHANNEL", e.SchedulesPerChannel, "at least 1 (SANDPIPER_SCHEDULES=off turns them off)", e.SchedulesPerChannel < 1),
		config.CheckRange("SANDPIPER_SCHEDULES_PER_USER", e.SchedulesPerUser, "at least 1 (SANDPIPER_SCHEDULES=off turns them off)", e.SchedulesPerUser < 1),
		config.CheckRange("SANDPIPER_SCHEDULE_MIN_INTERVAL", e.ScheduleMinInterval, "at least 1m (the finest a cron line goes)", e.ScheduleMinInterval < time.Minute),
	)
}

// Logger returns the bot's logger, at SANDPIPER_LOG_LEVEL, writing to w.
func (e Bot) Logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: e.Level}))
}

// Config returns the bot's configuration, logging to log.
func (e Bot) Config(log *slog.Logger) bot.Config {
	return bot.Config{
		BotToken: e.BotToken, AppToken: e.AppToken, APIURL: e.APIURL,
		Admins: e.Admins, DataDir: e.DataDir, ThreadTTL: e.ThreadTTL,
		NumberCheckOff:  !bool(e.NumberCheck),
		ShutdownTimeout: e.ShutdownTimeout, AnswerTimeout: e.AnswerTimeout,
		HTTPAddr: e.HTTPAddr, Workers: e.Workers, Logger: log,
		RedisURL: strings.TrimSpace(e.RedisURL), RedisClaimAfter: e.RedisClaimAfter, Replica: e.Replica,
		NoStream: !bool(e.Stream), StreamAppendsPerMinute: e.StreamAppendsMin,
		SchedulesOff: !bool(e.Schedules),
		Schedules:    schedule.Limits{PerChannel: e.SchedulesPerChannel, PerUser: e.SchedulesPerUser, MinInterval: e.ScheduleMinInterval},
	}
}
