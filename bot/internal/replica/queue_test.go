package replica_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
)

// A replica killed mid-answer (SIGKILL, no clean-up) loses nothing: after
// the claim-after another replica takes the question over, sees it is a
// second attempt, and the thread's next question waits for it.
func TestReplicaKilledMidAnswer(t *testing.T) {
	srv := newServer(t)
	producer := open(t, srv.URL(0), replica.Config{})
	q1, q2 := question("C1/1.0", 1), question("C1/1.0", 2)
	enqueue(t, producer, q1, q2)

	// Replica a (a process of its own, one worker) takes q1 only.
	a, lines := startReplicaProcess(t, srv.URL(0), "replica-a", shortClaim)
	select {
	case line := <-lines:
		if line != "started "+q1.ID+" 1" {
			t.Fatalf("replica a: %q", line)
		}
	case <-time.After(waitLong):
		t.Fatal("replica a did not start answering")
	}
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()

	b := open(t, srv.URL(0), replica.Config{Replica: "replica-b", ClaimAfter: shortClaim})
	j := newJournal()
	serve(t, b, j.handler("b", 0))
	eventually(t, "b answers both", func() bool { return j.finished(q1.ID, q2.ID) })

	if got := j.order("C1/1.0"); !slices.Equal(got, []string{q1.ID, q2.ID}) {
		t.Errorf("answered in order %v; want q1 then q2", got)
	}
	first := j.starts[0].d
	if first.Attempt != 2 || !first.Reclaimed || first.PreviousReplica != "replica-a" {
		t.Errorf("q1 delivered with attempt %d, reclaimed %v, previous %q; want 2, true, replica-a", first.Attempt, first.Reclaimed, first.PreviousReplica)
	}
	if second := j.starts[1].d; second.Attempt != 1 || second.Reclaimed {
		t.Errorf("q2 delivered with attempt %d, reclaimed %v; want a first delivery", second.Attempt, second.Reclaimed)
	}
	if st := stats(t, b); st.Claimed != 1 || st.Queued != 0 || st.Pending != 0 {
		t.Errorf("stats %+v; want 1 claimed and an empty queue", st)
	}
}

