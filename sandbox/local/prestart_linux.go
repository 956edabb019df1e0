//go:build linux && cgo && (amd64 || arm64)

package local

// #include <stdlib.h>
// #include "sandbox.h"
import "C"

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A one-shot run may be started before the Go runtime (prestart.c): a
// command's constructor calls PrestartRun with the program and the path
// of a plan, which New writes on a one-shot run (Config.OneShot) and reads
// back to decide whether to take the sandbox over.
//
// The plan is everything prestart.c needs, in host byte order: PLAN_MAGIC;
// the interpreter's path, size and modification time (seconds and
// nanoseconds); the host id the sandbox user maps to; the mount trees to
// clone (path and attributes); the cgroup hierarchies (the parent of the
// runs' groups and the limits to set, each a file, a value and whether it
// may be missing); init's setup; and the run's message after its code.
// Strings are a u32 length and the bytes, the setup and the run's end a
// u64 length and the bytes.

// prestartSuffix names a prestarted run's group: p<pid>.exec.
const prestartSuffix = ".exec"

// prestarted is what the constructor did.
type prestarted struct {
	plan     []byte   // the plan it read, if any
	planPath string   // where the plan is kept
	code     string   // the program it started
	r        *ready   // the sandbox, or nil when none was started
	dirs     []string // its cgroup, as prestart.c made it
}

// finishedRun is a prestarted run the C side read to its end.
type finishedRun struct {
	stdout, stderr []byte
	// Sizes written in all (the buffers hold at most the output cap).
	stdoutSize, stderrSize int64
	result                 []byte // init's report
	killed                 bool   // killed from the host: init did not end it in time
}

// takePrestart returns what a constructor did before the runtime, once;
// nil when none was asked to.
func takePrestart() *prestarted {
	ps := &C.sandpiper_prestart
	if ps.state == C.PRESTART_NONE {
		return nil
	}
	p := &prestarted{
		planPath: C.GoString(&ps.plan_path[0]),
		code:     C.GoStringN(ps.code, C.int(ps.code_len)),
	}
	if ps.plan != nil {
		p.plan = C.GoBytes(unsafe.Pointer(ps.plan), C.int(ps.plan_len))
		C.free(unsafe.Pointer(ps.plan))
	}
	if ps.state == C.PRESTART_STARTED || ps.state == C.PRESTART_FINISHED {
		file := func(fd C.int32_t, name string) *os.File {
			if fd < 0 {
				return nil
			}
			unix.SetNonblock(int(fd), true) // for the runtime's poller
			return os.NewFile(uintptr(fd), name)
		}
		p.r = &ready{
			pidfd:   file(ps.pidfd, "pidfd"),
			stdoutR: file(ps.stdout_r, "stdout"),
			stderrR: file(ps.stderr_r, "stderr"),
			resultR: file(ps.result_r, "result"),
			eventsR: file(ps.events_r, "events"),
			exited:  make(chan struct{}),
			sent:    true,
			started: time.Unix(0, int64(ps.started_ns)),
		}
		for i := range int(ps.ncgroups) {
			p.dirs = append(p.dirs, C.GoString(&ps.cgroups[i][0]))
		}
		if ps.state == C.PRESTART_FINISHED {
			buf := func(b *C.struct_prestart_buf) []byte {
				defer C.free(unsafe.Pointer(b.data))
				return C.GoBytes(unsafe.Pointer(b.data), C.int(b.len))
			}
			p.r.finished = &finishedRun{
				stdoutSize: int64(ps.out.size),
				stderrSize: int64(ps.err.size),
				killed:     ps.killed != 0,
			}
			p.r.finished.stdout = buf(&ps.out)
			p.r.finished.stderr = buf(&ps.err)
			p.r.finished.result = buf(&ps.result)
		}
		if err := p.r.watch(); err != nil {
			p.r = nil // not expected of a pidfd; its sandbox goes with the process
		}
	}
	*ps = C.struct_prestart{}
	return p
}

// adoptPrestart takes over the sandbox started before the runtime if it
// was started from the plan s makes, and keeps that plan for the next
// one-shot process.
func (s *Sandbox) adoptPrestart(p *prestarted) {
	plan, rc := s.oneShotPlan()
	same := bytes.Equal(plan, p.plan)
	if !same && p.planPath != "" {
		if err := writePlan(p.planPath, plan); err != nil {
			s.log.Debug("sandbox: could not keep the one-shot plan", "err", err)
		}
	}
	if p.r == nil {
		return
	}
	if !same {
		// Started from an older plan: its limits or mounts may not be
		// this configuration's. The program runs again, here, and the
		// sandbox goes with the group prestart.c made.
		if len(p.dirs) > 0 {
			p.r.cg = &runCgroup{dirs: p.dirs}
			s.liveCgroups.Add(1)
		}
		s.log.Info("sandbox: the plan kept in " + p.planPath + " is out of date: the run starts again")
		go p.r.discard(s)
		return
	}
	// The same plan: prestart.c made the group layout names (its
	// parents are in the plan), whose files run reads.
	if rc != nil {
		p.r.cg = rc
		s.liveCgroups.Add(1)
	}
	s.log.Info("sandbox: the run started before the runtime, from the plan kept in " + p.planPath)
	s.prestart = p
}

