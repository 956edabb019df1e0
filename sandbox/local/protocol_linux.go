//go:build linux && cgo && (amd64 || arm64)

package local

// #include "sandbox.h"
import "C"

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// The host and a sandbox's init (init.c) talk over three pipes: the host
// writes the setup when it prepares the sandbox, then perhaps asks for a
// warm interpreter (and pauses and resumes it), then writes the run when it
// takes it, all to init's stdin; init writes the result to its descriptor
// 3, and how warming went to its descriptor 4, until the program starts.
// Init's stdout and stderr are the program's, passed straight through. Messages
// are a 32-bit type, a 64-bit length and the bytes, in host byte order;
// the types and fixed layouts are in sandbox.h.

const zygoteArg0 = C.ZYGOTE_ARG0

// mountKind says how init puts a host path into the new root.
type mountKind uint32

const (
	mountTree    mountKind = C.MOUNT_TREE    // move the detached tree passed as a descriptor
	mountSymlink mountKind = C.MOUNT_SYMLINK // create a symbolic link (Target -> Link)
	mountDir     mountKind = C.MOUNT_DIR     // create an empty directory
	mountBind    mountKind = C.MOUNT_BIND    // bind-mount the host path Source (when the host cannot clone trees)
)

// initMount is one entry of the sandbox's root as init sees it.
type initMount struct {
	Kind   mountKind
	Target string // absolute path inside the sandbox
	Link   string // for mountSymlink
	IsFile bool   // for mountTree and mountBind: the root is a file, not a directory
	Source string // for mountBind: the host path
	Attr   uint64 // for mountBind: MOUNT_ATTR_* flags to set
}

// initSetup is what init needs to build the sandbox.
type initSetup struct {
	Python    string   // absolute path of the interpreter, inside the sandbox
	Env       []string // the program's whole environment
	Mounts    []initMount
	EtcFiles  []sandbox.File // generated files under /etc (passwd, group, hosts)
	TmpFiles  []sandbox.File // placed under /tmp (caches prepared at start-up)
	DiskSize  int64          // size of the writable tmpfs until the run sets its own
	CgroupFDs int            // cgroup.procs files passed after the trees; init joins them
	Seccomp   []unix.SockFilter
	Bootstrap string // the warm interpreter's Python source; empty: the sandbox is never warmed
	Runner    string // the Python source that runs a stateful run's code; empty: no run keeps state
}

type encoder struct{ buf bytes.Buffer }

func (e *encoder) msg(typ uint32, parts ...[]byte) {
	var n uint64
	for _, p := range parts {
		n += uint64(len(p))
	}
	var h [12]byte
	binary.NativeEndian.PutUint32(h[:4], typ)
	binary.NativeEndian.PutUint64(h[4:], n)
	e.buf.Write(h[:])
	for _, p := range parts {
		e.buf.Write(p)
	}
}

