package answer

import "time"

// Defaults of [Limits]; zero fields take them.
const (
	// DefaultTimeout bounds one answer, model and sandbox included.
	DefaultTimeout = 10 * time.Minute
	// DefaultStatusInterval is how often the "working" status is renewed:
	// Slack clears a status after 2 minutes.
	DefaultStatusInterval = 90 * time.Second

	defaultRefusedTTL = 24 * time.Hour // the threads' default TTL
)

// answerTablesMax bounds the tables one answer shows (one message each);
// the files are posted anyway.
const answerTablesMax = 5

// numberCheckChars bounds the number check's line under an answer.
const numberCheckChars = 600