// oneShotPlan returns the plan of a one-shot run of s (see prestarted),
// and the group prestart.c makes from it in this process, if any.
func (s *Sandbox) oneShotPlan() ([]byte, *runCgroup) {
	var b []byte
	str := func(v string) {
		b = binary.NativeEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	blob := func(v []byte) {
		b = binary.NativeEndian.AppendUint64(b, uint64(len(v)))
		b = append(b, v...)
	}
	b = append(b, C.PLAN_MAGIC...)
	var size, sec, nsec int64
	var st unix.Stat_t
	if err := unix.Stat(s.python.Executable, &st); err == nil {
		size, sec, nsec = st.Size, st.Mtim.Sec, st.Mtim.Nsec
	}
	str(s.python.Executable)
	for _, v := range []int64{size, sec, nsec} {
		b = binary.NativeEndian.AppendUint64(b, uint64(v))
	}
	b = binary.NativeEndian.AppendUint32(b, uint32(s.hostID))
	// The C side may print a simple result alone, unless the interpreter
	// depends on the working directory (a shim's choice), which the
	// plan's name does not hold.
	var flags uint32
	if !s.python.Shim {
		flags |= C.PLAN_FINISH
	}
	b = binary.NativeEndian.AppendUint32(b, flags)
	var trees []hostMount
	for _, m := range s.mounts {
		if m.Kind == mountTree {
			trees = append(trees, m)
		}
	}
	b = binary.NativeEndian.AppendUint32(b, uint32(len(trees)))
	for _, m := range trees {
		str(m.Source)
		b = binary.NativeEndian.AppendUint64(b, m.Attr)
	}
	var rc *runCgroup
	var dirs []cgroupDir
	if s.cgroups != nil {
		lim := s.cfg.Limits
		name := "p" + strconv.Itoa(os.Getpid()) + prestartSuffix
		rc, dirs = s.cgroups.layout(func(parent string) string {
			// The runs' parent is this process's group; a prestarted
			// run's group is its sibling.
			return filepath.Join(filepath.Dir(parent), name)
		}, lim.Memory, lim.Processes+1, lim.CPUs) // init counts
	}
	b = binary.NativeEndian.AppendUint32(b, uint32(len(dirs)))
	for _, d := range dirs {
		str(filepath.Dir(d.dir))
		b = binary.NativeEndian.AppendUint32(b, uint32(len(d.settings)))
		for _, st := range d.settings {
			str(st.file)
			str(st.value)
			optional := uint32(0)
			if st.optional() {
				optional = 1
			}
			b = binary.NativeEndian.AppendUint32(b, optional)
		}
	}
	blob(s.setupBytes(len(dirs)))
	run := encodeRun("", nil, s.cfg.Limits)
	blob(run[12:]) // after the (empty) code's message
	return b, rc
}

// maxPlans bounds the plans kept in a directory: one per configuration
// (and binary) exec ran with; the least recently written go first.
const maxPlans = 16

// writePlan keeps plan in path, readable by this user alone, and removes
// the oldest plans beyond maxPlans beside it.
func writePlan(path string, plan []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".plan-*")
	if err != nil {
		return err
	}
	_, err = f.Write(plan)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("keep plan: %w", err)
	}
	prunePlans(dir, maxPlans)
	return nil
}

// prunePlans removes the least recently written exec-*.plan files in dir
// beyond keep.
func prunePlans(dir string, keep int) {
	paths, _ := filepath.Glob(filepath.Join(dir, "exec-*.plan"))
	if len(paths) <= keep {
		return
	}
	type plan struct {
		path string
		mod  time.Time
	}
	plans := make([]plan, 0, len(paths))
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil {
			plans = append(plans, plan{p, fi.ModTime()})
		}
	}
	slices.SortFunc(plans, func(a, b plan) int { return b.mod.Compare(a.mod) })
	for _, p := range plans[min(keep, len(plans)):] {
		os.Remove(p.path)
	}
}

// prestartedRun reports whether a run was started before the runtime,
// without taking it.
func prestartedRun() bool {
	st := C.sandpiper_prestart.state
	return st == C.PRESTART_STARTED || st == C.PRESTART_FINISHED
}

// takePrestarted returns the run started before the runtime, if it runs
// code; a sandbox started for other code is discarded.
func (s *Sandbox) takePrestarted(code string) *ready {
	s.zmu.Lock()
	p := s.prestart
	s.prestart = nil
	s.zmu.Unlock()
	if p == nil {
		return nil
	}
	if p.code != code {
		go p.r.discard(s)
		return nil
	}
	return p.r
}
