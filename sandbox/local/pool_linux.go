//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// A ready sandbox has its namespaces, root file system and cgroup built and
// its init waiting for the one request it will ever run. The pool keeps
// Config.Concurrency of them, so a run pays only for Python itself, and,
// with Config.Preload, up to maxWarm warm ones besides; each is used once
// and destroyed after, exactly like one built on demand.

type ready struct {
	pidfd   *os.File
	reqW    *os.File // init's stdin
	stdoutR *os.File
	stderrR *os.File
	resultR *os.File
	eventsR *os.File // how warming went (init's descriptor 4)
	cg      *runCgroup
	exited  chan struct{} // closed when init has exited
	done    sync.Once

	// Warming, guarded by Sandbox.pmu.
	warm    warmState
	paused  bool
	memory  int64         // what the warm interpreter holds, once ready
	active  time.Duration // how long the warm-up has run unpaused, until resumed
	resumed time.Time     // when it last started or resumed
	warmed  bool          // taken after a warm-up was asked for (set by take)
}

// warmState says where a sandbox's warm interpreter is.
type warmState uint8

const (
	warmNone    warmState = iota // none asked for: the run starts cold
	warmWarming                  // asked for; init has not said it is ready
	warmReady                    // it has imported the modules and waits for the run
	warmFailed                   // it failed (init killed it): the run starts cold
)

// prepare builds one ready sandbox.
func (s *Sandbox) prepare() (_ *ready, err error) {
	var files []*os.File // the init's descriptors
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var pipes [5][2]*os.File // request, stdout, stderr, result, events: [read, write]
	for i := range pipes {
		if pipes[i][0], pipes[i][1], err = os.Pipe(); err != nil {
			for _, p := range pipes[:i] {
				p[0].Close()
				p[1].Close()
			}
			return nil, &sandbox.Error{Op: "pipe", Err: err}
		}
	}
	files = append(files, pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1], pipes[4][1])
	r := &ready{
		reqW:    pipes[0][1],
		stdoutR: pipes[1][0],
		stderrR: pipes[2][0],
		resultR: pipes[3][0],
		eventsR: pipes[4][0],
		exited:  make(chan struct{}),
	}
	fail := func(e error) (*ready, error) {
		r.closeFiles()
		if r.cg != nil {
			s.removeCgroup(r.cg)
		}
		return nil, e
	}

	// The mount trees, cloned from the host for this sandbox alone.
	for _, m := range s.mounts {
		if m.Kind != mountTree {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fail(&sandbox.Error{Op: "clone " + m.Source, Err: err})
		}
		files = append(files, os.NewFile(uintptr(fd), m.Source))
		attr := unix.MountAttr{Attr_set: m.Attr}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fail(&sandbox.Error{Op: "lock " + m.Source, Err: err})
		}
	}
	nCgroup := 0
	if s.cgroups != nil {
		lim := s.cfg.Limits
		r.cg, err = s.cgroups.create(runID(), lim.Memory, lim.Processes+1, lim.CPUs) // init counts
		if err != nil {
			return fail(&sandbox.Error{Op: "cgroup", Err: err})
		}
		s.liveCgroups.Add(1)
		files = append(files, r.cg.join...)
		nCgroup = len(r.cg.join)
		r.cg.join = nil // closed with files
	}

	r.pidfd, err = s.forkInit(files)
	if err != nil {
		return fail(&sandbox.Error{Op: "start", Err: err})
	}
	// The pidfd turns readable when init exits; the runtime's poller
	// waits for that, so no thread blocks per sandbox.
	rc, err := r.pidfd.SyscallConn()
	if err != nil {
		return fail(&sandbox.Error{Op: "start", Err: err})
	}
	go func() {
		defer close(r.exited)
		exited := func(fd uintptr, timeout int) bool {
			for {
				n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, timeout)
				if err != unix.EINTR {
					return n > 0 || err != nil
				}
			}
		}
		err := rc.Read(func(fd uintptr) bool { return exited(fd, 0) })
		if err != nil && !errors.Is(err, os.ErrClosed) {
			// Not pollable here: wait on a thread instead.
			rc.Control(func(fd uintptr) { exited(fd, -1) })
		}
	}()
	// Init reads the setup as soon as it starts.
	if _, err := r.reqW.Write(s.setupBytes(nCgroup)); err != nil {
		r.discard(s)
		return nil, &sandbox.Error{Op: "setup", Err: err}
	}
	return r, nil
}

// kill ends the sandbox at once.
func (r *ready) kill() {
	if rc, err := r.pidfd.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.PidfdSendSignal(int(fd), unix.SIGKILL, nil, 0) })
	}
}

