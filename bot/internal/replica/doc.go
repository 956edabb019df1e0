// Package replica is what sandpiper's replicas share through Redis: which
// events were seen, the queue of questions waiting for an answer, the order
// of each thread's questions, per-channel settings, feedback, and requests
// to stop an answer. Several bot processes (replicas) open a [Store] on the
// same Redis; nothing here is kept on disk.
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
// running answer (and where) from a finished one.
package replica
