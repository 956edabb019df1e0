package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/internal/socket"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/sandpiper-bot/sandpiper/bot/stream"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Agent answers a question given its thread's conversation; [*agent.Agent]
// implements it. See [answer.Agent].
type Agent = answer.Agent

// Config configures a [Bot]. Zero fields take the defaults in limits.go.
type Config struct {
	BotToken string // xoxb-…, for the Web API
	AppToken string // xapp-…, for Socket Mode
	APIURL   string // Slack's Web API base URL, ending in "/"

	Admins          []string // user IDs allowed to change channel settings
	DataDir         string
	ThreadTTL       time.Duration
	ShutdownTimeout time.Duration
	AnswerTimeout   time.Duration // one answer, model and sandbox included
	// HTTPAddr is the health and metrics address; "-" disables it (the
	// command maps an empty SANDPIPER_HTTP_ADDR to "-").
	HTTPAddr string
	Workers  int // answers at once

	// Sources are the data sources the operator configured (nil: none).
	// A channel's questions may query those an admin granted to it
	// (`sources allow NAME`), direct messages those named in SourcesDM
	// (SANDPIPER_SOURCES_DM).
	Sources   DataSources
	SourcesDM []string

	// NumberCheckOff turns off the number check: the line under an
	// answer listing its numbers found in no run's output
	// (SANDPIPER_NUMBER_CHECK=off).
	NumberCheckOff bool

	Agent Agent
	// Metrics are served on /metrics beside the bot's own, such as the
	// sandbox backend's.
	Metrics []prometheus.Collector
	// SandboxLimits are the limits runs get, as the sandbox reports them
	// (its Info), shown in debug cards.
	SandboxLimits sandbox.Limits
	// Files bound the files read from Slack into runs, kept in threads'
	// workspaces, and posted back.
	Files  sandbox.FileLimits
	Logger *slog.Logger

	// PingInterval is how long the socket may stay silent (no frame,
	// ping or pong) before it is reopened (default 30s); tests shorten it.
	PingInterval time.Duration
	// StatusInterval is how often the "working" status is renewed.
	StatusInterval time.Duration

	// RedisURL, when set, makes this bot one of several replicas sharing
	// Redis: redis://[user:password@]host:port/db, or rediss:// for TLS.
	RedisURL string
	// RedisClaimAfter is how long a question a replica took may go without
	// its heartbeat before another replica answers it.
	RedisClaimAfter time.Duration
	// Replica names this process among the replicas (default: the host
	// name and a random suffix).
	Replica string
	// NoStream posts answers whole, at the end, instead of streaming
	// them as the model writes (SANDPIPER_STREAM=false).
	NoStream bool
	// StreamAppendsPerMinute is the chat.appendStream budget of all
	// answers together (default [DefaultStreamAppendsPerMinute]).
	StreamAppendsPerMinute int

	// Schedules bound the scheduled reports (package schedule);
	// SchedulesOff turns them off (SANDPIPER_SCHEDULES=off): the
	// commands say so and nothing fires.
	Schedules    schedule.Limits
	SchedulesOff bool
}

func (c *Config) setDefaults() {
	c.APIURL = cmp.Or(c.APIURL, DefaultAPIURL)
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	c.DataDir = cmp.Or(c.DataDir, DefaultDataDir)
	c.ThreadTTL = cmp.Or(c.ThreadTTL, DefaultThreadTTL)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.AnswerTimeout = cmp.Or(c.AnswerTimeout, DefaultAnswerTimeout)
	c.HTTPAddr = cmp.Or(c.HTTPAddr, DefaultHTTPAddr)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.StatusInterval = cmp.Or(c.StatusInterval, answer.DefaultStatusInterval)
	c.Files = c.Files.WithDefaults()
	c.RedisClaimAfter = cmp.Or(c.RedisClaimAfter, DefaultRedisClaimAfter)
	c.StreamAppendsPerMinute = cmp.Or(c.StreamAppendsPerMinute, DefaultStreamAppendsPerMinute)
}

// ConfigError is a configuration problem found at start-up; Var names the
// environment variable to fix.
type ConfigError struct {
	Var string
	Err error
}

