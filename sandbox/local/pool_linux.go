//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// A ready sandbox has its namespaces, root file system and cgroup built and
// its init waiting for the one request it will ever run. The pool keeps up
// to Config.Concurrency of them, so a run pays only for Python itself; each
// is used once and destroyed after, exactly like one built on demand.

type ready struct {
	pidfd   *os.File
	reqW    *os.File // init's stdin
	stdoutR *os.File
	stderrR *os.File
	resultR *os.File
	cg      *runCgroup
	exited  chan struct{} // closed when init has exited
	done    sync.Once
}

// prepare builds one ready sandbox.
func (s *Sandbox) prepare() (_ *ready, err error) {
	var files []*os.File // the init's descriptors
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var pipes [4][2]*os.File // request, stdout, stderr, result: [read, write]
	for i := range pipes {
		if pipes[i][0], pipes[i][1], err = os.Pipe(); err != nil {
			for _, p := range pipes[:i] {
				p[0].Close()
				p[1].Close()
			}
			return nil, &sandbox.Error{Op: "pipe", Err: err}
		}
	}
	files = append(files, pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1])
	r := &ready{
		reqW:    pipes[0][1],
		stdoutR: pipes[1][0],
		stderrR: pipes[2][0],
		resultR: pipes[3][0],
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
	for _, f := range []*os.File{r.reqW, r.stdoutR, r.stderrR, r.resultR, r.pidfd} {
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

// take returns a ready sandbox, from the pool when one is waiting there.
// It asks for the pool to be refilled either way.
func (s *Sandbox) take() (*ready, error) {
	s.zmu.Lock()
	closed := s.closed
	s.zmu.Unlock()
	if closed {
		s.drainPool() // one may have arrived after Close drained the pool
		return nil, errClosed
	}
	defer s.wantMore()
	for {
		select {
		case r := <-s.pool:
			select {
			case <-r.exited: // died while waiting (killed from outside?)
				r.discard(s)
				continue
			default:
				return r, nil
			}
		default:
			return s.prepare()
		}
	}
}

func (s *Sandbox) wantMore() {
	select {
	case s.refill <- struct{}{}:
	default:
	}
}

// keepReady fills the pool whenever asked, until stop is closed.
func (s *Sandbox) keepReady() {
	for {
		select {
		case <-s.stop:
			return
		case <-s.refill:
		}
		for len(s.pool) < cap(s.pool) {
			r, err := s.prepare()
			if err != nil {
				s.log.Warn("sandbox: cannot prepare a sandbox ahead of time", "err", err)
				time.Sleep(time.Second) // Run will report it; do not spin
				break
			}
			select {
			case s.pool <- r:
			case <-s.stop:
				r.discard(s)
				return
			}
		}
	}
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
	for {
		select {
		case r := <-s.pool:
			r.discard(s)
		default:
			return
		}
	}
}
