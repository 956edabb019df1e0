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
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// The host and a sandbox's init (sandbox.c) talk over two pipes: the host
// writes the setup when it prepares the sandbox and the run when it takes
// it, to init's stdin; init writes the result to its descriptor 3. Init's
// stdout and stderr are the program's, passed straight through. Messages
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
	lim := C.struct_limits{
		timeout_ns: C.uint64_t(l.Timeout),
		memory:     C.uint64_t(l.Memory),
		processes:  C.uint64_t(l.Processes),
		cputime_ns: C.uint64_t(l.CPUTime),
		open_files: C.uint64_t(l.OpenFiles),
		disk:       C.uint64_t(l.DiskSize),
		output:     C.uint64_t(l.Output),
		files:      C.uint64_t(l.Files),
	}
	e.msg(C.M_LIMITS, unsafe.Slice((*byte)(unsafe.Pointer(&lim)), unsafe.Sizeof(lim)))
	e.msg(C.M_RUN_END)
	return e.buf.Bytes()
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
	Omitted  []string

	// MemoryKilled is what init's memory watcher counted when it ended
	// the run for holding more than the memory limit; 0 if it did not.
	MemoryKilled int64
	// MemoryWatch is the CPU time the watcher took.
	MemoryWatch time.Duration
}

// maxResultMessage bounds one message from init (a file is at most the
// disk limit; this only guards the host against a broken stream).
const maxResultMessage = 1 << 34

// decodeResult reads init's report to its end.
func decodeResult(r io.Reader) (initResult, error) {
	var res initResult
	br := bufio.NewReaderSize(r, 64<<10)
	var h [12]byte
	status := false
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return res, fmt.Errorf("read result: %w", err)
		}
		typ, n := binary.NativeEndian.Uint32(h[:4]), binary.NativeEndian.Uint64(h[4:])
		if n > maxResultMessage {
			return res, fmt.Errorf("result message of %d bytes", n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(br, data); err != nil {
			return res, fmt.Errorf("read result: %w", err)
		}
		switch typ {
		case C.R_ERR:
			res.Err = string(data)
		case C.R_STATUS:
			var sm C.struct_status_msg
			if uintptr(len(data)) != unsafe.Sizeof(sm) {
				return res, errors.New("bad status message")
			}
			sm = *(*C.struct_status_msg)(unsafe.Pointer(&data[0]))
			res.Exited, res.ExitCode, res.Signal = sm.exited != 0, int(sm.exit_code), int(sm.signal)
			res.TimedOut, res.DiskFull = sm.timed_out != 0, sm.disk_full != 0
			res.MemoryKilled, res.MemoryWatch = int64(sm.mem_killed), time.Duration(sm.mem_watch_ns)
			res.Started, res.Ended = time.Duration(sm.started_ns), time.Duration(sm.ended_ns)
			status = true
		case C.R_FILE:
			name, body, ok := bytes.Cut(data, []byte{0})
			if !ok {
				return res, errors.New("bad file message")
			}
			res.Files = append(res.Files, sandbox.File{Name: string(name), Data: body})
		case C.R_OMIT:
			res.Omitted = append(res.Omitted, string(data))
		case C.R_TIMES:
			if len(data) == 8 {
				res.Reported = time.Duration(binary.NativeEndian.Uint64(data))
			}
		case C.R_END:
			if !status && res.Err == "" {
				return res, errors.New("result without a status")
			}
			return res, nil
		default:
			return res, fmt.Errorf("unknown result message %d", typ)
		}
	}
}