func (r *ready) closeFiles() {
	for _, f := range []*os.File{r.reqW, r.stdoutR, r.stderrR, r.resultR, r.eventsR, r.pidfd} {
		if f != nil {
			f.Close()
		}
	}
}

// discard destroys the sandbox: its processes, then its cgroup. Its mounts
// and namespaces go with its last process.
func (r *ready) discard(s *Sandbox) {
	r.done.Do(func() {
		r.kill()
		<-r.exited
		r.closeFiles()
		if r.cg != nil {
			s.removeCgroup(r.cg)
		}
	})
}

func (s *Sandbox) removeCgroup(cg *runCgroup) {
	if err := cg.remove(); err != nil {
		s.log.Warn("sandbox: cleanup", "err", err)
		return
	}
	s.liveCgroups.Add(-1)
}

func (r *ready) hasExited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// send writes a message to init, between the setup and the run.
func (r *ready) send(b []byte) error {
	_, err := r.reqW.Write(b)
	return err
}

// Ranks of the sandboxes in the pool for a run: take prefers the lowest.
const (
	rankWarm    = iota // warm, and the run's memory limit leaves it room
	rankWarming        // still importing (the run waits for the rest)
	rankCold
	rankNone // not for this run
)

// rank says how well r suits a run with limits lim whose code imports
// modules beyond the standard library (wantWarm), or not: a run that
// imports only the standard library starts faster in a cold sandbox than
// in a warm one, whose exit tears the preloaded modules down, so it
// takes a cold one (or one built now) and leaves the warm ones.
func (s *Sandbox) rank(r *ready, lim sandbox.Limits, wantWarm bool) int {
	switch r.warm {
	case warmReady:
		if wantWarm && s.fits(r.memory, lim) {
			return rankWarm
		}
	case warmWarming:
		if wantWarm && s.fits(s.warmStats.Memory, lim) {
			return rankWarming
		}
	default:
		return rankCold
	}
	return rankNone
}

// fits reports whether a run with limits lim may use a warm interpreter
// holding memory: what it holds counts against the run's memory limit, so
// it may take at most half of it. Not knowing yet, the run's limit must
// be at least the sandbox's default, under which warming is done. (A
// smaller limit could not even be set on the run's cgroup while the warm
// interpreter holds more.)
func (s *Sandbox) fits(memory int64, lim sandbox.Limits) bool {
	if memory <= 0 {
		return lim.Memory >= s.cfg.Limits.Memory
	}
	return lim.Memory >= 2*memory
}

// isCold reports whether r serves a run cold: it was never warmed, or
// its warm-up failed.
func (r *ready) isCold() bool { return r.warm == warmNone || r.warm == warmFailed }

// take returns a sandbox for a run with limits lim and code. A run whose
// code imports modules beyond the standard library takes a warm one whose
// warm interpreter leaves it room, else one still warming (it then waits
// for the rest of the imports, as a cold run would for its own), else a
// cold one; any other run a cold one (a run that restores a state counts
// as importing: its values may need them). Without one, it builds one now. A
// warm-up under way in the pool is paused: the run needs the CPU. It asks
// for the pool to be refilled either way.
func (s *Sandbox) take(lim sandbox.Limits, code string, restores bool) (*ready, error) {
	s.zmu.Lock()
	closed := s.closed
	s.zmu.Unlock()
	if closed {
		s.drainPool() // one may have arrived after Close drained the pool
		return nil, errClosed
	}
	defer s.wantMore()
	beyond := len(s.preload) > 0 && (restores || importsBeyond(code, s.stdlib))
	s.pmu.Lock()
	var dead []*ready
	s.pool = slices.DeleteFunc(s.pool, func(r *ready) bool {
		if !r.hasExited() { // died while waiting (killed from outside?)
			return false
		}
		dead = append(dead, r)
		if s.warming == r {
			s.warming = nil
		}
		return true
	})
	best, bestRank := -1, rankNone
	wantWarm := beyond || len(s.preload) > 0 && s.alwaysWarm
	for i, r := range s.pool {
		if k := s.rank(r, lim, wantWarm); k < bestRank {
			best, bestRank = i, k
		}
	}
	var r *ready
	if best >= 0 {
		r = s.pool[best]
		s.pool = slices.Delete(s.pool, best, best+1)
		if s.warming == r {
			s.warming = nil // init lets it go on for this run
		}
		r.warmed = r.warm != warmNone
	}
	s.pauseWarming()
	s.pmu.Unlock()
	for _, d := range dead {
		d.discard(s)
	}
	if r == nil {
		return s.prepare()
	}
	return r, nil
}

