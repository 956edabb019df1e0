package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Causes of a handler's context being cancelled, besides a *[StopError].
var (
	// ErrShutdown: Shutdown's deadline passed before the answer finished.
	// A handler that returns an error then has its question handed back
	// to the queue for another replica.
	ErrShutdown = errors.New("replica: replica shutting down")
	// ErrLost: another replica took the question over (this replica could
	// not reach Redis for longer than the claim-after). The handler should
	// stop posting: the other replica answers.
	ErrLost = errors.New("replica: question taken over by another replica")
)

// Delivery is a question handed to a [Handler].
type Delivery struct {
	Entry   string // the stream entry id
	ID      string // Question.ID
	Thread  string
	Payload []byte
	// Attempt counts the starts of this question, this one included. Past
	// 1, a replica started it before and did not finish (it died, lost
	// Redis, or shut down): the thread may hold its cards, and the bot can
	// say the question was picked up again. Past [MaxAttempts], the
	// question has stopped replicas before and should not be run again.
	Attempt int
	// PreviousReplica is the replica that started it last time, if any.
	PreviousReplica string
	// Reclaimed reports a question taken over from a replica that stopped
	// heartbeating.
	Reclaimed bool
}

// A Handler answers the question in d. It returns nil when the question
// is finished with: answered, refused, failed for good, or stopped by a
// user. It returns an error when it did not finish because ctx was
// cancelled by a shutdown: the question is then handed back to the queue
// and another replica answers it (with Attempt past 1).
//
// context.Cause(ctx) tells why ctx was cancelled: a *[StopError] (a user
// stopped the answer, through any replica), [ErrShutdown], or [ErrLost].
type Handler func(ctx context.Context, d *Delivery) error

// Serve answers the queued questions with h, at most Config.Workers at
// once, until [Store.Shutdown] or until ctx is done; then it returns nil.
// Handlers run with contexts derived from ctx: cancelling ctx is a hard
// stop, after which the answers cut short are handed back.
//
// Serve takes questions only when it has a free worker, and leaves a
// question whose thread is being answered elsewhere waiting (without a
// worker) until that answer is finished. It keeps what it holds fresh with
// a heartbeat every ClaimAfter/4, takes over other replicas' stale
// questions, and, while Redis is unreachable, backs off and resumes when
// it returns (re-creating the consumer group if Redis came back empty).
func (s *Store) Serve(ctx context.Context, h Handler) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrClosed
	case s.serving != nil:
		s.mu.Unlock()
		return errors.New("replica: Serve called twice")
	}
	c := newConsumer(s, h)
	s.serving = c
	s.mu.Unlock()
	return c.run(ctx)
}

// Shutdown stops Serve gracefully: the questions already submitted are
// queued (while ctx allows), no more are taken, those waiting for their
// turn are handed back at once, and the answers in flight may finish. If
// ctx ends first, their handlers are cancelled with [ErrShutdown] and the
// questions they return errors for are handed back. Shutdown returns when
// Serve has returned. A replica that stops without Shutdown (killed)
// loses nothing either: its questions are taken over after the
// claim-after.
func (s *Store) Shutdown(ctx context.Context) error {
	// Queue what was submitted while the answers finish: if Redis is away
	// the flush may take all of ctx, and the answers should not wait on it.
	flushed := make(chan error, 1)
	go func() { flushed <- s.outbox.flush(ctx) }()
	s.mu.Lock()
	c := s.serving
	s.mu.Unlock()
	if c != nil {
		select {
		case c.shutdown <- ctx:
		case <-c.stopped:
		}
		<-c.stopped
	}
	err := <-flushed
	if err != nil {
		s.log.Warn("shutdown: submitted questions still buffered: redis unreachable", "err", err)
		return fmt.Errorf("replica: shutdown: questions not queued: %w", err)
	}
	return nil
}

// entry states
const (
	waiting   = iota // held, not started: not its thread's turn, or no free worker
	starting         // the start script is running
	running          // the handler is running
	finishing        // the handler returned; done or hand-back is being recorded
)

type entry struct {
	d      Delivery
	state  int
	cancel context.CancelCauseFunc
}

