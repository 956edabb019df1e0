package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// Replicas: with Config.RedisURL set, several bot processes share one
// Redis (package replica). Each acks its envelopes as before, drops what
// it has seen itself, and queues the rest in Redis, where the event's id
// and its message's channel and ts are recorded in the same step: a retry
// delivered to another replica is dropped there. Every replica answers
// from the queue, a thread's questions one at a time and in order;
// questions a replica took and did not finish are answered by another.

// Bounds of the calls to Redis made outside a question's answer.
const (
	// redisCallTimeout bounds a call to Redis made for a thread before
	// its answer starts.
	redisCallTimeout = 2 * time.Second
	// statsTimeout bounds reading the queue's figures for /metrics.
	statsTimeout = time.Second
)

// openShared opens the store replicas share. Its errors are
// [*ConfigError]s naming SANDPIPER_REDIS_URL.
func openShared(ctx context.Context, cfg Config) (*replica.Store, error) {
	st, err := replica.Open(ctx, replica.Config{
		URL:        cfg.RedisURL,
		Replica:    cfg.Replica,
		ClaimAfter: cfg.RedisClaimAfter,
		Workers:    cfg.Workers,
		MaxQueued:  sharedQueueLimit,
		Logger:     cfg.Logger,
	})
	if err != nil {
		if ue, ok := errors.AsType[*replica.URLError](err); ok {
			if ue.URL != "" {
				return nil, &ConfigError{replica.EnvURL, fmt.Errorf("%s: %w", ue.URL, ue.Err)}
			}
			return nil, &ConfigError{replica.EnvURL, ue.Err}
		}
		return nil, &ConfigError{"SANDPIPER_REPLICA", err}
	}
	return st, nil
}

// redisStates keeps the threads' Python states in Redis, for the thread's
// TTL from their last use, where every replica reads them.
type redisStates struct {
	store *replica.Store
	ttl   time.Duration
}

func (r redisStates) State(ctx context.Context, thread string, max int64) ([]byte, error) {
	return r.store.State(ctx, thread, max, r.ttl)
}

func (r redisStates) PutState(ctx context.Context, thread string, state []byte) error {
	return r.store.PutState(ctx, thread, state, r.ttl)
}

func (r redisStates) SetStateAside(ctx context.Context, thread string) error {
	return r.store.SetStateAside(ctx, thread)
}

// sharedQueueLimit bounds the questions in the shared queue, across
// replicas (a variable for the tests).
var sharedQueueLimit = defaultQueueLimit

// sharedIntake queues tasks in Redis and answers them from there.
type sharedIntake struct {
	b      *Bot
	store  *replica.Store
	served chan struct{} // closed when Serve has returned
	// marks are the threads' marks this replica set when it last
	// finished a question there ([replica.Store.MarkThread]).
	marks *cache.Cache
}

func newSharedIntake(b *Bot, st *replica.Store) *sharedIntake {
	return &sharedIntake{b: b, store: st, served: make(chan struct{}), marks: cache.New(b.cfg.ThreadTTL, b.cfg.ThreadTTL/4+time.Minute)}
}

func (s *sharedIntake) start(ctx context.Context) {
	s.b.pool.start(ctx) // slash commands
	go func() {
		defer close(s.served)
		if err := s.store.Serve(ctx, s.handle); err != nil {
			s.b.log.Error("the shared queue stopped", "err", err)
		}
	}()
}

// queuedTask is a task as it waits in Redis: the message with its files
// whole (thread.FileRef keeps only some fields in JSON).
type queuedTask struct {
	Route   route       `json:"route"`
	Message message     `json:"message"`
	Files   []queuedRef `json:"files,omitempty"`
}

type queuedRef struct {
	ID, Name, Mimetype, Filetype, Mode, URL, User string
	Size                                          int64
	External                                      bool
}

func encodeTask(t task) ([]byte, error) {
	q := queuedTask{Route: t.Route, Message: t.Message}
	q.Message.Files = nil
	for _, f := range t.Message.Files {
		q.Files = append(q.Files, queuedRef{f.ID, f.Name, f.Mimetype, f.Filetype, f.Mode, f.URL, f.User, f.Size, f.External})
	}
	return json.Marshal(q)
}

func decodeTask(payload []byte) (task, error) {
	var q queuedTask
	if err := json.Unmarshal(payload, &q); err != nil {
		return task{}, err
	}
	t := task{Route: q.Route, Message: q.Message}
	for _, f := range q.Files {
		t.Message.Files = append(t.Message.Files, thread.FileRef{ID: f.ID, Name: f.Name, Size: f.Size, Mimetype: f.Mimetype, Filetype: f.Filetype, Mode: f.Mode, External: f.External, URL: f.URL, User: f.User})
	}
	return t, nil
}

// questionID names a message's task for stops and answer states.
func questionID(m message) string { return m.Channel + "/" + m.TS }