// A thread's questions read by two replicas are answered one at a time,
// in order: the replica holding the second waits for the first to be
// finished on the other.
func TestThreadOrderAcrossReplicas(t *testing.T) {
	srv := newServer(t)
	a := open(t, srv.URL(0), replica.Config{Replica: "a", Workers: 1})
	b := open(t, srv.URL(0), replica.Config{Replica: "b", Workers: 1})
	qs := []replica.Question{question("C1/1.0", 0), question("C1/1.0", 1), question("C1/1.0", 2)}
	enqueue(t, a, qs...)

	j := newJournal()
	release := make(chan struct{})
	serve(t, a, func(ctx context.Context, d *replica.Delivery) error {
		j.begin("a", d)
		select { // b reads q1 and q2 meanwhile, and must wait
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		j.end(d)
		return nil
	})
	eventually(t, "a starts q0", func() bool { return len(j.order("C1/1.0")) == 1 })
	serve(t, b, j.handler("b", 20*time.Millisecond))
	eventually(t, "b holds q1 and q2, waiting", func() bool { return stats(t, b).Waiting == 2 })
	if got := j.order("C1/1.0"); len(got) != 1 {
		t.Fatalf("started %v while q0 was being answered", got)
	}
	close(release)
	eventually(t, "all answered", func() bool { return j.finished(qs[0].ID, qs[1].ID, qs[2].ID) })
	if got := j.order("C1/1.0"); !slices.Equal(got, []string{qs[0].ID, qs[1].ID, qs[2].ID}) {
		t.Errorf("order %v", got)
	}
	if len(j.overlap) > 0 {
		t.Errorf("overlaps: %v", j.overlap)
	}
	if j.starts[0].name != "a" || j.starts[1].name != "b" || j.starts[2].name != "b" {
		t.Errorf("replicas %s %s %s; want a b b", j.starts[0].name, j.starts[1].name, j.starts[2].name)
	}
}

// Several replicas, Slack delivering each event to one of them at
// random, retries and a mention's second event to another: every
// question is answered exactly once, each thread's in order, one at a
// time.
func TestRandomDeliveryWithRetries(t *testing.T) {
	srv := newServer(t)
	const replicas, threads, perThread = 3, 4, 6
	var stores []*replica.Store
	j := newJournal()
	for i := range replicas {
		s := open(t, srv.URL(0), replica.Config{Replica: fmt.Sprintf("r%d", i), Workers: 2})
		stores = append(stores, s)
		serve(t, s, func(ctx context.Context, d *replica.Delivery) error {
			return j.handler(s.Replica(), time.Duration(rand.IntN(10))*time.Millisecond)(ctx, d)
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var submitted sync.WaitGroup
	var ids []string
	for n := range perThread {
		for th := range threads {
			thread := fmt.Sprintf("C%d/1.0", th)
			q := question(thread, n)
			q.EventID = "Ev-" + q.ID
			ids = append(ids, q.ID)
			first := rng.IntN(replicas)
			submit := func(s *replica.Store, q replica.Question) {
				submitted.Add(1)
				s.Submit(q, func(err error) {
					defer submitted.Done()
					if err != nil && !errors.Is(err, replica.ErrDuplicate) {
						t.Errorf("submit %s: %v", q.ID, err)
					}
				})
			}
			submit(stores[first], q)
			if rng.IntN(2) == 0 { // a retry, to another connection
				submit(stores[(first+1+rng.IntN(replicas-1))%replicas], q)
			}
			if rng.IntN(3) == 0 { // the message event of a mention
				m := q
				m.EventID += "-message"
				submit(stores[rng.IntN(replicas)], m)
			}
		}
		// Questions of one thread are asked one after another: wait for
		// this round to be queued before the next.
		submitted.Wait()
	}
	eventually(t, "all answered", func() bool { return j.finished(ids...) })
	for _, s := range stores {
		eventually(t, "the queue empties", func() bool { st := stats(t, s); return st.Queued == 0 && st.Pending == 0 })
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		if j.count[id] != 1 {
			t.Errorf("%s answered %d times", id, j.count[id])
		}
	}
	if len(j.overlap) > 0 {
		t.Errorf("a thread's questions answered at once: %v", j.overlap)
	}
	for th := range threads {
		thread := fmt.Sprintf("C%d/1.0", th)
		var got, want []string
		for _, s := range j.starts {
			if s.d.Thread == thread {
				got = append(got, s.d.ID)
			}
		}
		for n := range perThread {
			want = append(want, question(thread, n).ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("thread %s answered in order %v", thread, got)
		}
	}
}

// Shutdown hands back what a replica holds and has not started at once,
// and, when its deadline passes, the answers it cut short; another
// replica answers them, the thread's order intact.
func TestShutdownHandsBack(t *testing.T) {
	srv := newServer(t)
	a := open(t, srv.URL(0), replica.Config{Replica: "a", Workers: 2})
	q0, q1 := question("C1/1.0", 0), question("C1/1.0", 1)
	enqueue(t, a, q0, q1)

	started := make(chan struct{})
	var cause error
	shutdownA := serve(t, a, func(ctx context.Context, d *replica.Delivery) error {
		if d.ID != q0.ID {
			t.Errorf("a started %s", d.ID)
		}
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err() // not finished: hand it back
	})
	<-started
	eventually(t, "a holds q1, waiting", func() bool { return stats(t, a).Waiting == 1 })
	shutdownA(100 * time.Millisecond)
	if !errors.Is(cause, replica.ErrShutdown) {
		t.Errorf("handler's cause %v; want ErrShutdown", cause)
	}
	if st := stats(t, a); st.HandedBack != 2 {
		t.Errorf("a handed back %d; want 2", st.HandedBack)
	}

	b := open(t, srv.URL(0), replica.Config{Replica: "b"})
	j := newJournal()
	serve(t, b, j.handler("b", 0))
	eventually(t, "b answers both", func() bool { return j.finished(q0.ID, q1.ID) })
	if got := j.order("C1/1.0"); !slices.Equal(got, []string{q0.ID, q1.ID}) {
		t.Errorf("order %v", got)
	}
	if d := j.starts[0].d; d.Attempt != 2 || d.PreviousReplica != "a" || d.Reclaimed {
		t.Errorf("q0 again with attempt %d, previous %q, reclaimed %v; want 2, a, false", d.Attempt, d.PreviousReplica, d.Reclaimed)
	}
	if d := j.starts[1].d; d.Attempt != 1 {
		t.Errorf("q1 with attempt %d; want 1 (never started)", d.Attempt)
	}
	if st := stats(t, b); st.Claimed != 0 {
		t.Errorf("b claimed %d: hand-back should not wait for the claim-after", st.Claimed)
	}
}

// A Stop sent through one replica stops the answer on another; a stop
// for a question not yet started holds when it starts; and the answer's
// state says where it is.
func TestStopAcrossReplicas(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	a := open(t, srv.URL(0), replica.Config{Replica: "a"})
	b := open(t, srv.URL(0), replica.Config{Replica: "b"})
	stops := b.SubscribeStops(t.Context())

	type result struct {
		id    string
		cause error
	}
	results := make(chan result, 4)
	running := make(chan string, 4)
	serve(t, a, func(ctx context.Context, d *replica.Delivery) error {
		running <- d.ID
		<-ctx.Done()
		results <- result{d.ID, context.Cause(ctx)}
		return nil // stopped: finished with
	})
	for _, test := range []struct {
		name string
		stop func(q replica.Question) replica.Stop
	}{
		{"by question", func(q replica.Question) replica.Stop { return replica.Stop{Question: q.ID, By: "U1"} }},
		{"by thread", func(q replica.Question) replica.Stop { return replica.Stop{Thread: q.Thread, By: "U2"} }},
	} {
		t.Run(test.name, func(t *testing.T) {
			q := question("C1/"+strings.ReplaceAll(test.name, " ", "-"), 0)
			enqueue(t, b, q)
			if got := <-running; got != q.ID {
				t.Fatalf("running %s", got)
			}
			if st, who, err := b.AnswerState(ctx, q.ID); st != replica.Running || who != "a" || err != nil {
				t.Errorf("state while answering: %q on %q, %v", st, who, err)
			}
			st := test.stop(q)
			if err := b.PublishStop(ctx, st); err != nil {
				t.Fatal(err)
			}
			r := <-results
			var se *replica.StopError
			if !errors.As(r.cause, &se) || se.By != st.By {
				t.Errorf("cause %v; want a StopError by %s", r.cause, st.By)
			}
			if got := <-stops; got != st {
				t.Errorf("subscriber got %+v; want %+v", got, st)
			}
			eventually(t, "done", func() bool { s, _, _ := b.AnswerState(ctx, q.ID); return s == replica.Done })
		})
	}
	t.Run("before it starts", func(t *testing.T) {
		q := question("C1/early", 0)
		if err := b.PublishStop(ctx, replica.Stop{Question: q.ID, By: "U3"}); err != nil {
			t.Fatal(err)
		}
		<-stops
		enqueue(t, b, q)
		<-running
		r := <-results
		var se *replica.StopError
		if !errors.As(r.cause, &se) || se.By != "U3" {
			t.Errorf("cause %v; want a StopError by U3", r.cause)
		}
	})
	if st, _, err := b.AnswerState(ctx, "never-queued"); st != replica.Unknown || err != nil {
		t.Errorf("state of an unknown question: %q, %v", st, err)
	}
	if err := b.PublishStop(ctx, replica.Stop{By: "U1"}); err == nil {
		t.Error("a stop naming nothing was accepted")
	}
}

// Redis stopped and restarted empty: calls fail and Ready says why, a
// question submitted meanwhile waits in memory, an answer in flight goes
// on, and once Redis is back the group is re-created, the question
// answered, and nothing answered twice.
func TestRedisRestartEmpty(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	var log logBuffer
	a := open(t, srv.URL(0), replica.Config{Replica: "a", ClaimAfter: shortClaim, Logger: log.logger(t)})
	j := newJournal()
	release := make(chan struct{})
	serve(t, a, func(ctx context.Context, d *replica.Delivery) error {
		j.begin("a", d)
		if d.Thread == "C9/1.0" {
			<-release // spans the outage
		}
		j.end(d)
		return nil
	})
	q0, q1, q2 := question("C1/1.0", 0), question("C1/1.0", 1), question("C2/1.0", 2)
	inFlight := question("C9/1.0", 0)
	enqueue(t, a, q0, inFlight)
	eventually(t, "q0 answered, the other started", func() bool {
		return j.finished(q0.ID) && len(j.order(inFlight.Thread)) == 1
	})

	srv.Stop()
	eventually(t, "not ready", func() bool { return a.Ready() != nil })
	if err := a.Ready(); !strings.Contains(err.Error(), "redis unreachable") {
		t.Errorf("Ready: %v", err)
	}
	if _, err := a.Enqueue(ctx, q2); err == nil {
		t.Error("Enqueue succeeded with Redis stopped")
	}
	if _, err := a.Settings(ctx, "C1"); err == nil {
		t.Error("Settings succeeded with Redis stopped")
	}
	if _, err := a.Stats(ctx); err == nil {
		t.Error("Stats succeeded with Redis stopped")
	}
	queued := make(chan error, 1)
	a.Submit(q1, func(err error) { queued <- err })
	eventually(t, "heartbeats fail and q1 waits", func() bool {
		return log.has("queue: heartbeat failed") && log.has("enqueue failed; retrying")
	})

	srv.Restart()
	eventually(t, "ready again", func() bool { return a.Ready() == nil })
	if err := <-queued; err != nil {
		t.Fatalf("submitted while Redis was down: %v", err)
	}
	enqueue(t, a, q2)
	close(release)
	eventually(t, "all answered", func() bool { return j.finished(q1.ID, q2.ID, inFlight.ID) })
	for _, id := range []string{q0.ID, q1.ID, q2.ID, inFlight.ID} {
		if j.count[id] != 1 {
			t.Errorf("%s answered %d times", id, j.count[id])
		}
	}
	eventually(t, "the queue empties", func() bool { st := stats(t, a); return st.Queued == 0 && st.Pending == 0 && st.Running == 0 })
}

// Redis killed and restarted with its data while a question is being
// answered and for longer than the claim-after: the replica answering
// keeps it (its heartbeat refreshes it before anyone may take it over),
// and it is answered once.
func TestRedisRestartKeepsAnswersInFlight(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{Persist: true})
	const claim = 2 * time.Second
	j := newJournal()
	release := make(chan struct{})
	var stores []*replica.Store
	for _, name := range []string{"a", "b"} {
		s := open(t, srv.URL(0), replica.Config{Replica: name, ClaimAfter: claim})
		stores = append(stores, s)
		serve(t, s, func(ctx context.Context, d *replica.Delivery) error {
			j.begin(name, d)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			j.end(d)
			return nil
		})
	}
	q0 := question("C1/1.0", 0)
	enqueue(t, stores[0], q0)
	eventually(t, "q0 started", func() bool { return len(j.order(q0.Thread)) == 1 })

	srv.Kill()
	time.Sleep(claim + claim/2) // the entry is stale by Redis's clock when it returns
	srv.Restart()
	for _, s := range stores {
		eventually(t, "ready again", func() bool { return s.Ready() == nil })
	}
	time.Sleep(2 * claim) // time for a wrong takeover to happen
	close(release)
	eventually(t, "q0 answered", func() bool { return j.finished(q0.ID) })
	if n := j.count[q0.ID]; n != 1 {
		t.Errorf("q0 answered %d times", n)
	}
	for _, s := range stores {
		if st := stats(t, s); st.Claimed != 0 || st.Lost != 0 {
			t.Errorf("%s: %+v; want nothing claimed or lost", s.Replica(), st)
		}
		eventually(t, "the queue empties", func() bool { st := stats(t, s); return st.Queued == 0 && st.Pending == 0 })
	}
}

// A replica cut off from Redis (a network partition) for longer than the
// claim-after loses its question to another replica; when it gets
// through again its handler is cancelled with ErrLost, and the question
// is finished once, by the other.
func TestPartitionedReplicaLosesQuestion(t *testing.T) {
	srv := newServer(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	a := open(t, proxy.URL(0), replica.Config{Replica: "a", ClaimAfter: shortClaim})
	q := question("C1/1.0", 0)
	enqueue(t, a, q)
	causes := make(chan error, 1)
	serve(t, a, func(ctx context.Context, d *replica.Delivery) error {
		proxy.Cut()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	eventually(t, "a cut off", func() bool { return a.Ready() != nil })

	b := open(t, srv.URL(0), replica.Config{Replica: "b", ClaimAfter: shortClaim})
	j := newJournal()
	serve(t, b, j.handler("b", 0))
	eventually(t, "b answers", func() bool { return j.finished(q.ID) })
	proxy.Restore()
	select {
	case cause := <-causes:
		if !errors.Is(cause, replica.ErrLost) {
			t.Errorf("a's cause %v; want ErrLost", cause)
		}
	case <-time.After(waitLong):
		t.Fatal("a's handler was not cancelled")
	}
	if d := j.starts[0].d; d.Attempt != 2 || !d.Reclaimed || d.PreviousReplica != "a" {
		t.Errorf("b got attempt %d, reclaimed %v, previous %q", d.Attempt, d.Reclaimed, d.PreviousReplica)
	}
	eventually(t, "a counts it lost", func() bool { return stats(t, a).Lost == 1 })
	if st := stats(t, b); st.Queued != 0 || st.Pending != 0 {
		t.Errorf("queue not empty: %+v", st)
	}
}

// Submit keeps a bounded backlog while Redis is away.
func TestSubmitBacklog(t *testing.T) {
	srv := newServer(t)
	a := open(t, srv.URL(0), replica.Config{MaxBuffered: 2})
	srv.Stop()
	results := make(chan error, 3)
	for i := range 3 {
		a.Submit(question("C1/1.0", i), func(err error) { results <- err })
	}
	if err := <-results; !errors.Is(err, replica.ErrBacklog) {
		t.Fatalf("third submit: %v; want ErrBacklog", err)
	}
	srv.Restart()
	for range 2 {
		if err := <-results; err != nil {
			t.Errorf("buffered submit: %v", err)
		}
	}
	if st := stats(t, a); st.Queued != 2 {
		t.Errorf("queued %d; want 2", st.Queued)
	}
}

// A handler's error that is not a shutdown's finishes the question: it
// is not handed back to fail again elsewhere.
func TestHandlerErrorFinishes(t *testing.T) {
	srv := newServer(t)
	a := open(t, srv.URL(0), replica.Config{})
	enqueue(t, a, question("C1/1.0", 0))
	calls := make(chan struct{}, 2)
	serve(t, a, func(ctx context.Context, d *replica.Delivery) error {
		calls <- struct{}{}
		return errors.New("the model is down")
	})
	<-calls
	eventually(t, "done", func() bool { st := stats(t, a); return st.Queued == 0 })
	select {
	case <-calls:
		t.Error("handled twice")
	case <-time.After(100 * time.Millisecond):
	}
}

// A question whose turn comes while its replica has no free worker is
// handed on to a replica that has one, rather than wait.
func TestTurnHandedOnWhenBusy(t *testing.T) {
	srv := newServer(t)
	a := open(t, srv.URL(0), replica.Config{Replica: "a", Workers: 2})
	b := open(t, srv.URL(0), replica.Config{Replica: "b", Workers: 1})
	j := newJournal()
	releaseB, releaseA := make(chan struct{}), make(chan struct{})
	block := func(name string, release chan struct{}) replica.Handler {
		return func(ctx context.Context, d *replica.Delivery) error {
			j.begin(name, d)
			if !strings.HasSuffix(d.ID, "#9") { // the follow-up does not block
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			j.end(d)
			return nil
		}
	}
	// b answers T#0. a answers U#0, takes T#9 with its free worker (T#9
	// waits for T#0), then V#0: now a has no free worker.
	enqueue(t, b, question("T/1.0", 0))
	serve(t, b, block("b", releaseB))
	eventually(t, "b answers T#0", func() bool { return len(j.order("T/1.0")) == 1 })
	enqueue(t, a, question("U/1.0", 0))
	serve(t, a, block("a", releaseA))
	eventually(t, "a answers U#0", func() bool { return len(j.order("U/1.0")) == 1 })
	enqueue(t, a, question("T/1.0", 9))
	eventually(t, "a holds T#9", func() bool { return stats(t, a).Waiting == 1 })
	enqueue(t, a, question("V/1.0", 0))
	eventually(t, "a answers V#0", func() bool { return len(j.order("V/1.0")) == 1 })

	close(releaseB)
	eventually(t, "T#9 answered while a is busy", func() bool { return j.finished("T/1.0#9") })
	j.mu.Lock()
	last := j.starts[len(j.starts)-1]
	j.mu.Unlock()
	if last.d.ID != "T/1.0#9" || last.name != "b" {
		t.Errorf("T#9 answered by %s", last.name)
	}
	if st := stats(t, a); st.Waiting != 0 {
		t.Errorf("a still holds %d waiting", st.Waiting)
	}
	close(releaseA)
}

// Close during Serve ends Serve and hands back what it can.
func TestCloseWhileServing(t *testing.T) {
	srv := newServer(t)
	cfg := replica.Config{Replica: "a", URL: srv.URL(0), Logger: testLogger(t)}
	a, err := replica.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, a, question("C1/1.0", 0))
	started := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- a.Serve(context.Background(), func(ctx context.Context, d *replica.Delivery) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-started
	a.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	b := open(t, srv.URL(0), replica.Config{Replica: "b"})
	if st := stats(t, b); st.Queued != 1 || st.Pending != 0 {
		t.Errorf("after Close: %+v; want the question queued for another replica", st)
	}
}
