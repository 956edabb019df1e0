package replica

import "time"

// Defaults for [Config]; zero fields take them.
const (
	// DefaultClaimAfter is how long a question taken by a replica may go
	// without that replica's heartbeat before another replica takes it
	// over (SANDPIPER_REDIS_CLAIM_AFTER).
	DefaultClaimAfter = 60 * time.Second
	// DefaultDedupeTTL is how long an event id or message is remembered.
	DefaultDedupeTTL = time.Hour
	// DefaultWorkers is how many questions a replica answers at once.
	DefaultWorkers = 8
	// DefaultMaxQueued bounds the questions in the queue, across replicas,
	// waiting or being answered; past it Enqueue returns ErrQueueFull.
	DefaultMaxQueued = 1000
	// DefaultMaxBuffered bounds the questions a replica keeps in memory
	// for Submit while Redis is unreachable; past it Submit reports
	// ErrBacklog.
	DefaultMaxBuffered = 1000
	// DefaultPrefix starts every key and pub/sub channel name.
	DefaultPrefix = "sandpiper:"
)

// Bounds of the configuration.
const (
	// MinClaimAfter is the shortest claim-after accepted: heartbeats run
	// four times per claim-after and must fit a Redis round trip.
	MinClaimAfter = 100 * time.Millisecond
	// MaxAttempts is how many times a question may be started before the
	// bot should stop trying: a question whose answer kills a replica each
	// time comes back with an Attempt past it.
	MaxAttempts = 3
)

// Timing of the background work, derived from the claim-after where it
// must be.
const (
	// heartbeatsPerClaim is how many heartbeats a replica sends per
	// claim-after; three may be lost before its questions go stale.
	heartbeatsPerClaim = 4
	// claimGraceBeats is how many heartbeat intervals a replica waits
	// after Redis comes back before taking over stale questions, so that
	// live replicas refresh theirs first.
	claimGraceBeats = 2
	// pollInterval bounds how long a question waiting for its thread's
	// turn waits when the turn's notice is lost, and how often stop
	// requests are re-read for running answers.
	pollInterval = time.Second
	// readBlock bounds one blocking read of the queue; it is also how long
	// Shutdown may wait for the reader to notice.
	readBlock = time.Second
	// claimPages bounds the XAUTOCLAIM pages scanned per heartbeat.
	claimPages = 10
	// pruneInterval is how often dead replicas' consumers with nothing
	// pending are removed from the group; pruneIdle is how long such a
	// consumer must have been silent.
	pruneInterval = 10 * time.Minute
	pruneIdle     = time.Hour
	// healthInterval is how often Redis is pinged for readiness.
	healthInterval = time.Second
	// finishGrace bounds the retries of marking a question done (or
	// handing it back) once Shutdown has stopped waiting for answers.
	finishGrace = 5 * time.Second
	// Retry back-off for Redis calls that must succeed eventually.
	backoffMin = 50 * time.Millisecond
	backoffMax = 2 * time.Second
)

// Redis connection limits.
const (
	dialTimeout  = 3 * time.Second
	readTimeout  = 3 * time.Second
	writeTimeout = 3 * time.Second
	// openTimeout bounds the start-up check in Open.
	openTimeout = 10 * time.Second
	// minVersion is the oldest Redis with what the queue uses
	// (XAUTOCLAIM: 6.2).
	minMajor, minMinor = 6, 2
)

// Sizes kept in Redis.
const (
	// answerTTL is how long a question's state (queued, running, done) is
	// kept after its last change.
	answerTTL = 24 * time.Hour
	// orderTTL is how long a thread's order list lives after its last
	// question was queued; a list outliving its questions is harmless.
	orderTTL = 24 * time.Hour
	// feedbackMaxLen bounds the feedback records kept (the tallies are
	// kept apart and never trimmed).
	feedbackMaxLen = 100_000
)