// consumer is one Serve.
type consumer struct {
	s        *Store
	h        Handler
	workers  int
	maxHeld  int
	beat     time.Duration
	shutdown chan context.Context
	aborted  chan struct{} // closed by Close: stop now
	stopped  chan struct{}
	wake     chan struct{} // capacity may have freed
	giveUp   chan struct{} // closed when retries of done and hand-back stop
	ctx      context.Context
	cancel   context.CancelCauseFunc

	readerID atomic.Int64 // the reader connection's client id, 0 if unknown

	mu      sync.Mutex
	held    map[string]*entry
	blocked map[string]bool // threads whose entries wait for another's turn
	busy    int             // worker slots: entries starting or running
	closing bool
	work    sync.WaitGroup // starts and handlers
	settle  sync.WaitGroup // done and hand-back retries
}

func newConsumer(s *Store, h Handler) *consumer {
	return &consumer{
		s: s, h: h,
		workers:  s.cfg.Workers,
		maxHeld:  2 * s.cfg.Workers,
		beat:     s.cfg.heartbeat(),
		shutdown: make(chan context.Context),
		aborted:  make(chan struct{}),
		stopped:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
		giveUp:   make(chan struct{}),
		held:     map[string]*entry{},
		blocked:  map[string]bool{},
	}
}

func (c *consumer) run(ctx context.Context) error {
	defer close(c.stopped)
	log := c.s.log
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	defer c.cancel(nil)
	// The background work outlives ctx: heartbeats must go on while
	// answers finish, and hand-backs need Redis.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	readCtx, stopRead := context.WithCancel(bg)
	defer stopRead()

	var readers, keepers sync.WaitGroup
	readers.Go(func() { c.read(readCtx) })
	keepers.Go(func() { c.keep(bg) })
	keepers.Go(func() { c.listen(bg) })
	log.Info("serving the queue", "workers", c.workers, "claim_after", c.s.cfg.ClaimAfter)

	var sctx context.Context
	select {
	case <-ctx.Done():
		sctx = ctx // already done: cut answers short at once
	case <-c.aborted:
		sctx = ctx
		if ctx.Err() == nil {
			var cancel context.CancelFunc
			sctx, cancel = context.WithCancel(ctx)
			cancel()
		}
	case sctx = <-c.shutdown:
	}
	log.Info("queue: taking no more questions; handing back those not started")
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	stopRead()
	c.unblockReader(bg, &readers)
	c.handBackWaiting(bg)

	done := make(chan struct{})
	go func() { c.work.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
		n := c.cancelRunning(ErrShutdown)
		if n > 0 {
			log.Warn("queue: shutdown deadline: cutting answers short and handing them back", "answers", n)
		}
		<-done
	}
	settled := make(chan struct{})
	go func() { c.settle.Wait(); close(settled) }()
	select {
	case <-settled:
	case <-time.After(finishGrace):
		c.mu.Lock()
		select {
		case <-c.giveUp:
		default:
			close(c.giveUp)
		}
		c.mu.Unlock()
		<-settled
	}
	stopBG()
	keepers.Wait()
	// Leave the group tidy: this consumer goes if it holds nothing.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishGrace)
	pruneScript.Run(pctx, c.s.rdb, []string{c.s.k.stream()}, group, pruneIdle.Milliseconds(), c.s.cfg.Replica, "1")
	cancel()
	log.Info("queue: stopped")
	return nil
}

// abort is Close during Serve: Serve stops now, handing back what it
// can in one try each, and returns.
func (c *consumer) abort() {
	c.mu.Lock()
	select {
	case <-c.aborted:
	default:
		close(c.aborted)
		close(c.giveUp)
	}
	c.mu.Unlock()
	<-c.stopped
}

func (c *consumer) cancelRunning(cause error) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.held {
		if e.state == running && e.cancel != nil {
			e.cancel(cause)
			n++
		}
	}
	return n
}

// capacity returns how many more entries may be taken.
func (c *consumer) capacity() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return 0
	}
	return max(0, min(c.workers-c.busy, c.maxHeld-len(c.held)))
}