// pauseWarming stops the warm-up under way, if any. s.pmu is held.
func (s *Sandbox) pauseWarming() {
	w := s.warming
	if w == nil || w.paused {
		return
	}
	w.send(encodePause(true))
	w.paused = true
	w.active += time.Since(w.resumed)
}

// runStarted and runEnded count the runs in flight: warming waits until
// none is.
func (s *Sandbox) runStarted() {
	s.pmu.Lock()
	s.inflight++
	s.pmu.Unlock()
}

func (s *Sandbox) runEnded() {
	s.pmu.Lock()
	s.inflight--
	if s.inflight == 0 {
		s.idleAt = time.Now()
	}
	s.pmu.Unlock()
	s.wantMore()
}

func (s *Sandbox) wantMore() {
	select {
	case s.refill <- struct{}{}:
	default:
	}
}

// keepReady fills the pool, and warms it, whenever asked, until stop is
// closed. Warming happens here alone: a Sandbox without a pool never
// warms.
func (s *Sandbox) keepReady() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-s.stop:
			timer.Stop()
			return
		case <-s.refill:
		case <-timer.C:
		}
		if !s.fillPool() {
			return
		}
		timer.Stop()
		if d := s.warmStep(); d > 0 {
			timer.Reset(d)
		}
	}
}

// fillPool prepares sandboxes until the pool holds Config.Concurrency
// cold ones (besides the warm ones); false: stopped.
func (s *Sandbox) fillPool() bool {
	for {
		s.pmu.Lock()
		n := 0
		for _, r := range s.pool {
			if r.isCold() {
				n++
			}
		}
		s.pmu.Unlock()
		if n >= s.cfg.Concurrency {
			return true
		}
		r, err := s.prepare()
		if errors.Is(err, errClosed) {
			return false
		}
		if err != nil {
			s.log.Warn("sandbox: cannot prepare a sandbox ahead of time", "err", err)
			time.Sleep(time.Second) // Run will report it; do not spin
			return true
		}
		s.pmu.Lock()
		select {
		case <-s.stop:
			s.pmu.Unlock()
			r.discard(s)
			return false
		default:
		}
		s.pool = append(s.pool, r)
		s.pmu.Unlock()
	}
}

// Warming. While no run is in flight, and has not been for warmIdle, the
// pool warms its sandboxes one at a time, up to maxWarm of them, besides
// the Config.Concurrency cold ones it keeps for other runs: a
// warm-up costs the CPU of the imports (about a second of one CPU for
// numpy, pandas and matplotlib), which a burst of runs must not compete
// with. A run that starts pauses the warm-up under way (SIGSTOP); it goes
// on once the runs are over. The first warm-up that fails turns warming
// off for the Sandbox's life, with one log line: its runs start cold.
const (
	defaultWarmIdle = 100 * time.Millisecond
	// warmTimeout bounds a warm-up's unpaused time: one that takes
	// longer counts as failed.
	warmTimeout = 2 * time.Minute
)

// maxWarm is how many warm sandboxes the pool keeps: each holds the
// preloaded modules' memory (about 60 MB for numpy, pandas and
// matplotlib), and two cover the runs of one answer.
func maxWarm(concurrency int) int { return min(concurrency, 2) }