func (e *ConfigError) Error() string { return e.Var + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Validate checks the configuration without calling Slack; its errors are
// [*ConfigError]s naming the variable to fix, all of them, joined.
func (c *Config) Validate() error {
	var errs []error
	switch {
	case c.BotToken == "":
		errs = append(errs, &ConfigError{"SLACK_BOT_TOKEN", errors.New("not set; copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page")})
	case !strings.HasPrefix(c.BotToken, "xoxb-"):
		errs = append(errs, &ConfigError{"SLACK_BOT_TOKEN", errors.New(`must be a bot token starting with "xoxb-"`)})
	}
	switch {
	case c.AppToken == "":
		errs = append(errs, &ConfigError{"SLACK_APP_TOKEN", errors.New("not set; create an app-level token with the connections:write scope on the app's Basic Information page")})
	case !strings.HasPrefix(c.AppToken, "xapp-"):
		errs = append(errs, &ConfigError{"SLACK_APP_TOKEN", errors.New(`must be an app-level token starting with "xapp-"`)})
	}
	if c.APIURL != "" && !strings.HasPrefix(c.APIURL, "https://") && !strings.HasPrefix(c.APIURL, "http://") {
		errs = append(errs, &ConfigError{"SLACK_API_URL", fmt.Errorf("%q is not an http(s) URL", c.APIURL)})
	}
	for _, a := range c.Admins {
		if !reAdminID.MatchString(a) {
			errs = append(errs, &ConfigError{"SANDPIPER_ADMINS", fmt.Errorf("%q is not a Slack user ID (like U0123ABCD)", a)})
		}
	}
	return errors.Join(errs...)
}

// settingsStore keeps per-channel settings: in a file of the data
// directory ([store.FileSettings]), or in Redis, shared by the replicas
// ([store.RedisSettings]).
type settingsStore interface {
	Get(channel string) store.ChannelSettings
	// Set changes a channel's settings (store.SetDebug, store.SetState,
	// store.SetGrant); on an error nothing changed.
	Set(channel string, change func(*store.ChannelSettings), by string, now time.Time) error
}

// Bot is a running Slack bot. Create it with [New] and start it with
// [Bot.Run].
type Bot struct {
	cfg  Config
	log  *slog.Logger
	api  *slack.Client
	sock *socket.Client

	userID   string
	feedback FeedbackStore // the clicks on answers' feedback buttons

	// answers is the answer path: it answers the questions the intake
	// runs, and stops them.
	answers    *answer.Answerer
	seen       *cache.Cache // event ids and message keys already handled
	memory     *thread.Memory
	workspaces *thread.Workspaces
	settings   settingsStore
	admins     *store.Admins
	intake     intake // runs what the event loop accepts: on the pool, or shared in Redis
	pool       *dispatcher
	metrics    *metrics
	http       *http.Server
	httpLn     net.Listener
	// actions are the handlers of buttons, by action_id; background
	// runs them (and other work off the pool), waited for at shutdown.
	actions    *actionRegistry
	background sync.WaitGroup
	agentView  agentView

	connected atomic.Bool
	now       func() time.Time

	// schedules fires the scheduled reports kept in scheduleStore; nil
	// when they are turned off.
	schedules     *schedule.Scheduler
	scheduleStore schedule.Store
}

// New checks the configuration and both tokens (auth.test and
// apps.connections.open), loads the channel settings and returns a bot
// ready to [Bot.Run]. Its errors say what to fix.
func New(ctx context.Context, cfg Config) (*Bot, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Agent == nil {
		return nil, errors.New("bot: no Agent")
	}
	log := cfg.Logger
	api := slackapi.New(cfg.BotToken, cfg.AppToken, cfg.APIURL, slackapi.CallTimeout)
	auth, err := api.AuthTestContext(ctx)
	if err != nil {
		if !slackapi.Refused(err) {
			// Slack never answered: not the token's fault.
			return nil, &ConfigError{"SLACK_API_URL", fmt.Errorf("cannot reach Slack at %s: %w (check the network, a proxy, or SLACK_API_URL)", cfg.APIURL, err)}
		}
		return nil, &ConfigError{"SLACK_BOT_TOKEN", fmt.Errorf("auth.test failed: %w (is the token current and the app installed in the workspace?)", slackapi.Explain(err))}
	}
	m := newMetrics()
	sock := socket.New(api, socket.Config{
		PingTimeout: cfg.PingInterval,
		Logger:      log,
		OnAck:       func(d time.Duration) { m.ackSeconds.Observe(d.Seconds()) },
	})
	if err := sock.Open(ctx); err != nil {
		return nil, &ConfigError{"SLACK_APP_TOKEN", fmt.Errorf("apps.connections.open failed: %w (is Socket Mode enabled, and does the token have connections:write?)", slackapi.Explain(err))}
	}
	file, err := store.OpenSettings(cfg.DataDir)
	if err != nil {
		return nil, &ConfigError{"SANDPIPER_DATA_DIR", err}
	}
	var settings settingsStore = file
	var rs *replica.Store
	if cfg.RedisURL != "" {
		if rs, err = openShared(ctx, cfg); err != nil {
			return nil, err
		}
		defer func() {
			if rs != nil { // New failed after opening it
				rs.Close()
			}
		}()
		n, err := store.ImportSettings(ctx, file, rs)
		if err != nil {
			return nil, &ConfigError{replica.EnvURL, fmt.Errorf("importing %s into redis: %w", store.SettingsFile, err)}
		}
		if n > 0 {
			log.Info("channel settings copied into redis", "from", file.Path, "channels", n)
		}
		settings = store.NewRedisSettings(rs, log)
	}
	// An answer's runs start with the files placed for it, and keep those
	// they write within the disk the sandbox promises a program.
	ws, err := thread.NewWorkspaces(cfg.DataDir, cfg.ThreadTTL, cfg.Files, cfg.Files.RunSize+cfg.SandboxLimits.WithDefaults().DiskSize, log)
	if err != nil {
		return nil, &ConfigError{"SANDPIPER_DATA_DIR", err}
	}
	if rs != nil {
		ws.States = redisStates{rs, cfg.ThreadTTL} // a thread's next run may be on another replica
	}
	var fb FeedbackStore
	if rs != nil {
		fb = store.NewRedisFeedback(rs) // shared by the replicas
	}
	if fb == nil {
		if fb, err = store.OpenFeedbackFile(cfg.DataDir, store.FeedbackFileBytes); err != nil {
			return nil, &ConfigError{"SANDPIPER_DATA_DIR", err}
		}
	}
	b := &Bot{
		cfg:        cfg,
		log:        log,
		api:        api,
		sock:       sock,
		workspaces: ws,
		feedback:   fb,
		userID:     auth.UserID,
		seen:       cache.New(defaultDedupeTTL, 10*time.Minute),
		memory:     thread.NewMemory(api, auth.UserID, cfg.ThreadTTL),
		settings:   settings,
		admins:     store.NewAdmins(cfg.Admins, api),
		pool:       newDispatcher(cfg.Workers, defaultQueueLimit),
		metrics:    m,
		actions:    newActionRegistry(),
		now:        time.Now,
	}
	b.answers, err = answer.New(answer.Deps{
		Slack:      api,
		SlackFiles: slackapi.New(cfg.BotToken, cfg.AppToken, cfg.APIURL, slackapi.FileTransferTimeout),
		Team:       auth.TeamID,
		Agent:      cfg.Agent,
		Memory:     b.memory,
		Workspaces: ws,
		Settings:   settings,
		Stream: stream.New(stream.Config{Web: api, BotToken: cfg.BotToken, APIURL: cfg.APIURL, TeamID: auth.TeamID,
			AppendsPerMinute: cfg.StreamAppendsPerMinute, Off: cfg.NoStream, Logger: log}),
		Metrics: m.answer,
		Logger:  log,
		Limits: answer.Limits{Answer: cfg.AnswerTimeout, Status: cfg.StatusInterval,
			Files: cfg.Files, Sandbox: cfg.SandboxLimits, Refused: cfg.ThreadTTL},
		NumberCheck: !cfg.NumberCheckOff,
		Title:       b.titleThread,
		Sources:     b.runSources,
	})
	if err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	if !cfg.SchedulesOff {
		b.answers.AddFooter(repeatFooter)
	}
	b.answers.AddFooter(feedbackFooter) // last: the buttons end the answer
	b.intake = localIntake{b}
	if rs != nil {
		b.intake = newSharedIntake(b, rs)
		m.reg.MustRegister(replica.NewCollector(rs))
	}
	m.gauges(b.connected.Load, b.intake.busy)
	for _, c := range cfg.Metrics {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("bot: metrics: %w", err)
		}
	}
	b.actions.handle(render.StopActionID, b.onStopClick)
	b.agentView.checkScopes(auth.Header.Get("X-OAuth-Scopes"), log)
	if cfg.HTTPAddr != "-" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return nil, &ConfigError{"SANDPIPER_HTTP_ADDR", err}
		}
		b.httpLn = ln
		b.http = &http.Server{Handler: b.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
	}
	b.actions.handle(feedbackActionID, b.onFeedback)
	b.actions.handle(repeatActionID, b.onRepeatClick)
	b.actions.handle(scheduleToggleID, b.onScheduleClick)
	b.actions.handle(scheduleDeleteID, b.onScheduleClick)
	if !cfg.SchedulesOff {
		var st schedule.Store
		if rs != nil {
			st = store.NewRedisSchedules(rs)
		} else if st, err = store.OpenSchedules(cfg.DataDir); err != nil {
			return nil, &ConfigError{"SANDPIPER_DATA_DIR", err}
		}
		b.scheduleStore = st
		b.schedules = schedule.New(st, scheduleFirer{b}, cfg.Schedules, log)
	}
	log.Info("slack credentials ok", "team", auth.Team, "team_id", auth.TeamID, "bot_user", auth.UserID)
	if rs != nil {
		log.Info("sharing questions, settings and stops with other replicas through redis", "replica", rs.Replica(), "claim_after", cfg.RedisClaimAfter)
	}
	rs = nil // the bot's now
	return b, nil
}

