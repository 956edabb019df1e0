package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// ClaimTTL is how long a fire's claim is kept: longer than any replica
// may still take the fire for due (its grace, its retries).
const ClaimTTL = claimTTL

// ErrNotFound is a Store's error for a schedule it does not hold.
var ErrNotFound = errors.New("schedule: no such schedule")

// Store keeps the schedules: a file for a bot alone, Redis for replicas
// (package bot/store).
type Store interface {
	// List returns every schedule, oldest first.
	List(ctx context.Context) ([]Schedule, error)
	// Put adds or replaces a schedule.
	Put(ctx context.Context, sc Schedule) error
	// Update changes a schedule with f in one step (f may run again
	// when another replica changed it meanwhile); f returning nil
	// deletes it. It returns what f returned, or ErrNotFound.
	Update(ctx context.Context, id string, f func(*Schedule) *Schedule) (*Schedule, error)
	// Claim says whether the caller is the one to deal with schedule
	// id's time at: true once, across processes, for ClaimTTL.
	Claim(ctx context.Context, id string, at time.Time) (bool, error)
}

// A Firer answers a schedule's question and tells people what became of
// it. The bot is one.
type Firer interface {
	// Fire answers sc's question afresh at its time at, as a new
	// message in sc's channel, comparing it with sc.Good. It returns the
	// answer's message and figures. A *PauseError pauses the schedule
	// and is not tried again; other errors are.
	Fire(ctx context.Context, sc Schedule, at time.Time) (Fire, error)
	// Tell tells people of a fire that failed after every try, a time
	// skipped, or the schedule paused by the bot.
	Tell(ctx context.Context, sc Schedule, n Notice)
}

// A Notice is what a Firer tells.
type Notice struct {
	Kind   NoticeKind
	At     time.Time // the time concerned
	Err    error     // Failed and Paused: why
	Missed int       // Skipped: the times it stood for
}

// NoticeKind is the kind of a [Notice].
type NoticeKind int

const (
	Failed  NoticeKind = iota + 1 // to the owner: every try failed
	Skipped                       // to the owner: missed while no replica ran, past the grace window
	Paused                        // to an admin (and the owner): the bot paused the schedule
)

// PauseError is a fire's failure that no retry mends: the owner left the
// workspace, the channel was archived. The schedule pauses itself.
type PauseError struct{ Reason string }

func (e *PauseError) Error() string { return e.Reason }

// Scheduler fires the schedules of a Store at their times, each time
// once across replicas (Store.Claim), retrying failures with backoff.
// Every replica runs one.
type Scheduler struct {
	store Store
	firer Firer
	lim   Limits
	log   *slog.Logger
	kick  chan struct{}
	stop  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	inflight map[string]bool
	wg       sync.WaitGroup
}

// New returns a scheduler of st's schedules; start it with Run.
func New(st Store, f Firer, lim Limits, log *slog.Logger) *Scheduler {
	return &Scheduler{store: st, firer: f, lim: lim.WithDefaults(), log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), inflight: map[string]bool{}}
}

// Kick makes the scheduler read the schedules now (after a change this
// process made) rather than at its next poll.
func (s *Scheduler) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Stop makes Run start no more fires and return once those in flight
// end (they go on until their ctx, Run's, ends). A nil Scheduler's Stop
// does nothing.
func (s *Scheduler) Stop() {
	if s != nil {
		s.once.Do(func() { close(s.stop) })
	}
}

// Run fires the schedules until ctx ends or Stop, then waits for the
// fires in flight (which end with ctx).
func (s *Scheduler) Run(ctx context.Context) {
	defer s.wg.Wait()
	for {
		wake := s.Tick(ctx, time.Now())
		t := time.NewTimer(time.Until(wake))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		case <-s.kick:
			t.Stop()
		}
	}
}

// Tick deals with the schedules due at now (starting their fires, which
// go on without it) and returns when to look again. Run calls it.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) time.Time {
	wake := now.Add(s.lim.Poll)
	list, err := s.store.List(ctx)
	if err != nil {
		s.log.Error("schedules: reading", "err", err)
	}
	for _, sc := range list {
		if sc.Paused != "" {
			continue
		}
		p, err := sc.Plan()
		if err != nil {
			s.log.Error("schedules: a schedule that cannot be read", "schedule", sc.ID, "err", err)
			continue
		}
		if !s.busy(sc.ID) {
			if due, n := p.Latest(sc.base(), now); n > 0 {
				s.deal(ctx, sc, due, n, now)
			}
		}
		if next := p.Next(now); !next.IsZero() && next.Before(wake) {
			wake = next
		}
	}
	return wake
}

// Wait waits for the fires in flight.
func (s *Scheduler) Wait() { s.wg.Wait() }

func (s *Scheduler) busy(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[id]
}