func (c *consumer) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// read takes new entries from the group while there is capacity. It
// reads on a connection of its own, whose client id it publishes so that
// Shutdown can end a blocked read at once (CLIENT UNBLOCK).
func (c *consumer) read(ctx context.Context) {
	s := c.s
	conn := s.rdb.Conn()
	defer func() { conn.Close() }()
	block := min(readBlock, c.beat)
	wait := backoffMin
	for ctx.Err() == nil {
		n := c.capacity()
		if n == 0 {
			select {
			case <-c.wake:
			case <-ctx.Done():
			}
			continue
		}
		if c.readerID.Load() == 0 {
			if id, err := conn.ClientID(ctx).Result(); err == nil {
				c.readerID.Store(id)
			}
		}
		res, err := conn.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: s.cfg.Replica, Streams: []string{s.k.stream(), ">"},
			Count: int64(n), Block: block,
		}).Result()
		switch {
		case errors.Is(err, redis.Nil):
			wait = backoffMin
			continue
		case err != nil && isNoGroup(err):
			c.createGroup(ctx)
			continue
		case err != nil:
			// A connection that failed stays failed: take a new one,
			// which has a new client id.
			conn.Close()
			conn = s.rdb.Conn()
			c.readerID.Store(0)
			if ctx.Err() == nil {
				s.log.Debug("queue: read failed; retrying", "err", err, "in", wait)
				sleep(ctx, wait)
				wait = min(2*wait, backoffMax)
			}
			continue
		}
		wait = backoffMin
		for _, st := range res {
			c.add(st.Messages, false)
		}
		c.tryStart(context.WithoutCancel(ctx), "")
	}
}