// warmStep starts, resumes or times out a warm-up, as the runs allow,
// and returns when to look again (0: when woken).
func (s *Sandbox) warmStep() time.Duration {
	if len(s.preload) == 0 {
		return 0
	}
	select {
	case <-s.cachesDone: // warm with the caches in /tmp (they come with a fresh pool)
	default:
		return 0
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.warmErr != nil || s.inflight > 0 {
		return 0
	}
	if wait := s.warmIdle - time.Since(s.idleAt); wait > 0 {
		return wait
	}
	if w := s.warming; w != nil {
		if w.paused {
			w.send(encodePause(false))
			w.paused = false
			w.resumed = time.Now()
		}
		left := warmTimeout - w.active - time.Since(w.resumed)
		if left > 0 {
			return left
		}
		s.failWarming(fmt.Sprintf("the warm-up took more than %v", warmTimeout))
		s.pool = slices.DeleteFunc(s.pool, func(r *ready) bool { return r == w })
		s.warming = nil
		go w.discard(s)
		return 0
	}
	warm := 0
	var next *ready
	for _, r := range s.pool {
		switch {
		case r.warm == warmReady:
			warm++
		case r.warm == warmNone && next == nil && !r.hasExited():
			next = r
		}
	}
	if warm >= s.maxWarm || next == nil {
		return 0
	}
	if err := next.send(s.warmMsg); err != nil {
		return 0 // init is gone: take will find it dead
	}
	next.warm = warmWarming
	next.resumed = time.Now()
	s.warming = next
	go s.watchWarm(next)
	s.wantMore() // a cold one to replace it
	return warmTimeout
}

// watchWarm reads what init says of r's warm-up until the program starts
// (or init ends).
func (s *Sandbox) watchWarm(r *ready) {
	for {
		ev, err := decodeEvent(r.eventsR)
		s.pmu.Lock()
		if s.warming == r {
			s.warming = nil
		}
		switch {
		case err != nil: // the run started, or init ended
			if r.warm == warmWarming {
				r.warm = warmNone
			}
		case ev.Ready:
			r.warm, r.memory = warmReady, ev.Memory
			s.warmStats = ev
			s.warmCount++
		default:
			r.warm = warmFailed
			s.failWarming(ev.Failed)
		}
		close(s.warmNews)
		s.warmNews = make(chan struct{})
		s.pmu.Unlock()
		s.wantMore()
		if err != nil {
			return
		}
	}
}

// failWarming turns warming off, saying why once. s.pmu is held.
func (s *Sandbox) failWarming(why string) {
	if s.warmErr != nil {
		return
	}
	s.warmErr = errors.New(why)
	s.log.Warn("sandbox: warming failed; runs start cold from now on", "preload", strings.Join(s.preload, ","), "err", why)
}

// setupBytes returns the setup every sandbox of s gets, encoded once for
// each version of the caches.
func (s *Sandbox) setupBytes(nCgroup int) []byte {
	tmp := s.tmpFiles.Load()
	if c := s.setup.Load(); c != nil && c.tmp == tmp && c.nCgroup == nCgroup {
		return c.bytes
	}
	setup := initSetup{
		Python:    s.python.Executable,
		Env:       s.env,
		Mounts:    s.initMounts,
		EtcFiles:  s.etc,
		DiskSize:  s.cfg.Limits.DiskSize,
		CgroupFDs: nCgroup,
		Seccomp:   s.seccomp,
		Bootstrap: s.bootstrap,
		Runner:    s.runner,
	}
	if tmp != nil {
		setup.TmpFiles = *tmp
	}
	c := &encodedSetup{tmp: tmp, nCgroup: nCgroup, bytes: setup.encode()}
	s.setup.Store(c)
	return c.bytes
}

type encodedSetup struct {
	tmp     *[]sandbox.File
	nCgroup int
	bytes   []byte
}

// stopPool stops refilling and destroys the waiting sandboxes.
func (s *Sandbox) stopPool() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.drainPool()
}

// drainPool destroys the waiting sandboxes.
func (s *Sandbox) drainPool() {
	s.pmu.Lock()
	pool := s.pool
	s.pool, s.warming = nil, nil
	s.pmu.Unlock()
	for _, r := range pool {
		r.discard(s)
	}
}

// waitWarm waits until a sandbox of the pool is warm, and returns nil, or
// until warming fails (its error), or ctx ends.
func (s *Sandbox) waitWarm(ctx context.Context) error {
	if len(s.preload) == 0 {
		return errors.New("sandbox: nothing to preload")
	}
	for {
		s.pmu.Lock()
		err, news := s.warmErr, s.warmNews
		ready := slices.ContainsFunc(s.pool, func(r *ready) bool { return r.warm == warmReady })
		s.pmu.Unlock()
		if err != nil {
			return fmt.Errorf("sandbox: warming failed: %w", err)
		}
		if ready {
			return nil
		}
		s.wantMore()
		select {
		case <-news:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Warmth says, for doctor, how runs start: whether a run that imports
// modules beyond the standard library starts warm, what is preloaded (and
// left out) and what a warm-up costs. It waits, within ctx, for the pool's
// first warm-up to end, and fails when there is nothing it could preload
// or the warm-up failed.
func (s *Sandbox) Warmth(ctx context.Context) (string, error) {
	if len(s.cfg.Preload) == 0 {
		return "runs start cold: nothing to preload", nil
	}
	left := ""
	if len(s.missing) > 0 {
		left = "; left out, not installed: " + strings.Join(s.missing, ", ")
	}
	if len(s.preload) == 0 {
		return "", fmt.Errorf("runs start cold: none of the modules to preload is installed (%s)", strings.Join(s.missing, ", "))
	}
	if err := s.waitWarm(ctx); err != nil {
		return "", fmt.Errorf("runs start cold: %w%s", err, left)
	}
	s.pmu.Lock()
	st := s.warmStats
	s.pmu.Unlock()
	return fmt.Sprintf("runs importing beyond the standard library start warm: %s preloaded in %.1f s (%.1f s of CPU, while idle); a warm sandbox holds %d MiB%s",
		strings.Join(s.preload, ", "), st.Wall.Seconds(), st.CPU.Seconds(), st.Memory>>20, left), nil
}
