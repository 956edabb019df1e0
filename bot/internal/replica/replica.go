package replica

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// EnvURL is the environment variable that holds the Redis URL; errors
// about the URL name it.
const EnvURL = "SANDPIPER_REDIS_URL"

// Config configures a [Store]. Zero fields take the defaults in limits.go.
type Config struct {
	// URL is redis://[user:password@]host[:port][/db], or rediss:// for
	// TLS (SANDPIPER_REDIS_URL).
	URL string
	// Replica names this process among the replicas: its consumer in the
	// group and the owner of its leases. It must be unique among running
	// replicas; the default is the host name and a random suffix, new for
	// each process. Letters, digits and . _ : - only.
	Replica string
	// Prefix starts every key and channel name (default "sandpiper:"), so
	// that several bots can share one Redis database.
	Prefix string
	// ClaimAfter is how long a held question may go without its replica's
	// heartbeat before another replica takes it over (default 60s).
	ClaimAfter time.Duration
	// DedupeTTL is how long a seen event or message is remembered
	// (default 1h).
	DedupeTTL time.Duration
	// Workers bounds the questions this replica answers at once.
	Workers int
	// MaxQueued bounds the questions in the queue (waiting or being
	// answered, across replicas).
	MaxQueued int
	// MaxBuffered bounds the questions Submit keeps in memory while Redis
	// is unreachable.
	MaxBuffered int
	Logger      *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Replica == "" {
		host, _ := os.Hostname()
		host = reReplicaBad.ReplaceAllString(host, "-")
		if host == "" {
			host = "sandpiper"
		}
		c.Replica = host + "-" + randomHex(3)
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.ClaimAfter <= 0 {
		c.ClaimAfter = DefaultClaimAfter
	}
	if c.DedupeTTL <= 0 {
		c.DedupeTTL = DefaultDedupeTTL
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = DefaultMaxQueued
	}
	if c.MaxBuffered <= 0 {
		c.MaxBuffered = DefaultMaxBuffered
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

var (
	reReplica    = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,100}$`)
	reReplicaBad = regexp.MustCompile(`[^A-Za-z0-9._:-]+`)
)

func (c *Config) validate() error {
	if !reReplica.MatchString(c.Replica) {
		return fmt.Errorf("replica: replica name %q: use 1 to 100 letters, digits and . _ : -", c.Replica)
	}
	if c.ClaimAfter < MinClaimAfter {
		return fmt.Errorf("replica: claim-after %s is below the minimum %s", c.ClaimAfter, MinClaimAfter)
	}
	return nil
}

func (c *Config) heartbeat() time.Duration { return c.ClaimAfter / heartbeatsPerClaim }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// URLError reports a [EnvURL] that cannot be used: it does not parse, or
// the Redis it names cannot be reached, refuses the credentials, or lacks
// what the queue needs. Its text never holds the password.
type URLError struct {
	URL string // the URL with its password masked; empty if it did not parse
	Err error
}

func (e *URLError) Error() string {
	if e.URL == "" {
		return EnvURL + ": " + e.Err.Error()
	}
	return EnvURL + " (" + e.URL + "): " + e.Err.Error()
}

func (e *URLError) Unwrap() error { return e.Err }

// ParseURL checks a Redis URL and returns the client options for it. The
// scheme is redis or rediss (TLS); the path, if any, is a database number.
// Its errors are [*URLError]s and never hold the password.
func ParseURL(raw string) (*redis.Options, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, &URLError{Err: errors.New("not set")}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole input, password included, and an
		// escape error quotes a piece of it: keep neither.
		msg := "not a URL"
		var ue *url.Error
		var esc url.EscapeError
		switch {
		case errors.As(err, &esc):
			msg += ": a bad %-escape (special characters in a password must be percent-encoded)"
		case errors.As(err, &ue):
			msg += ": " + ue.Err.Error()
		}
		return nil, &URLError{Err: errors.New(msg)}
	}
	masked := u.Redacted()
	bad := func(format string, args ...any) (*redis.Options, error) {
		return nil, &URLError{URL: masked, Err: fmt.Errorf(format, args...)}
	}
	switch u.Scheme {
	case "redis", "rediss":
	default:
		return bad("scheme %q: use redis:// or rediss:// (TLS)", u.Scheme)
	}
	if u.Hostname() == "" {
		return bad("no host: use %s://[user:password@]host:port/db", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("port %q is not a port number", p)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 || strings.Contains(db, "/") {
			return bad("path %q: the path, if any, is a database number such as /0", u.Path)
		}
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		// go-redis names the option or path at fault, not the password.
		return bad("%v", strings.TrimPrefix(err.Error(), "redis: "))
	}
	return opts, nil
}

// Store is a replica's handle on the state replicas share. Its methods are
// safe for concurrent use. Create it with [Open]; end it with
// [Store.Close] (after [Store.Shutdown] if it served).
type Store struct {
	cfg    Config
	log    *slog.Logger
	rdb    *redis.Client
	k      keys
	masked string // the URL, password masked
	nonce  string // this process, in start tokens
	tokens atomic.Uint64

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	bg     sync.WaitGroup

	health struct {
		sync.Mutex
		err   error
		since time.Time
	}

	// Counters since Open.
	duplicates, claimed, handedBack, lost atomic.Int64

	outbox *outbox

	mu      sync.Mutex
	serving *consumer
	closed  bool
}

// Open connects to the Redis in cfg.URL, checks that it can hold the
// queue (PING, a version with Streams and XAUTOCLAIM, scripting), and
// starts the readiness check and the Submit buffer. Its errors are
// [*URLError]s naming [EnvURL]; warnings about the Redis (no persistence,
// an eviction policy that may drop the queue) are logged.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(strings.TrimSpace(cfg.URL))
	masked := u.Redacted()
	opts.ClientName = "sandpiper:" + cfg.Replica
	if opts.DialTimeout == 0 {
		opts.DialTimeout = dialTimeout
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = readTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = writeTimeout
	}
	// One dial per try: the store retries on its own, and a refused
	// connection should show as such, not as a timeout after five.
	opts.DialerRetries = 1
	// Maintenance notifications are for Redis Enterprise; on other servers
	// the handshake only fails.
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietLibrary.Do(func() { redis.SetLogger(discard{}) })
	rdb := redis.NewClient(opts)

	cctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	s := &Store{cfg: cfg, log: cfg.Logger.With("replica", cfg.Replica), rdb: rdb, k: keys{cfg.Prefix}, masked: masked, nonce: randomHex(4)}
	info, err := s.Check(cctx)
	if err != nil {
		rdb.Close()
		return nil, &URLError{URL: masked, Err: err}
	}
	for _, w := range info.Warnings {
		s.log.Warn("redis: "+w, "redis", masked)
	}
	s.log.Info("redis ok", "redis", masked, "version", info.Version)

	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.outbox = newOutbox(s, cfg.MaxBuffered)
	s.bg.Go(func() { s.monitor(s.ctx) })
	s.bg.Go(func() { s.outbox.run(s.ctx) })
	return s, nil
}

// go-redis logs each failed dial to stderr on its own. The store reports
// Redis's health itself (Ready, and one log line per change), so the
// library's lines are dropped; the setting is the library's, global.
var quietLibrary sync.Once

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// Replica returns this replica's name.
func (s *Store) Replica() string { return s.cfg.Replica }

// Close stops the background work, fails the questions Submit still holds
// with [ErrClosed], and closes the connections. Call [Store.Shutdown]
// first if the store served.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.serving
	s.mu.Unlock()
	if c != nil {
		c.abort() // returns when Serve has
	}
	s.cancel()
	s.bg.Wait()
	return s.rdb.Close()
}

// Info is what [Store.Check] found.
type Info struct {
	Addr    string // host:port
	DB      int
	Version string // redis_version
	// Warnings are settings that work but that an operator should know
	// about: no persistence, or an eviction policy that may drop queued
	// questions.
	Warnings []string
}

// Check checks the Redis for doctor and for Open: it answers PING, its
// version has Streams and XAUTOCLAIM, and this user may run scripts and
// stream commands. It changes nothing.
func (s *Store) Check(ctx context.Context) (Info, error) {
	info := Info{Addr: s.rdb.Options().Addr, DB: s.rdb.Options().DB}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return info, fmt.Errorf("Redis refused the connection: %w (check the user and password)", err)
		}
		return info, fmt.Errorf("cannot reach Redis: %w", err)
	}
	// INFO without a section (Redis 6 takes at most one) includes server,
	// memory and persistence.
	text, err := s.rdb.Info(ctx).Result()
	if err != nil {
		return info, fmt.Errorf("INFO: %w", err)
	}
	fields := parseInfo(text)
	info.Version = fields["redis_version"]
	if !versionAtLeast(info.Version, minMajor, minMinor) {
		return info, fmt.Errorf("Redis %s is too old: the queue needs Redis %d.%d or later (Streams with XAUTOCLAIM)", cmpStr(info.Version, "of unknown version"), minMajor, minMinor)
	}
	// A stream command on a key that does not exist: NOGROUP means the
	// command exists and this user may run it.
	probe := s.k.prefix + "probe"
	err = s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: probe, Group: "probe", Consumer: "probe", Start: "0-0", Count: 1}).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOGROUP") {
		return info, fmt.Errorf("XAUTOCLAIM (Streams) does not work here: %v", err)
	}
	if err := s.rdb.Eval(ctx, "return 1", nil).Err(); err != nil {
		return info, fmt.Errorf("scripts (EVAL) do not work here: %w", err)
	}
	if p := fields["maxmemory_policy"]; p != "" && p != "noeviction" {
		info.Warnings = append(info.Warnings, fmt.Sprintf("maxmemory-policy is %s: under memory pressure Redis may drop queued questions or leases; set it to noeviction", p))
	}
	if fields["aof_enabled"] == "0" {
		info.Warnings = append(info.Warnings, "append-only file is off: a Redis restart may lose queued questions (set appendonly yes)")
	}
	return info, nil
}

func cmpStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// parseInfo reads INFO's "field:value" lines.
func parseInfo(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// versionAtLeast reports whether version "X.Y.Z" is at least major.minor.
func versionAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	x, err1 := strconv.Atoi(parts[0])
	y, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return x > major || (x == major && y >= minor)
}

// Ready returns nil while Redis answers, or an error saying since when
// and why it does not; /readyz reports it. Redis is pinged every second.
func (s *Store) Ready() error {
	s.health.Lock()
	defer s.health.Unlock()
	if s.health.err == nil {
		return nil
	}
	return fmt.Errorf("redis unreachable since %s: %w", s.health.since.Format(time.RFC3339), s.health.err)
}

func (s *Store) monitor(ctx context.Context) {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, healthInterval)
		err := s.rdb.Ping(pctx).Err()
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.setHealth(err)
	}
}

func (s *Store) setHealth(err error) {
	s.health.Lock()
	defer s.health.Unlock()
	switch {
	case err != nil && s.health.err == nil:
		s.health.err, s.health.since = err, time.Now()
		s.log.Warn("redis unreachable: not ready until it answers again; questions wait in memory", "redis", s.masked, "err", err)
	case err == nil && s.health.err != nil:
		s.log.Info("redis reachable again", "redis", s.masked, "after", time.Since(s.health.since).Round(time.Millisecond))
		s.health.err = nil
	case err != nil:
		s.health.err = err // the latest reason
	}
}

// keys names what the store keeps in Redis.
type keys struct{ prefix string }

const group = "replicas" // the consumer group

func (k keys) stream() string              { return k.prefix + "questions" }
func (k keys) order(thread string) string  { return k.prefix + "order:" + thread }
func (k keys) lease(thread string) string  { return k.prefix + "lease:" + thread }
func (k keys) started() string             { return k.prefix + "started" }
func (k keys) seen(kind, id string) string { return k.prefix + "seen:" + kind + ":" + id }
func (k keys) answer(id string) string     { return k.prefix + "answer:" + id }
func (k keys) stop(id string) string       { return k.prefix + "stop:" + id }
func (k keys) channels() string            { return k.prefix + "channels" }
func (k keys) feedback() string            { return k.prefix + "feedback" }
func (k keys) tally(channel string) string { return k.prefix + "feedback:tally:" + channel }
func (k keys) mark(thread string) string   { return k.prefix + "mark:" + thread }
func (k keys) stops() string               { return k.prefix + "stops" } // pub/sub
func (k keys) turns() string               { return k.prefix + "turns" } // pub/sub
