// Package replica is what sandpiper's replicas share through Redis: which
// events were seen, the queue of questions waiting for an answer, the order
// of each thread's questions, per-channel settings, feedback, and requests
// to stop an answer. Several bot processes (replicas) open a [Store] on the
// same Redis; nothing here is kept on disk.
//
// One bot process is a single point of failure: a deploy, a crash or a
// lost host drops the questions it had acknowledged, and Slack does not
// send an acknowledged event again. With SANDPIPER_REDIS_URL set, two or
// more replicas of the same app run against one Redis (6.2 or later; Slack
// allows an app up to 10 Socket Mode connections and gives each event to
// one of them at random, a retry possibly to another). Each replica acks
// its envelopes as before, drops what it has seen itself, and queues the
// rest here.
//
// What stays per replica: the thread workspaces
// (SANDPIPER_DATA_DIR/threads, rebuilt from Slack when a question lands on
// a replica without them), the thread memory, slash commands (answered by
// the replica that received them), and the sandbox. A thread's Python
// state is shared: it is kept in Redis (state.go: 8 MiB chunks behind a
// record swapped in one step, for the thread's TTL from its last use), so
// that a follow-up answered by another replica finds the variables the
// last run left.
//
// # Dedupe
//
// Slack may deliver an event to any of a bot's connections, and a retry to
// another. [Store.SeenEvent] and [Store.SeenMessage] record an event id or
// a message (channel and ts) with SET NX EX: the first replica wins, the
// others are told it is a duplicate. [Store.Enqueue] does the same for a
// question's keys and queues it in one atomic step, so that a failure
// leaves the event neither marked seen nor queued, and a second try of
// one that was queued (a lost reply) is a harmless duplicate.
//
// # The queue
//
// Questions go to one Redis Stream, read by every replica through one
// consumer group ([Store.Serve]); the group's pending entries list is
// what each replica has taken and not finished. A finished question is
// acked and deleted (XACK, XDEL), so the stream holds only unfinished
// work, and its length is the queue's. A replica reads only when it has a
// free worker, so questions go to replicas that can answer them.
//
// # A thread's order
//
// Each thread has an order list (its unfinished entry ids, in queue order,
// appended in the same step as the entry) and a lease (the replica
// answering it, SET PX, renewed by the heartbeat, released by a
// compare-and-delete). A replica may start an entry only when it is the
// first of its thread's order list and no other replica holds the lease;
// otherwise it holds the entry without using a worker, and tries again
// when the thread's answer is finished (a pub/sub notice from the replica
// that finished it, and a poll every second in case the notice is lost).
// So a thread's questions are answered one at a time, in order, by
// whichever replicas read them, while different threads go in parallel.
// If the turn comes while its replica has no free worker, the entry is
// handed on at once (see below) to a replica that has one.
//
// Two messages posted in the same thread within a millisecond or two,
// delivered to different replicas, may swap. A replica re-reads a thread
// from Slack when another replica has answered in it since it last did
// (the thread marks), so follow-ups keep their history.
//
// # Heartbeat and takeover
//
// Every ClaimAfter/4 a replica re-claims its own pending entries (XCLAIM
// JUSTID: their idle time starts again, their delivery count does not
// move) and renews its leases, in one script. Only a replica that stopped
// (killed, crashed, or cut off from Redis) lets its entries go idle: after
// [Config.ClaimAfter] another replica takes them over (XAUTOCLAIM) and
// answers them. [Delivery.Attempt] counts the starts of a question, so the
// new replica knows a previous attempt may have left cards in the thread.
// After Redis comes back from an outage, and after start-up, a replica
// takes nothing over for two heartbeats, so that live replicas refresh
// theirs first. A replica whose heartbeat finds one of its entries taken
// over (it was cut off longer than the claim-after) cancels that answer
// with [ErrLost].
//
// The replica that takes a question over answers it once, with a note that
// it picked the question up again; the dead replica's tool cards still
// showing "running" are marked Interrupted. Its 👀 finds the dead
// replica's already there (Slack's already_reacted), which is no failure:
// no Web API call of a takeover fails. A question that stopped a
// replica [MaxAttempts] (three) times is given up, with a word in the
// thread.
//
// # Shutdown
//
// [Store.Shutdown] stops reading, hands back at once the entries not
// started, and lets the answers in flight finish; those still running
// when its context ends are cancelled with [ErrShutdown] and handed back
// if their handler returns an error. Handing back appends a copy of the
// entry to the stream (delivered at once to another replica's read) and
// puts the copy's id in the original's place on the thread's order list,
// then acks and deletes the original: the thread's order holds, and
// nothing waits for the claim-after. A replica that dies without Shutdown
// loses nothing either: its entries are taken over after the claim-after.
//
// # Redis unreachable
//
// Calls return errors; nothing panics. [Store.Ready] reports the outage
// (Redis is pinged every second) for /readyz. [Store.Submit] keeps
// questions in a bounded buffer and retries them in order. Serve backs
// off and resumes; answers in flight go on, and marking them done is
// retried. If Redis comes back empty, the consumer group is re-created
// from the stream's start, and the lost state is lost: the questions that
// were queued and not held by a replica, the dedupe keys (a retry of an
// event from before the loss would be answered again, unless it reaches
// the replica that saw it, whose local dedupe still holds), settings and
// feedback. Run Redis with the append-only file on to avoid that.
//
// # Stop
//
// [Store.PublishStop] reaches the replica answering through pub/sub: its
// handler's context is cancelled with a *[StopError]. A stop for a
// question is also kept in Redis, for a question not yet started and for
// a missed message (re-read every second). [Store.AnswerState] tells a
// running answer (and where) from a finished one. A Stop click or
// Slack's own Stop that reaches another replica than the one answering is
// checked there (still running? the asker or an admin?) and reaches the
// replica answering this way (measured in the tests: 6–28 ms from the
// request to the stopped answer).
//
// # Settings and feedback
//
// debug on|off and state on|off are kept in Redis and hold on every
// replica at once (a change is read and written in one WATCH transaction,
// so two admins changing two settings at once both win); the
// first replica to start copies channels.json into Redis (only channels
// Redis does not have). Feedback clicks are kept in Redis (the latest
// 100,000 records, and a per-channel tally that /sandpiper feedback reads
// on any replica) instead of feedback.jsonl.
//
// # Redis
//
// A single Redis server; Redis Cluster is not supported (the queue's
// scripts touch several keys). Keys and channel names start with
// [DefaultPrefix] ("sandpiper:"). The questions' text is stored in Redis
// while they wait (and every message posted in a thread the bot may be in,
// until a replica has checked it). Without the append-only file, a Redis
// that restarts empty loses the questions queued and not yet taken, the
// dedupe keys, the settings and the thread marks (see "Redis unreachable"
// above); with a maxmemory-policy other than noeviction it may evict them
// under memory pressure. sandpiper doctor and the start-up log warn about
// both. While Redis is away, questions wait in memory (up to
// [DefaultMaxBuffered], then the asker is told to ask again) and /readyz
// answers 503 with the reason.
//
// # Metrics
//
// On each replica: sandpiper_redis_up, sandpiper_queue_questions and
// sandpiper_queue_pending (the queue's, the same on every replica:
// aggregate with max), sandpiper_queue_running and sandpiper_queue_waiting
// (this replica's), sandpiper_queue_claimed_total (questions taken over
// from dead replicas), sandpiper_queue_handed_back_total,
// sandpiper_queue_lost_total (taken over from this replica after it was
// cut off from Redis), and sandpiper_duplicate_events_total.
//
// # Measured
//
// On two shared cores against the in-repo fake Slack (go test ./bot -bench
// Replicas): the queue adds 0.4–1.5 ms per question (mention to answer,
// about 3 ms in all with an instant model); with answers of 400 ms of work
// and 8 workers each, 2 replicas answer 33–36 questions/s where one
// answers 19.
//
// # Failure cases not covered
//
// A replica cut off from Redis (but not from Slack and the model) for
// longer than the claim-after has its question taken over and may answer
// it as well: two answers. A replica whose Redis is away for more than
// ~5 s while it shuts down may leave its cut-short answer to be taken over
// (answered twice, the first one cut short). A replica killed while
// streaming an answer leaves that partial message as it was; the replica
// that takes the question over answers it again after its note (not
// tested).
package replica