// deal fires sc's time due (the latest of n times since its last), or
// skips it when it is past the grace window, once across replicas.
func (s *Scheduler) deal(ctx context.Context, sc Schedule, due time.Time, n int, now time.Time) {
	ok, err := s.store.Claim(ctx, sc.ID, due)
	if err != nil {
		s.log.Error("schedules: claiming a fire", "schedule", sc.ID, "at", due, "err", err)
		return
	}
	if !ok {
		return // another replica has it
	}
	log := s.log.With("schedule", sc.ID, "channel", sc.Channel, "at", due)
	if late := now.Sub(due); late > s.lim.Grace {
		log.Warn("schedules: skipping a time missed while no replica ran", "late", late.Round(time.Second), "missed", n)
		f := Fire{At: due, Done: now, Skipped: true, Missed: n}
		if _, err := s.store.Update(ctx, sc.ID, func(c *Schedule) *Schedule { c.Last = &f; return c }); err != nil && !errors.Is(err, ErrNotFound) {
			log.Error("schedules: recording a skipped time", "err", err)
		}
		s.firer.Tell(ctx, sc, Notice{Kind: Skipped, At: due, Missed: n})
		return
	}
	s.mu.Lock()
	s.inflight[sc.ID] = true
	s.mu.Unlock()
	s.wg.Go(func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, sc.ID)
			s.mu.Unlock()
			s.Kick()
		}()
		s.fire(ctx, log, sc, due, n-1)
	})
}

// fire answers sc at its time at, trying again with backoff, and records
// the outcome.
func (s *Scheduler) fire(ctx context.Context, log *slog.Logger, sc Schedule, at time.Time, missed int) {
	log.Info("schedules: firing", "missed", missed)
	var f Fire
	var err error
	wait := s.lim.Backoff
	for try := 0; ; try++ {
		f, err = s.firer.Fire(ctx, sc, at)
		var pe *PauseError
		if err == nil || ctx.Err() != nil || errors.As(err, &pe) || try == s.lim.Retries {
			break
		}
		log.Warn("schedules: a fire failed; trying again", "try", try+1, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
		wait *= 4
		// Paused or deleted meanwhile: stop trying.
		if cur, ok := s.get(ctx, sc.ID); !ok || cur.Paused != "" {
			log.Info("schedules: paused or deleted while retrying; giving up")
			return
		}
	}
	if err != nil && ctx.Err() != nil {
		log.Warn("schedules: a fire cut short by shutdown", "err", err)
		return
	}
	f.At, f.Done, f.Missed = at, time.Now(), missed
	var pe *PauseError
	paused := errors.As(err, &pe)
	if err != nil {
		f.Err = err.Error()
		f.Figures = nil
	}
	_, uerr := s.store.Update(context.WithoutCancel(ctx), sc.ID, func(c *Schedule) *Schedule {
		c.Last = &f
		if err == nil {
			c.Good = &f
		}
		if paused {
			c.Paused, c.PausedBy = pe.Reason, ""
		}
		return c
	})
	if uerr != nil && !errors.Is(uerr, ErrNotFound) {
		log.Error("schedules: recording a fire", "err", uerr)
	}
	switch {
	case paused:
		log.Warn("schedules: paused", "reason", pe.Reason)
		s.firer.Tell(ctx, sc, Notice{Kind: Paused, At: at, Err: err})
	case err != nil:
		log.Error("schedules: a fire failed after every try", "tries", s.lim.Retries+1, "err", err)
		s.firer.Tell(ctx, sc, Notice{Kind: Failed, At: at, Err: err})
	default:
		log.Info("schedules: fired", "message", f.Message, "figures", len(f.Figures))
	}
}

func (s *Scheduler) get(ctx context.Context, id string) (Schedule, bool) {
	list, err := s.store.List(ctx)
	if err != nil {
		return Schedule{}, true // cannot tell: go on
	}
	for _, sc := range list {
		if sc.ID == id {
			return sc, true
		}
	}
	return Schedule{}, false
}

// Sorted returns m's schedules, oldest first (then by id).
func Sorted(m map[string]Schedule) []Schedule {
	return slices.SortedFunc(maps.Values(m), func(a, b Schedule) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
}

// Clone returns a copy of sc that shares nothing with it.
func (sc Schedule) Clone() Schedule {
	cp := func(f *Fire) *Fire {
		if f == nil {
			return nil
		}
		c := *f
		c.Figures = slices.Clone(f.Figures)
		return &c
	}
	sc.Last, sc.Good = cp(sc.Last), cp(sc.Good)
	return sc
}

// Allow checks that owner may add a schedule to channel under lim, given
// the schedules there are.
func Allow(list []Schedule, channel, owner string, lim Limits) error {
	lim = lim.WithDefaults()
	inChannel, ofOwner := 0, 0
	for _, sc := range list {
		if sc.Channel == channel {
			inChannel++
		}
		if sc.Owner == owner {
			ofOwner++
		}
	}
	switch {
	case inChannel >= lim.PerChannel:
		return fmt.Errorf("this channel holds %d scheduled reports, the most it may here; delete one first (`/sandpiper schedules`)", inChannel)
	case ofOwner >= lim.PerUser:
		return fmt.Errorf("you already own %d scheduled reports, the most one person may here; delete one first (`/sandpiper schedules`)", ofOwner)
	}
	return nil
}