func (e *encoder) file(typ uint32, f sandbox.File) {
	e.msg(typ, []byte(f.Name), []byte{0}, f.Data)
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

// encode returns the setup's bytes; they are the same for every sandbox of
// a Sandbox, so they are built once.
func (s *initSetup) encode() []byte {
	var e encoder
	e.msg(C.M_PYTHON, []byte(s.Python))
	for _, kv := range s.Env {
		e.msg(C.M_ENV, []byte(kv))
	}
	for _, m := range s.Mounts {
		isFile := uint32(0)
		if m.IsFile {
			isFile = 1
		}
		e.msg(C.M_MOUNT, u32(uint32(m.Kind)), u32(isFile), u64(m.Attr),
			[]byte(m.Target), []byte{0}, []byte(m.Link), []byte{0}, []byte(m.Source), []byte{0})
	}
	for _, f := range s.EtcFiles {
		e.file(C.M_ETC, f)
	}
	for _, f := range s.TmpFiles {
		e.file(C.M_TMP, f)
	}
	e.msg(C.M_DISK, u64(uint64(s.DiskSize)))
	e.msg(C.M_CGROUPS, u32(uint32(s.CgroupFDs)))
	filter := unsafe.Slice((*byte)(unsafe.Pointer(&s.Seccomp[0])), len(s.Seccomp)*int(unsafe.Sizeof(s.Seccomp[0])))
	e.msg(C.M_SECCOMP, filter)
	if s.Bootstrap != "" {
		e.msg(C.M_BOOTSTRAP, []byte(s.Bootstrap))
	}
	if s.Runner != "" {
		e.msg(C.M_RUNNER, []byte(s.Runner))
	}
	e.msg(C.M_SETUP_END)
	return e.buf.Bytes()
}

// encodeRun returns the bytes of the one run.
func encodeRun(code string, files []sandbox.File, l sandbox.Limits) []byte {
	var e encoder
	e.msg(C.M_CODE, []byte(code))
	for _, f := range files {
		e.file(C.M_FILE, f)
	}
	lim := cLimits(l, len(files))
	e.msg(C.M_LIMITS, unsafe.Slice((*byte)(unsafe.Pointer(&lim)), unsafe.Sizeof(lim)))
	e.msg(C.M_RUN_END)
	return e.buf.Bytes()
}

// encodeStateHeader returns the head of the message that makes the run
// keep state: the state's n bytes follow it (written as they are, not
// copied), and the run's own messages after them. max bounds the state
// the run may save.
func encodeStateHeader(max int64, n int) []byte {
	var e encoder
	var h [12]byte
	binary.NativeEndian.PutUint32(h[:4], C.M_STATE)
	binary.NativeEndian.PutUint64(h[4:], 8+uint64(n))
	e.buf.Write(h[:])
	e.buf.Write(u64(uint64(max)))
	return e.buf.Bytes()
}

// encodeWarm returns the message that starts the warm interpreter, under
// l until the run sets its own limits.
func encodeWarm(l sandbox.Limits) []byte {
	var e encoder
	lim := cLimits(l, 0)
	e.msg(C.M_WARM, unsafe.Slice((*byte)(unsafe.Pointer(&lim)), unsafe.Sizeof(lim)))
	return e.buf.Bytes()
}

// encodePause returns the message that stops (pause) or resumes the warm
// interpreter.
func encodePause(pause bool) []byte {
	var e encoder
	if pause {
		e.msg(C.M_PAUSE)
	} else {
		e.msg(C.M_RESUME)
	}
	return e.buf.Bytes()
}

func cLimits(l sandbox.Limits, inputs int) C.struct_limits {
	return C.struct_limits{
		timeout_ns: C.uint64_t(l.Timeout),
		memory:     C.uint64_t(l.Memory),
		processes:  C.uint64_t(l.Processes),
		cputime_ns: C.uint64_t(l.CPUTime),
		open_files: C.uint64_t(l.OpenFiles),
		disk:       C.uint64_t(l.DiskSize),
		output:     C.uint64_t(l.Output),
		files:      C.uint64_t(l.Files),

		list_entries: sandbox.MaxListed,
		list_depth:   sandbox.MaxDepth,
		list_names:   C.uint64_t(sandbox.Candidates(l, inputs)),
		path_max:     sandbox.MaxPathLen,
		omits:        sandbox.MaxOmitted,
		omit_bytes:   sandbox.MaxOmittedBytes,
		omit_name:    sandbox.MaxOmittedName,
	}
}

// warmEvent is what init says about warming, on its events pipe, before
// the program starts.
type warmEvent struct {
	// Ready: the warm interpreter has imported the modules and waits
	// for the run. Memory is what it holds (resident anonymous and
	// shared), CPU and Wall what getting ready took.
	Ready     bool
	Memory    int64
	CPU, Wall time.Duration
	Failed    string // why it could not start or ended before the run
}

// decodeEvent reads one event.
func decodeEvent(r io.Reader) (warmEvent, error) {
	var h [12]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return warmEvent{}, err
	}
	typ, n := binary.NativeEndian.Uint32(h[:4]), binary.NativeEndian.Uint64(h[4:])
	switch typ {
	case C.E_WARM_READY:
		var wm C.struct_warm_msg
		if err := readStruct(r, typ, n, &wm); err != nil {
			return warmEvent{}, err
		}
		return warmEvent{Ready: true, Memory: int64(min(uint64(wm.memory), 1<<62)), CPU: time.Duration(min(uint64(wm.cpu_ns), 1<<62)), Wall: time.Duration(min(uint64(wm.wall_ns), 1<<62))}, nil
	case C.E_WARM_FAILED:
		data, err := readMessage(r, typ, n, maxTextMessage)
		if err != nil {
			return warmEvent{}, err
		}
		if len(data) == 0 {
			data = []byte("no reason given")
		}
		return warmEvent{Failed: string(data)}, nil
	}
	return warmEvent{}, fmt.Errorf("unknown event %d", typ)
}