func (s *sharedIntake) submit(t task) {
	b := s.b
	payload, err := encodeTask(t)
	if err != nil {
		b.log.Error("task not queued: cannot encode it", "err", err)
		b.busyNotice(t.Message, unavailableText)
		return
	}
	m := t.Message
	s.store.Submit(replica.Question{
		ID: questionID(m), Thread: t.thread(), Payload: payload,
		EventID: t.EventID, Channel: m.Channel, TS: m.TS,
	}, func(err error) {
		switch {
		case err == nil:
			return
		case errors.Is(err, replica.ErrDuplicate):
			b.metrics.duplicates.Inc()
			b.log.Debug("duplicate event dropped: another replica has it", "event_id", t.EventID, "channel", m.Channel, "ts", m.TS)
			return
		}
		b.log.Warn("message not queued", "channel", m.Channel, "ts", m.TS, "err", err)
		if t.Route == followUp && !b.memory.Knows(m.Channel, m.ThreadTS) {
			return // maybe people talking among themselves: say nothing
		}
		switch {
		case errors.Is(err, replica.ErrQueueFull):
			b.busyNotice(m, busyText)
		case errors.Is(err, replica.ErrBacklog):
			b.busyNotice(m, ":hourglass: I can't reach my queue right now, and too many questions are waiting for it. Please ask again in a few minutes.")
		default:
			b.busyNotice(m, unavailableText)
		}
	})
}

// unavailableText is the notice for a question the queue refused.
const unavailableText = ":warning: I couldn't take your question: my queue is unavailable. Please ask again in a minute."

func (s *sharedIntake) finish(timeout time.Duration, cancel context.CancelFunc) {
	b := s.b
	ctx, stop := context.WithTimeout(context.Background(), timeout)
	defer stop()
	// Shutdown lets the answers in flight finish until ctx ends, then cuts
	// them short and hands them back; the slash commands run on the pool.
	if err := s.store.Shutdown(ctx); err != nil {
		b.log.Warn("shutdown: the shared queue did not take everything", "err", err)
	}
	<-s.served
	waitOrCancel(b.waitLocal, time.Until(deadlineOf(ctx)), cancel, b.log)
	if err := s.store.Close(); err != nil {
		b.log.Debug("closing redis", "err", err)
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func (s *sharedIntake) busy() int {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, _ := s.store.Stats(ctx) // the local figures hold on an error
	return st.Running + st.Waiting + s.b.pool.busy()
}

func (s *sharedIntake) ready() error { return s.store.Ready() }

// handle answers a question from the queue.
func (s *sharedIntake) handle(ctx context.Context, d *replica.Delivery) error {
	b := s.b
	t, err := decodeTask(d.Payload)
	if err != nil {
		b.log.Error("unreadable question in the queue dropped", "entry", d.Entry, "err", err)
		return nil
	}
	m := t.Message
	log := b.log.With("channel", m.Channel, "thread", m.ThreadTS, "ts", m.TS, "attempt", d.Attempt)
	if d.Attempt > 1 {
		log.Info("question picked up again", "previous_replica", d.PreviousReplica, "reclaimed", d.Reclaimed)
		leftovers := b.markLeftovers(ctx, m)
		switch {
		case d.Attempt > replica.MaxAttempts:
			log.Error("question given up: the bot stopped each time it answered it", "attempts", d.Attempt-1)
			b.notice(ctx, m, fmt.Sprintf(":warning: I started on this %d times and each time the bot answering it stopped, so I gave up. Please try a different question; the operator can find why in the logs.", d.Attempt-1))
			return nil
		case leftovers > 0 || t.Route != followUp:
			b.notice(ctx, m, ":leftwards_arrow_with_hook: The bot answering this stopped before it finished; I picked the question up again.")
		}
	}
	s.freshen(ctx, m.Channel, m.ThreadTS)
	b.perform(ctx, t)
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), replica.ErrShutdown) {
		return context.Cause(ctx) // handed back: another replica answers
	}
	return nil
}

// freshen marks t's thread in Redis as this replica's and, when another
// replica had marked it since this one last did (it answered there, or
// saw a file posted there), forgets what this replica remembers of the
// thread: it is read again from Slack. Marking and comparing are one step,
// so a mark set meanwhile is never missed. It is called before an answer
// starts (a thread's answers run one at a time, in order, so the next
// answer elsewhere starts after this one's messages are in Slack).
func (s *sharedIntake) freshen(ctx context.Context, channel, threadTS string) {
	thread := thread.Key(channel, threadTS)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisCallTimeout)
	defer cancel()
	mark, prev, err := s.store.MarkThread(ctx, thread, s.b.cfg.ThreadTTL)
	ours, _ := s.marks.Get(thread)
	if err != nil || ours == nil || prev != ours.(string) {
		s.b.memory.Forget(channel, threadTS)
	}
	if err != nil {
		s.marks.Delete(thread)
		return
	}
	s.marks.SetDefault(thread, mark)
}

// changed marks the thread in Redis, off the event loop, so that the
// other replicas read it again from Slack before their next answer there.
func (s *sharedIntake) changed(channel, threadTS string) {
	go s.freshen(context.Background(), channel, threadTS)
}

