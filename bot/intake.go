package bot

import (
	"context"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// task is a message the bot acts on: a question, a follow-up or a
// command, as the event loop accepted it.
type task struct {
	Route   route
	Message message
	EventID string // the event that brought it, for dedupe across replicas
}

// thread is the key that orders a task among its thread's.
func (t task) thread() string { return thread.Key(t.Message.Channel, t.Message.ThreadTS) }

// perform runs t. It returns when t is finished with, or ctx ends.
func (b *Bot) perform(ctx context.Context, t task) {
	switch t.Route {
	case command:
		b.runCommand(ctx, t.Message)
	case question:
		b.answers.Answer(ctx, t.Message)
	case followUp:
		b.answers.FollowUp(ctx, t.Message)
	}
}

// intake is where the event loop puts the tasks it accepts and where they
// are run: on this process's workers ([localIntake]), or through the queue
// replicas share in Redis ([sharedIntake]).
type intake interface {
	// start begins running tasks, with contexts derived from ctx.
	start(ctx context.Context)
	// submit takes t from the event loop; it never blocks. A task that
	// cannot be taken gets a notice in its thread, never silence.
	submit(t task)
	// finish runs at shutdown, after the last submit: the tasks taken
	// are finished (or handed back) within timeout; then cancel cuts
	// short those still running, and finish returns when they have.
	finish(timeout time.Duration, cancel context.CancelFunc)
	// busy counts the tasks this process holds, waiting or running.
	busy() int
	// ready returns why tasks cannot be taken now, or nil.
	ready() error
	// changed says the thread changed in a way only this process saw (a
	// file posted in it for no one in particular); it never blocks.
	changed(channel, threadTS string)
}

// localIntake runs tasks on the bot's own workers: one process, no
// Redis.
type localIntake struct{ b *Bot }

func (l localIntake) start(ctx context.Context) { l.b.pool.start(ctx) }

func (l localIntake) submit(t task) {
	b := l.b
	if !b.pool.submit(t.thread(), func(ctx context.Context) { b.perform(ctx, t) }) {
		b.busyNotice(t.Message, busyText)
	}
}

func (l localIntake) finish(timeout time.Duration, cancel context.CancelFunc) {
	waitOrCancel(l.b.waitLocal, timeout, cancel, l.b.log)
}

func (l localIntake) busy() int                  { return l.b.pool.busy() }
func (l localIntake) ready() error               { return nil }
func (l localIntake) changed(channel, ts string) {}

// waitLocal returns when the work this process runs beside the tasks
// (slash commands, button clicks) is done, and the local pool's tasks.
func (b *Bot) waitLocal() {
	b.pool.wait()
	b.background.Wait()
}

// waitOrCancel waits for wait to return; past timeout it calls cancel and
// waits on.
func waitOrCancel(wait func(), timeout time.Duration, cancel context.CancelFunc, log interface{ Warn(string, ...any) }) {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		log.Warn("shutdown timeout: cancelling answers in flight")
		cancel()
		<-done
	}
}

// busyText is the notice for a question the bot has no room for.
const busyText = ":hourglass: I'm answering too many questions right now. Please ask again in a minute."

// notice posts a short message from the bot in m's thread
// ([answer.Answerer.Notice]).
func (b *Bot) notice(ctx context.Context, m message, text string) {
	b.answers.Notice(ctx, m, text)
}

// busyNotice tells the asker, off the event loop, that their message was
// not taken.
func (b *Bot) busyNotice(m message, text string) {
	b.metrics.errors.WithLabelValues("busy").Inc()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), slackapi.CallTimeout)
		defer cancel()
		b.notice(ctx, m, text)
	}()
}

// dispatcher runs jobs on a bounded number of workers. Jobs with the same
// key (a thread) run one at a time, in the order they were submitted;
// jobs with different keys run concurrently.
type dispatcher struct {
	sem   chan struct{}
	limit int // jobs waiting or running

	mu      sync.Mutex
	ctx     context.Context
	queues  map[string][]func(context.Context)
	pending int
	wg      sync.WaitGroup
}

func newDispatcher(workers, limit int) *dispatcher {
	return &dispatcher{sem: make(chan struct{}, workers), limit: limit, queues: map[string][]func(context.Context){}, ctx: context.Background()}
}

// start sets the context jobs run with.
func (d *dispatcher) start(ctx context.Context) {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
}

// submit queues job under key and reports false when the queue is full.
func (d *dispatcher) submit(key string, job func(context.Context)) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending >= d.limit {
		return false
	}
	d.pending++
	q, running := d.queues[key]
	d.queues[key] = append(q, job)
	if !running {
		d.wg.Add(1)
		go d.drain(key, d.ctx)
	}
	return true
}

func (d *dispatcher) drain(key string, ctx context.Context) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		q := d.queues[key]
		if len(q) == 0 {
			delete(d.queues, key)
			d.mu.Unlock()
			return
		}
		job := q[0]
		d.queues[key] = q[1:]
		d.mu.Unlock()

		d.sem <- struct{}{}
		job(ctx)
		<-d.sem

		d.mu.Lock()
		d.pending--
		d.mu.Unlock()
	}
}

// wait returns when every submitted job has run.
func (d *dispatcher) wait() { d.wg.Wait() }

// busy reports the jobs waiting or running.
func (d *dispatcher) busy() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending
}