// initResult is what init reports.
type initResult struct {
	// Err is set when init could not build the sandbox or start the
	// program: a machinery failure.
	Err string
	// The program's end.
	Exited   bool
	ExitCode int
	Signal   int
	TimedOut bool
	DiskFull bool
	Started  time.Duration // from the run's arrival to the program's exec
	Ended    time.Duration // from the run's arrival to the program's end
	Reported time.Duration // from the run's arrival to this result
	Files    []sandbox.File
	// Omitted holds at most sandbox.MaxOmitted entries of
	// sandbox.MaxOmittedBytes, then a sandbox.MoreOmitted entry when any
	// were left out.
	Omitted []string
	// Capped is set when the listing of the files was cut, by init or
	// here: the run's result gets sandbox.CapResultList.
	Capped bool
	// RefusedSockets counts the program's socket calls refused for their
	// family.
	RefusedSockets uint64
	// Warm is set when the program ran in the warm interpreter.
	Warm bool
	// StateReport and State are what a stateful run left in its state
	// directory: the runner's report and the state it saved (nil when
	// absent).
	StateReport, State []byte

	// MemoryKilled is what init's memory watcher counted when it ended
	// the run for holding more than the memory limit; 0 if it did not.
	MemoryKilled int64
	// MemoryWatch is the CPU time the watcher took.
	MemoryWatch time.Duration
}

// The result's message types and fixed sizes, for the tests (which cannot
// use cgo).
const (
	rErr       = C.R_ERR
	rStatus    = C.R_STATUS
	rFile      = C.R_FILE
	rOmit      = C.R_OMIT
	rTimes     = C.R_TIMES
	rEnd       = C.R_END
	rCut       = C.R_CUT
	rStateRep  = C.R_STATE_REPORT
	rState     = C.R_STATE
	cStateDir  = C.STATE_DIR
	cStateRep  = C.STATE_REPORT_MAX
	statusSize = C.sizeof_struct_status_msg
	cutSize    = C.sizeof_struct_cut_msg

	eWarmReady  = C.E_WARM_READY
	eWarmFailed = C.E_WARM_FAILED
	warmMsgSize = C.sizeof_struct_warm_msg
)

// Bounds on the messages init sends, checked whatever init does: init.c
// keeps well within them, so a message past its bound means a broken
// stream and is an error. Nothing is allocated for what a length merely
// claims: a file's data is allocated as it arrives.
const (
	maxTextMessage = 4 << 10 // R_ERR (fail's text) and R_OMIT ("name (why)")
	maxFileName    = sandbox.MaxPathLen
	firstChunk     = 64 << 10 // a file's first allocation; then it doubles
)

// decodeResult reads init's report to its end. lim is the run's (with its
// defaults): the files may hold lim.DiskSize bytes in all, and a stream
// with more is an error; more than lim.Files files, or more omitted
// entries than the sandbox.MaxOmitted* caps allow, are cut and counted.
func decodeResult(r io.Reader, lim sandbox.Limits) (initResult, error) {
	lim = lim.WithDefaults()
	var res initResult
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		h         [12]byte
		status    bool
		cut       bool
		budget    = lim.DiskSize
		omitBytes int
		unlisted  int64
		stopped   bool // init's walk stopped short
		skipped   bool // init did not look into a directory
	)
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return res, fmt.Errorf("read result: %w", err)
		}
		typ, n := binary.NativeEndian.Uint32(h[:4]), binary.NativeEndian.Uint64(h[4:])
		switch typ {
		case C.R_ERR:
			data, err := readMessage(br, typ, n, maxTextMessage)
			if err != nil {
				return res, err
			}
			res.Err = string(data)
		case C.R_STATUS:
			var sm C.struct_status_msg
			if err := readStruct(br, typ, n, &sm); err != nil {
				return res, err
			}
			if status {
				return res, errors.New("a second status message")
			}
			res.Exited, res.ExitCode, res.Signal = sm.exited != 0, int(sm.exit_code), int(sm.signal)
			res.TimedOut, res.DiskFull = sm.timed_out != 0, sm.disk_full != 0
			res.MemoryKilled, res.MemoryWatch = int64(sm.mem_killed), time.Duration(sm.mem_watch_ns)
			res.Started, res.Ended = time.Duration(sm.started_ns), time.Duration(sm.ended_ns)
			res.RefusedSockets = uint64(sm.refused_sockets)
			res.Warm = sm.warm != 0
			status = true
		case C.R_FILE:
			if n > maxFileName+1+uint64(budget) {
				return res, fmt.Errorf("file message of %d bytes with %d left of the disk limit", n, budget)
			}
			name, size, err := readFileName(br, n)
			if err != nil {
				return res, err
			}
			if size > uint64(budget) {
				return res, fmt.Errorf("file message of %d bytes with %d left of the disk limit", size, budget)
			}
			if len(res.Files) >= lim.Files {
				// init sends at most lim.Files: cut the rest.
				if _, err := br.Discard(int(size)); err != nil {
					return res, fmt.Errorf("read result: %w", err)
				}
				unlisted, cut = unlisted+1, true
				continue
			}
			data, err := readN(br, size)
			if err != nil {
				return res, fmt.Errorf("read result: %w", err)
			}
			budget -= int64(size)
			res.Files = append(res.Files, sandbox.File{Name: name, Data: data})
		case C.R_OMIT:
			data, err := readMessage(br, typ, n, maxTextMessage)
			if err != nil {
				return res, err
			}
			if len(res.Omitted) >= sandbox.MaxOmitted || omitBytes+len(data) > sandbox.MaxOmittedBytes {
				unlisted, cut = unlisted+1, true
				continue
			}
			res.Omitted = append(res.Omitted, string(data))
			omitBytes += len(data)
		case C.R_CUT:
			var cm C.struct_cut_msg
			if err := readStruct(br, typ, n, &cm); err != nil {
				return res, err
			}
			unlisted += int64(min(uint64(cm.unlisted), 1<<62))
			stopped, skipped, cut = stopped || cm.stopped != 0, skipped || cm.skipped != 0, true
		case C.R_STATE_REPORT:
			if res.StateReport != nil {
				return res, errors.New("a second state report")
			}
			data, err := readMessage(br, typ, n, sandbox.MaxStateReport)
			if err != nil {
				return res, err
			}
			res.StateReport = data
		case C.R_STATE:
			if res.State != nil {
				return res, errors.New("a second state")
			}
			if n > uint64(lim.StateSize) {
				return res, fmt.Errorf("state message of %d bytes, more than the limit of %d", n, lim.StateSize)
			}
			data, err := readLarge(br, n)
			if err != nil {
				return res, fmt.Errorf("read result: %w", err)
			}
			res.State = data
		case C.R_TIMES:
			var ns uint64
			if err := readStruct(br, typ, n, &ns); err != nil {
				return res, err
			}
			res.Reported = time.Duration(ns)
		case C.R_END:
			if n != 0 {
				return res, fmt.Errorf("end message of %d bytes", n)
			}
			if !status && res.Err == "" {
				return res, errors.New("result without a status")
			}
			if unlisted > 0 || stopped {
				res.Omitted = append(res.Omitted, sandbox.MoreOmitted(unlisted, stopped || skipped))
			}
			res.Capped = cut
			return res, nil
		default:
			return res, fmt.Errorf("unknown result message %d", typ)
		}
	}
}

