package bot

import (
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// answerTablesMax bounds the tables one answer shows (one message each);
// the files are posted anyway.
const answerTablesMax = 5

// feedbackModelChars bounds the model ID a feedback button's value
// carries.
const feedbackModelChars = 200

// numberCheckChars bounds the number check's line under an answer.
const numberCheckChars = 600

// Defaults for the configuration; zero fields of [Config] take them.
const (
	DefaultAPIURL          = "https://slack.com/api/"
	DefaultDataDir         = "./data"
	DefaultThreadTTL       = 24 * time.Hour
	DefaultShutdownTimeout = 30 * time.Second
	DefaultHTTPAddr        = "127.0.0.1:8080" // the image listens on :8080
	DefaultWorkers         = 8
	DefaultAnswerTimeout   = 10 * time.Minute
	// DefaultRedisClaimAfter is how long a question a replica took may go
	// without its heartbeat before another replica answers it.
	DefaultRedisClaimAfter = replica.DefaultClaimAfter
	DefaultNumberCheck     = true

	defaultQueueLimit     = 1000             // questions waiting for a worker
	defaultDedupeTTL      = time.Hour        // remembered event ids
	defaultStatusInterval = 90 * time.Second // Slack clears a status after 2 min
	defaultSweepInterval  = 10 * time.Minute // how often expired workspaces are deleted
)

// Streaming answers (chat.startStream, appendStream, stopStream).
const (
	// DefaultStreamAppendsPerMinute is the chat.appendStream budget of
	// all answers together: Slack's Tier 4 (100+ a minute per workspace).
	DefaultStreamAppendsPerMinute = 100
	// streamStartsPerMinute and streamStopsPerMinute budget the Tier 2
	// methods (20+ a minute), with bursts: an answer starts and stops a
	// message for each tool call's commentary and for its answer.
	// streamAppendBurst is how many appends may go at once beyond the
	// budget's pace, so that one answer's first appends do not wait.
	streamAppendBurst     = 3
	streamStartsPerMinute = 20
	streamStartBurst      = 20
	streamStopsPerMinute  = 20
	streamStopBurst       = 20
	// streamAppendInterval is the least time between two appends to one
	// message; text written meanwhile goes in the next append.
	streamAppendInterval = 500 * time.Millisecond
	// streamMessageChars bounds the text of one streamed message (Slack:
	// 12,000 characters of markdown a message, 12,000 a call); a longer
	// answer goes on in a new message, up to render.AnswerMaxParts.
	streamMessageChars = 10000
	// streamRateRetries bounds the 429s one streaming call takes before
	// its text is given up on (and the answer posted the old way).
	streamRateRetries = 8
	// streamCloseTimeout bounds the wait for a message's last text when it
	// is closed (a tool call starts, the answer ends).
	streamCloseTimeout = 60 * time.Second
)