// markLeftovers marks the tool and query cards an earlier attempt at m
// left "running" as interrupted, and returns how many messages that attempt
// left for m.
func (b *Bot) markLeftovers(ctx context.Context, m message) int {
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	msgs, _, _, err := b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: m.Channel, Timestamp: m.ThreadTS, Limit: 200, IncludeAllMetadata: true,
	})
	if err != nil {
		b.log.Warn("could not read the thread to mark an earlier attempt's cards", "channel", m.Channel, "thread", m.ThreadTS, "err", slackapi.Explain(err))
		return 0
	}
	n := 0
	for _, msg := range msgs {
		meta := msg.Metadata
		if msg.User != b.userID || render.MetaString(meta, "question_ts") != m.TS {
			continue
		}
		n++
		if render.MetaString(meta, "state") != "running" {
			continue
		}
		var c interface {
			Blocks() ([]slack.Block, []render.Attachment)
			Fallback() string
			Metadata() slack.SlackMetadata
		}
		switch meta.EventType {
		case render.MetaToolRun:
			run, _ := meta.EventPayload["run"].(float64)
			c = &render.Card{N: int(run), QuestionTS: m.TS, Code: render.MetaString(meta, "code"), Err: render.ErrInterrupted, Limits: b.cfg.SandboxLimits}
		case render.MetaQuery:
			n, _ := meta.EventPayload["query"].(float64)
			c = &render.QueryCard{N: int(n), QuestionTS: m.TS, Source: render.MetaString(meta, "source"), SQL: render.MetaString(meta, "sql"), Err: render.ErrInterrupted}
		default:
			continue
		}
		blocks, _ := c.Blocks()
		if _, _, _, err := b.api.UpdateMessageContext(ctx, m.Channel, msg.Timestamp,
			slack.MsgOptionText(c.Fallback(), false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(c.Metadata()),
		); err != nil {
			b.log.Warn("could not mark an interrupted card", "channel", m.Channel, "ts", msg.Timestamp, "err", slackapi.Explain(err))
		}
	}
	return n
}

// stopShared asks the answer to the question at questionTS, in the thread
// at threadTS, to stop on whichever replica runs it (by is the user who
// stopped it): the replica answering it is told over Redis pub/sub, and
// its answer's context ends with a *[replica.StopError]. It reports false
// when the bot runs alone: the caller stops the answer itself.
func (b *Bot) stopShared(ctx context.Context, channel, threadTS, questionTS, by string) (bool, error) {
	s, ok := b.intake.(*sharedIntake)
	if !ok {
		return false, nil
	}
	st := replica.Stop{Thread: thread.Key(channel, threadTS), By: by}
	if questionTS != "" {
		st.Question = questionID(message{Channel: channel, TS: questionTS})
	}
	return true, s.store.PublishStop(ctx, st)
}

// stopElsewhere handles a stop (a Stop click, Slack's own Stop) whose
// answer does not run in this process, when replicas share Redis: it finds
// the question (the thread's current one when k names only the thread,
// with its asker), checks that it is still to finish and that user may
// stop it, and publishes the stop for the replica answering it. It
// reports false when the bot runs alone: nothing runs elsewhere.
func (b *Bot) stopElsewhere(ctx context.Context, k answer.Key, asker, user, threadTS string) bool {
	s, ok := b.intake.(*sharedIntake)
	if !ok {
		return false
	}
	unreachable := func(err error) bool {
		b.log.Warn("could not stop an answer through redis", "channel", k.Channel, "thread", k.ThreadTS, "err", err)
		b.ephemeral(ctx, k.Channel, user, threadTS, ":warning: I couldn't reach the other replicas to stop this answer. Please try again in a moment.")
		return true
	}
	if k.QuestionTS == "" || asker == "" {
		id, payload, err := s.store.Current(ctx, thread.Key(k.Channel, k.ThreadTS))
		if err != nil {
			return unreachable(err)
		}
		t, err := decodeTask(payload)
		if id == "" || err != nil || k.QuestionTS != "" && t.Message.TS != k.QuestionTS {
			b.ephemeral(ctx, k.Channel, user, threadTS, stopFinishedText)
			return true
		}
		k.QuestionTS, asker = t.Message.TS, t.Message.User
	}
	state, _, err := s.store.AnswerState(ctx, questionID(message{Channel: k.Channel, TS: k.QuestionTS}))
	switch {
	case err != nil:
		return unreachable(err)
	case state == replica.Done || state == replica.Unknown:
		b.ephemeral(ctx, k.Channel, user, threadTS, stopFinishedText)
		return true
	}
	if !b.mayStop(ctx, user, asker) {
		b.ephemeral(ctx, k.Channel, user, threadTS, stopDeniedText)
		return true
	}
	if _, err := b.stopShared(ctx, k.Channel, k.ThreadTS, k.QuestionTS, user); err != nil {
		return unreachable(err)
	}
	b.log.Info("stop sent to the replica answering", "channel", k.Channel, "thread", k.ThreadTS, "question", k.QuestionTS, "by", user)
	return true
}