// HTTPAddr returns the health and metrics server's address, or "".
func (b *Bot) HTTPAddr() string {
	if b.httpLn == nil {
		return ""
	}
	return b.httpLn.Addr().String()
}

// Run serves Slack until ctx is cancelled, then stops taking events,
// finishes the answers in flight (up to the shutdown timeout), closes the
// socket and returns nil. It returns an error if Slack refuses the
// connection for good.
func (b *Bot) Run(ctx context.Context) error {
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	b.intake.start(workCtx)

	if b.http != nil {
		go func() {
			if err := b.http.Serve(b.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.log.Error("health server stopped", "err", err)
			}
		}()
	}

	sweepCtx, stopSweep := context.WithCancel(ctx)
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		b.sweepWorkspaces(sweepCtx)
	}()
	defer func() { stopSweep(); <-sweepDone }()

	// The scheduler starts no fire once shutdown begins; a fire in
	// flight is an answer like the others, finished or cut short with
	// them (its time is not fired again).
	schedCtx, stopSched := context.WithCancel(workCtx)
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		if b.schedules != nil {
			b.schedules.Run(schedCtx)
		}
	}()
	defer func() { stopSched(); <-schedDone }()

	sockCtx, cancelSock := context.WithCancel(ctx)
	defer cancelSock()
	sockErr := make(chan error, 1)
	go func() { sockErr <- b.sock.Run(sockCtx) }()

	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-sockErr:
			sockErr <- err
			if err != nil && !errors.Is(err, context.Canceled) {
				runErr = fmt.Errorf("socket mode: %w", slackapi.Explain(err))
				b.log.Error("slack refused the connection", "err", runErr)
			}
			break loop
		case evt := <-b.sock.Events():
			b.handleEvent(evt)
		}
	}

	b.log.Info("shutting down: no new events; finishing answers in flight", "timeout", b.cfg.ShutdownTimeout)
	b.schedules.Stop()
	b.connected.Store(false)
	cancelSock()
	<-sockErr
	// Envelopes read before the socket closed are acked, so Slack will not
	// send them again: hand them to the pool rather than drop them.
	for drained := false; !drained; {
		select {
		case evt := <-b.sock.Events():
			b.handleEvent(evt)
		default:
			drained = true
		}
	}
	for _, evt := range b.sock.Leftover() {
		b.handleEvent(evt)
	}

	b.intake.finish(b.cfg.ShutdownTimeout, cancelWork)
	if b.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		b.http.Shutdown(sctx)
		cancel()
	}
	b.log.Info("stopped")
	return runErr
}

// sweepWorkspaces deletes expired thread workspaces now and then until
// ctx ends.
func (b *Bot) sweepWorkspaces(ctx context.Context) {
	t := time.NewTicker(min(defaultSweepInterval, b.cfg.ThreadTTL/4))
	defer t.Stop()
	for {
		b.workspaces.Sweep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
