package bot

import (
	"context"
	"sync"
)

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