// readMessage reads a message of n bytes, at most limit.
func readMessage(r io.Reader, typ uint32, n, limit uint64) ([]byte, error) {
	if n > limit {
		return nil, fmt.Errorf("result message %d of %d bytes, more than %d", typ, n, limit)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	return data, nil
}

// readStruct reads a fixed-size message into v, which must be exactly n
// bytes.
func readStruct[T any](r io.Reader, typ uint32, n uint64, v *T) error {
	size := unsafe.Sizeof(*v)
	if n != uint64(size) {
		return fmt.Errorf("result message %d of %d bytes, want %d", typ, n, size)
	}
	if _, err := io.ReadFull(r, unsafe.Slice((*byte)(unsafe.Pointer(v)), size)); err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	return nil
}

// readFileName reads the "name\0" that starts a file message of n bytes
// and returns the name and the size of the data that follows.
func readFileName(br *bufio.Reader, n uint64) (string, uint64, error) {
	head, err := br.Peek(int(min(n, maxFileName+1)))
	if err != nil {
		return "", 0, fmt.Errorf("read result: %w", err)
	}
	i := bytes.IndexByte(head, 0)
	if i < 0 {
		return "", 0, fmt.Errorf("file message without a name of at most %d bytes", maxFileName)
	}
	name := string(head[:i])
	if !sandbox.ValidName(name) {
		return "", 0, fmt.Errorf("file message for %q, not a clean relative path", name)
	}
	br.Discard(i + 1)
	return name, n - uint64(i) - 1, nil
}

// readN reads n bytes, allocating as they arrive rather than all that n
// claims: a stream that breaks off costs at most about twice what it held.
// readLarge reads n bytes as readN does, but once an eighth of them has
// arrived it reads the rest into one allocation of n: a state is read in
// about 1.25 times its size, not the twice doubling costs, and a stream
// that claims more than it sends still costs at most 8 times what it
// sent.
func readLarge(r io.Reader, n uint64) ([]byte, error) {
	head, err := readN(r, min(n, max(n/8, firstChunk)))
	if err != nil || uint64(len(head)) == n {
		return head, err
	}
	buf := make([]byte, n)
	copy(buf, head)
	if _, err := io.ReadFull(r, buf[len(head):]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

func readN(r io.Reader, n uint64) ([]byte, error) {
	buf := make([]byte, 0, min(n, firstChunk))
	for uint64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(n-uint64(len(buf)), uint64(cap(buf)))))
		}
		m, err := r.Read(buf[len(buf):min(uint64(cap(buf)), n)])
		buf = buf[:len(buf)+m]
		if err == io.EOF && uint64(len(buf)) < n {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
	}
	return buf, nil
}