// unblockReader ends the reader's blocking read, if any, and waits for
// the reader to return (ctx is already cancelled for it).
func (c *consumer) unblockReader(ctx context.Context, readers *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	for {
		if id := c.readerID.Load(); id != 0 {
			c.s.rdb.ClientUnblock(ctx, id)
		}
		select {
		case <-done:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func isNoGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

// createGroup creates the consumer group, and the stream if missing, from
// the stream's start: the stream holds only unfinished questions, so after
// Redis lost the group (or everything) all of them are owed an answer.
func (c *consumer) createGroup(ctx context.Context) {
	err := c.s.rdb.XGroupCreateMkStream(ctx, c.s.k.stream(), group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		c.s.log.Debug("queue: creating the consumer group failed", "err", err)
		sleep(ctx, backoffMin)
		return
	}
	if err == nil {
		c.s.log.Info("queue: created the consumer group", "stream", c.s.k.stream())
	}
}

// add holds new entries, waiting for their turn.
func (c *consumer) add(msgs []redis.XMessage, reclaimed bool) (added int) {
	var junk []string
	defer func() {
		if len(junk) > 0 {
			// Not written by Enqueue; dropping them keeps the group moving.
			c.s.log.Warn("queue: dropping entries without a thread", "entries", junk)
			ctx := context.WithoutCancel(c.ctx)
			c.s.rdb.XAck(ctx, c.s.k.stream(), group, junk...)
			c.s.rdb.XDel(ctx, c.s.k.stream(), junk...)
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		if _, ok := c.held[m.ID]; ok {
			continue
		}
		d := Delivery{Entry: m.ID, Reclaimed: reclaimed}
		d.Thread, _ = m.Values["t"].(string)
		d.ID, _ = m.Values["q"].(string)
		p, _ := m.Values["p"].(string)
		d.Payload = []byte(p)
		if d.Thread == "" {
			junk = append(junk, m.ID)
			continue
		}
		c.held[m.ID] = &entry{d: d, state: waiting}
		added++
	}
	return added
}

// tryStart starts the waiting entries (of thread, or all) whose turn it
// is, while workers are free. Once a thread's entry has started, or the
// thread is found busy, its other entries are not tried: they cannot be
// next. A thread found busy is not tried again until its turn notice, or
// the next poll, unblocks it.
func (c *consumer) tryStart(ctx context.Context, thread string) {
	c.mu.Lock()
	if thread != "" {
		delete(c.blocked, thread)
	}
	var cands []*entry
	for _, e := range c.held {
		if e.state == waiting && !c.blocked[e.d.Thread] && (thread == "" || e.d.Thread == thread) {
			cands = append(cands, e)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(cands, func(a, b *entry) int { return compareIDs(a.d.Entry, b.d.Entry) })
	settled := map[string]bool{} // threads with nothing more to try
	for _, e := range cands {
		if settled[e.d.Thread] {
			continue
		}
		c.mu.Lock()
		if c.closing || c.busy >= c.workers {
			c.mu.Unlock()
			return
		}
		if e.state != waiting {
			c.mu.Unlock()
			continue
		}
		e.state = starting
		c.busy++
		c.work.Add(1)
		c.mu.Unlock()
		next, err := c.start(ctx, e)
		if err != nil {
			c.s.log.Debug("queue: start failed; will retry", "entry", e.d.Entry, "err", err)
			return
		}
		// Go on with the thread only if its first entry is one held here
		// and still to be tried (after a hand-back the order list, not the
		// ids, says which is first).
		settled[e.d.Thread] = !next
	}
}

// start runs the start script for e and, if it is e's turn, its handler.
// It reports whether another entry of e's thread held here waiting is
// first in the thread's order, and returns an error only when Redis
// failed (e is waiting again).
func (c *consumer) start(ctx context.Context, e *entry) (next bool, err error) {
	s := c.s
	d := &e.d
	token := s.nonce + "." + strconv.FormatUint(s.tokens.Add(1), 10)
	hasID := ""
	if d.ID != "" {
		hasID = "1"
	}
	res, err := startScript.Run(ctx, s.rdb,
		[]string{s.k.stream(), s.k.order(d.Thread), s.k.lease(d.Thread), s.k.started(), s.k.answer(d.ID), s.k.stop(d.ID)},
		group, d.Entry, s.cfg.Replica, token, s.cfg.ClaimAfter.Milliseconds(), hasID, int64(answerTTL/time.Second), d.Thread).Slice()
	status, head := "", ""
	if err == nil && len(res) > 1 {
		status, _ = res[0].(string)
		head, _ = res[1].(string)
	}
	if err != nil || status != "go" {
		c.mu.Lock()
		c.busy--
		closing := c.closing
		switch {
		case status == "lost":
			delete(c.held, d.Entry)
		case closing:
			// Shutdown began while the script ran, and handed back the
			// waiting entries without this one.
			e.state = finishing
			c.settle.Add(1)
		case err != nil:
			e.state = waiting
		default: // "wait" or "busy": not this entry's turn
			e.state = waiting
			if h := c.held[head]; status == "wait" && h != nil && h.state == waiting {
				next = true
			} else {
				c.blocked[d.Thread] = true
			}
		}
		c.mu.Unlock()
		c.work.Done()
		c.kick()
		if closing && status != "lost" {
			go c.finish(e, handBack)
		}
		return next, err
	}
	n, _ := res[1].(int64)
	previous, _ := res[2].(string)
	stoppedBy, _ := res[3].(string)

	hctx, cancel := context.WithCancelCause(c.ctx)
	c.mu.Lock()
	// Under c.mu: the stop listener reads held entries' deliveries.
	d.Attempt, d.PreviousReplica = int(n), previous
	closing := c.closing
	if !closing {
		e.state, e.cancel = running, cancel
	}
	c.mu.Unlock()
	if closing {
		// Shutdown began while the script ran: the next replica starts it.
		cancel(nil)
		c.mu.Lock()
		c.busy--
		e.state = finishing
		c.mu.Unlock()
		c.settle.Add(1)
		c.work.Done()
		go c.finish(e, handBack)
		return false, nil
	}
	if stoppedBy != "" {
		cancel(&StopError{By: stoppedBy})
	}
	if d.Reclaimed || d.Attempt > 1 {
		s.log.Info("queue: answering a question again", "entry", d.Entry, "thread", d.Thread, "attempt", d.Attempt, "previous", d.PreviousReplica)
	}
	go c.handle(hctx, cancel, e)
	return false, nil
}

type outcome int

const (
	markDone outcome = iota
	handBack
	forget // lost to another replica
)

func (c *consumer) handle(ctx context.Context, cancel context.CancelCauseFunc, e *entry) {
	err := c.h(ctx, &e.d)
	cancelled, cause := ctx.Err() != nil, context.Cause(ctx)
	cancel(nil)
	var stop *StopError
	out := markDone
	switch {
	case errors.Is(cause, ErrLost):
		out = forget
	case err != nil && cancelled && !errors.As(cause, &stop):
		out = handBack
	case err != nil:
		c.s.log.Warn("queue: handler failed; the question is done", "entry", e.d.Entry, "thread", e.d.Thread, "err", err)
	}
	c.mu.Lock()
	c.busy--
	e.state, e.cancel = finishing, nil
	c.mu.Unlock()
	c.settle.Add(1)
	c.work.Done()
	c.kick()
	c.finish(e, out)
}

// finish records e's outcome in Redis, retrying while Redis is
// unreachable (the heartbeat keeps e fresh meanwhile), then lets the next
// question start.
func (c *consumer) finish(e *entry, out outcome) {
	defer c.settle.Done()
	s := c.s
	d := &e.d
	hasID := ""
	if d.ID != "" {
		hasID = "1"
	}
	keys := []string{s.k.stream(), s.k.order(d.Thread), s.k.lease(d.Thread), s.k.started(), s.k.answer(d.ID)}
	args := []any{group, d.Entry, s.cfg.Replica, d.Thread, s.k.turns(), hasID, int64(answerTTL / time.Second)}
	ctx := context.WithoutCancel(c.ctx)
	wait := backoffMin
	for {
		var err error
		switch out {
		case markDone:
			var r string
			r, err = doneScript.Run(ctx, s.rdb, keys, args...).Text()
			if err == nil && r == "lost" {
				s.lost.Add(1)
				s.log.Warn("queue: finished a question another replica had taken over", "entry", d.Entry, "thread", d.Thread)
			}
		case handBack:
			var id string
			id, err = handBackScript.Run(ctx, s.rdb, keys, args...).Text()
			if errors.Is(err, redis.Nil) {
				err = nil // no longer ours
			} else if err == nil {
				s.handedBack.Add(1)
				s.log.Info("queue: handed a question back", "entry", d.Entry, "new_entry", id, "thread", d.Thread)
			}
		case forget:
			s.lost.Add(1)
			err = releaseScript.Run(ctx, s.rdb, []string{s.k.lease(d.Thread)}, s.cfg.Replica).Err()
		}
		if err == nil {
			break
		}
		select {
		case <-c.giveUp:
			s.log.Error("queue: could not record a question's end in redis; another replica may answer it again", "entry", d.Entry, "thread", d.Thread, "err", err)
			c.drop(e)
			return
		default:
		}
		s.log.Debug("queue: recording a question's end failed; retrying", "entry", d.Entry, "err", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-c.giveUp:
		}
		wait = min(2*wait, backoffMax)
	}
	c.drop(e)
	if out != forget {
		c.tryStart(ctx, d.Thread)
	}
	c.tryStart(ctx, "")
}

func (c *consumer) drop(e *entry) {
	c.mu.Lock()
	delete(c.held, e.d.Entry)
	c.mu.Unlock()
	c.kick()
}

// handBackWaiting hands back every entry not started.
func (c *consumer) handBackWaiting(ctx context.Context) {
	c.mu.Lock()
	var es []*entry
	for _, e := range c.held {
		if e.state == waiting {
			e.state = finishing
			es = append(es, e)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(es, func(a, b *entry) int { return compareIDs(a.d.Entry, b.d.Entry) })
	for _, e := range es {
		c.settle.Add(1)
		c.finish(e, handBack)
	}
}

// keep sends heartbeats, takes over stale questions, retries waiting
// entries, and re-reads stop requests, until ctx is done.
func (c *consumer) keep(ctx context.Context) {
	beat := time.NewTicker(c.beat)
	defer beat.Stop()
	poll := time.NewTicker(min(pollInterval, c.beat))
	defer poll.Stop()
	// Nothing is taken over in the first beats either: after a restart of
	// everything, live replicas refresh what they hold first.
	claimNotBefore := time.Now().Add(claimGraceBeats * c.beat)
	failing := false
	lastPrune := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			err := c.heartbeat(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				if !failing {
					c.s.log.Debug("queue: heartbeat failed", "err", err)
				}
				failing = true
				continue
			case failing:
				// Redis is back: let live replicas refresh what they hold
				// before anything is taken over as stale.
				failing = false
				claimNotBefore = time.Now().Add(claimGraceBeats * c.beat)
			}
			if time.Now().After(claimNotBefore) {
				c.claim(ctx)
			}
			if time.Since(lastPrune) > pruneInterval {
				lastPrune = time.Now()
				n, _ := pruneScript.Run(ctx, c.s.rdb, []string{c.s.k.stream()}, group, pruneIdle.Milliseconds(), c.s.cfg.Replica, "").Int()
				if n > 0 {
					c.s.log.Info("queue: removed stopped replicas from the group", "consumers", n)
				}
			}
		case <-poll.C:
			c.checkStops(ctx)
			c.mu.Lock()
			clear(c.blocked) // in case a turn notice was missed
			c.mu.Unlock()
			c.tryStart(ctx, "")
		}
	}
}

// heartbeat refreshes every held entry and the leases of the threads
// being answered, and acts on entries found lost.
func (c *consumer) heartbeat(ctx context.Context) error {
	s := c.s
	c.mu.Lock()
	var answering, other []*entry
	for _, e := range c.held {
		if e.state == running || e.state == finishing {
			answering = append(answering, e)
		} else {
			other = append(other, e)
		}
	}
	c.mu.Unlock()
	if len(answering)+len(other) == 0 {
		return s.rdb.Ping(ctx).Err()
	}
	keys := []string{s.k.stream()}
	args := []any{group, s.cfg.Replica, s.cfg.ClaimAfter.Milliseconds(), len(answering)}
	for _, e := range answering {
		keys = append(keys, s.k.lease(e.d.Thread), s.k.answer(e.d.ID))
		args = append(args, e.d.Entry)
	}
	for _, e := range other {
		args = append(args, e.d.Entry)
	}
	res, err := heartbeatScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	all := append(answering, other...)
	for i, st := range res {
		if st != 1 || i >= len(all) {
			continue
		}
		e := all[i]
		c.mu.Lock()
		switch e.state {
		case running:
			s.log.Warn("queue: another replica took over a question being answered here; stopping", "entry", e.d.Entry, "thread", e.d.Thread)
			e.cancel(ErrLost)
		case waiting:
			delete(c.held, e.d.Entry)
			s.lost.Add(1)
		}
		c.mu.Unlock()
	}
	return nil
}

// claim takes over entries of replicas that stopped heartbeating.
func (c *consumer) claim(ctx context.Context) {
	s := c.s
	start := "0-0"
	for range claimPages {
		n := c.capacity()
		if n == 0 {
			return
		}
		msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: s.k.stream(), Group: group, Consumer: s.cfg.Replica,
			MinIdle: s.cfg.ClaimAfter, Start: start, Count: int64(n),
		}).Result()
		if err != nil {
			if !isNoGroup(err) {
				s.log.Debug("queue: claiming stale questions failed", "err", err)
			}
			return
		}
		if added := c.add(msgs, true); added > 0 {
			s.claimed.Add(int64(added))
			s.log.Info("queue: took over questions from a replica that stopped", "questions", added)
			c.tryStart(ctx, "")
		}
		if next == "0-0" || next == "" {
			return
		}
		start = next
	}
}

// checkStops re-reads the stop requests of the questions being answered,
// in case their pub/sub message was missed.
func (c *consumer) checkStops(ctx context.Context) {
	c.mu.Lock()
	var es []*entry
	var ks []string
	for _, e := range c.held {
		if e.state == running && e.d.ID != "" {
			es = append(es, e)
			ks = append(ks, c.s.k.stop(e.d.ID))
		}
	}
	c.mu.Unlock()
	if len(ks) == 0 {
		return
	}
	vals, err := c.s.rdb.MGet(ctx, ks...).Result()
	if err != nil {
		return
	}
	for i, v := range vals {
		if by, ok := v.(string); ok {
			c.stop(es[i], by)
		}
	}
}

func (c *consumer) stop(e *entry, by string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.state == running && e.cancel != nil {
		c.s.log.Info("queue: answer stopped", "entry", e.d.Entry, "thread", e.d.Thread, "by", by)
		e.cancel(&StopError{By: by})
	}
}

// onTurn acts on a thread's turn notice (its answer in progress is
// finished, or was handed back): the thread's next question may start. If
// this replica holds it but has no free worker, it hands the question
// back at once, for a replica that has one, rather than keep it waiting.
func (c *consumer) onTurn(ctx context.Context, thread string) {
	c.mu.Lock()
	var first *entry
	for _, e := range c.held {
		if e.state == waiting && e.d.Thread == thread && (first == nil || compareIDs(e.d.Entry, first.d.Entry) < 0) {
			first = e
		}
	}
	handOn := first != nil && c.busy >= c.workers && !c.closing
	if handOn {
		first.state = finishing
		c.settle.Add(1)
	}
	c.mu.Unlock()
	switch {
	case first == nil:
	case handOn:
		c.s.log.Debug("queue: no free worker for a thread's turn; handing the question on", "entry", first.d.Entry, "thread", thread)
		c.finish(first, handBack)
	default:
		c.tryStart(ctx, thread)
	}
}

// listen follows the stop requests and the turn notices of threads.
func (c *consumer) listen(ctx context.Context) {
	s := c.s
	ps := s.rdb.Subscribe(ctx, s.k.stops(), s.k.turns())
	defer ps.Close()
	receive(ctx, ps, func(m *redis.Message) bool {
		switch m.Channel {
		case s.k.turns():
			go c.onTurn(ctx, m.Payload)
		case s.k.stops():
			st, err := decodeStop(m.Payload)
			if err != nil {
				return true
			}
			c.mu.Lock()
			var match []*entry
			for _, e := range c.held {
				if st.matches(e.d) {
					match = append(match, e)
				}
			}
			c.mu.Unlock()
			for _, e := range match {
				c.stop(e, st.By)
			}
		}
		return true
	})
}
