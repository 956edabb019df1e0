package bot

import (
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/stream"
)

// feedbackModelChars bounds the model ID a feedback button's value
// carries.
const feedbackModelChars = 200

// Defaults for the configuration; zero fields of [Config] take them.
const (
	// DefaultStreamAppendsPerMinute is the chat.appendStream budget of
	// all answers together: Slack's Tier 4 (100+ a minute per workspace).
	DefaultStreamAppendsPerMinute = stream.DefaultAppendsPerMinute

	DefaultAPIURL          = "https://slack.com/api/"
	DefaultDataDir         = "./data"
	DefaultThreadTTL       = 24 * time.Hour
	DefaultShutdownTimeout = 30 * time.Second
	DefaultHTTPAddr        = "127.0.0.1:8080" // the image listens on :8080
	DefaultWorkers         = 8
	DefaultAnswerTimeout   = answer.DefaultTimeout
	// DefaultRedisClaimAfter is how long a question a replica took may go
	// without its heartbeat before another replica answers it.
	DefaultRedisClaimAfter = replica.DefaultClaimAfter
	DefaultNumberCheck     = true

	defaultQueueLimit    = 1000             // questions waiting for a worker
	defaultDedupeTTL     = time.Hour        // remembered event ids
	defaultSweepInterval = 10 * time.Minute // how often expired workspaces are deleted
)
