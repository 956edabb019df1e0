package bot

import (
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// Slack's limits (docs.slack.dev) and the bot's own budgets, in one place.
const (
	// slackSectionChars is the most text a section block may hold.
	slackSectionChars = 3000
	// slackMaxBlocks is the most blocks in one message.
	slackMaxBlocks = 50
	// messageTextBudget bounds the text of all blocks of one message;
	// Slack rejects payloads near 12,000 characters (msg_blocks_too_long).
	messageTextBudget = 10000
	// fallbackTextChars bounds a message's top-level (notification) text.
	fallbackTextChars = 3000

	// cardCodeChars and cardOutputChars bound the code and the output
	// shown in a tool card; the rest goes to an attached file.
	cardCodeChars   = 2600
	cardOutputChars = 2600
	// cardStderrChars bounds the extra stderr a debug card shows.
	cardStderrChars = 1200
	// answerMessageChars bounds the answer text per message; a longer
	// answer is posted in parts.
	answerMessageChars = 9000
	// answerMaxParts bounds the parts of one answer; past it the rest
	// is attached as a file.
	answerMaxParts = 4

	// metadataTextChars bounds the code and output kept in a tool card's
	// message metadata for rebuilding a thread's memory.
	metadataTextChars = 3000
	// historyChars is the thread history budget given to the model;
	// older turns are dropped first.
	historyChars = 40000
	// runOutputHistoryChars bounds one run's output kept in history.
	runOutputHistoryChars = 4000
	// threadRepliesMax bounds the messages kept to rebuild a thread (the
	// newest), threadRepliesPages the pages of 200 read to find them.
	threadRepliesMax   = 1000
	threadRepliesPages = 25
)

// Tables: a CSV a run writes is also shown as a data_table block. Slack's
// published limits disagree (one client library says 201 rows, Slack's
// reference and another 101); these are the strictest.
const (
	// slackTableRows is the most data rows a data_table holds, besides
	// its header row.
	slackTableRows = 100
	// slackTableColumns is the most columns of a data_table.
	slackTableColumns = 20
	// tableChars bounds the text of a table's cells: Slack allows 10,000
	// characters across a table's cells, and across all tables of a
	// message; the margin is for how Slack counts numbers, which it does
	// not say.
	tableChars = 9000
	// tableCellChars bounds one cell's text; longer text is cut.
	tableCellChars = 200
	// tablePageSize is how many rows a table shows a page (Slack: 1–100).
	tablePageSize = 10
	// tableReadBytes bounds the bytes of a CSV parsed for its table; the
	// records past it are counted, not read.
	tableReadBytes = 1 << 20
	// answerTablesMax bounds the tables one answer shows (one message
	// each); the files are posted anyway.
	answerTablesMax = 5
)

// numberCheckChars bounds the number check's line under an answer.
const numberCheckChars = 600

// Feedback: the clicks on answers' feedback buttons.
const (
	// feedbackFileName is the file in the data directory that keeps
	// them, one JSON line a click.
	feedbackFileName = "feedback.jsonl"
	// feedbackFileBytes is the size past which the file is rotated to
	// feedbackFileName+".1", replacing the one before: about 50,000
	// clicks a file.
	feedbackFileBytes = 10 << 20
	// feedbackModelChars bounds the model ID a button's value carries.
	feedbackModelChars = 200
)

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
	defaultAdminTTL       = 10 * time.Minute // cached users.info answers
	defaultForeignTTL     = 10 * time.Minute // threads known not to be ours
	defaultStatusInterval = 90 * time.Second // Slack clears a status after 2 min
	defaultSweepInterval  = 10 * time.Minute // how often expired workspaces are deleted
)

// Bounds of what the bot shows of files.
const (
	// altTextChars bounds an image's alt text (Slack allows 1,000).
	altTextChars = 1000
	// cardFileNotes bounds the produced files a card lists one by one.
	cardFileNotes = 8
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
	// answer goes on in a new message, up to answerMaxParts.
	streamMessageChars = 10000
	// streamRateRetries bounds the 429s one streaming call takes before
	// its text is given up on (and the answer posted the old way).
	streamRateRetries = 8
	// streamCloseTimeout bounds the wait for a message's last text when it
	// is closed (a tool call starts, the answer ends).
	streamCloseTimeout = 60 * time.Second
)
