// Package sandbox describes one run of untrusted Python: the request (code,
// input files, limits) and the result (output, exit status, which limit ended
// the run, files produced). Backends such as [github.com/sandpiper-bot/sandpiper/sandbox/local]
// run a request in a sandbox created for that run alone and destroyed after.
//
// A user program that fails (a traceback, a non-zero exit, a timeout, the
// memory limit) is reported in the [Result]; a Go error from a backend means
// the sandbox machinery itself failed.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// WorkDir is the program's working directory inside every sandbox. Input
// files are placed there; files the program creates or changes there are the
// run's output files.
const WorkDir = "/mnt/data"

// Default limits, used for every zero field of [Limits].
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMemory      = 512 << 20 // bytes
	DefaultProcesses   = 64        // processes and threads
	DefaultCPUTime     = 60 * time.Second
	DefaultCPUs        = 1.0 // CPUs a run may keep busy at once, where a backend can bound it
	DefaultOpenFiles   = 256
	DefaultDiskSize    = 64 << 20 // bytes written, in all
	DefaultOutputSize  = 1 << 20  // bytes captured per stream
	DefaultFileCount   = 64       // output files returned
	DefaultInputFiles  = 64       // input files accepted
	DefaultFileNameLen = 255
)

// Limits bound one run. A zero field takes its default.
type Limits struct {
	Timeout   time.Duration // wall clock
	Memory    int64         // bytes of memory, including tmpfs pages
	Processes int           // processes and threads alive at once
	CPUTime   time.Duration // CPU time of each process
	CPUs      float64       // CPUs the whole run may use at once (0.5: half of one), where the backend can enforce it
	OpenFiles int           // open file descriptors per process
	DiskSize  int64         // bytes in the writable directories, in all (also the largest output file)
	Output    int64         // bytes of stdout and of stderr kept; the rest is counted and dropped
	Files     int           // output files returned
}

// defaults are the limits of a run that sets none.
var defaults = Limits{
	Timeout:   DefaultTimeout,
	Memory:    DefaultMemory,
	Processes: DefaultProcesses,
	CPUTime:   DefaultCPUTime,
	CPUs:      DefaultCPUs,
	OpenFiles: DefaultOpenFiles,
	DiskSize:  DefaultDiskSize,
	Output:    DefaultOutputSize,
	Files:     DefaultFileCount,
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits { return l.or(defaults) }

// Or returns l with every zero field taken from def, and then from the
// defaults: a request's limits over a backend's.
func (l Limits) Or(def Limits) Limits { return l.or(def.WithDefaults()) }

func (l Limits) or(def Limits) Limits {
	l.Timeout = positiveOr(l.Timeout, def.Timeout)
	l.Memory = positiveOr(l.Memory, def.Memory)
	l.Processes = positiveOr(l.Processes, def.Processes)
	l.CPUTime = positiveOr(l.CPUTime, def.CPUTime)
	l.CPUs = positiveOr(l.CPUs, def.CPUs)
	l.OpenFiles = positiveOr(l.OpenFiles, def.OpenFiles)
	l.DiskSize = positiveOr(l.DiskSize, def.DiskSize)
	l.Output = positiveOr(l.Output, def.Output)
	l.Files = positiveOr(l.Files, def.Files)
	return l
}

// positiveOr returns v, or def when v is not positive.
func positiveOr[T int | int64 | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// File is a file in the sandbox's working directory. Name is a plain file
// name or a slash-separated path relative to [WorkDir]; it never starts with
// a slash or contains "..".
type File struct {
	Name string
	Data []byte
}

// Request is one run.
type Request struct {
	Code   string // run as python3 -c Code
	Files  []File // placed in WorkDir before the run
	Limits Limits // zero fields take defaults
}

// ErrNULInCode is returned for code holding a NUL byte: python3 -c would
// run only the code before it, while a reader is shown all of it.
var ErrNULInCode = errors.New("sandbox: the code holds a NUL byte (\\x00), which Python's -c cannot take; write it as \"\\x00\" in a string literal instead")

// Check refuses a request no backend may run: code with a NUL byte, and
// the input files [CheckFiles] refuses.
func (r *Request) Check(lim Limits) error {
	if strings.IndexByte(r.Code, 0) >= 0 {
		return ErrNULInCode
	}
	return CheckFiles(r.Files, lim)
}

// CheckFiles refuses input files a backend must not place: names that are
// not clean relative paths (absolute, "..", empty), duplicates, more than
// DefaultInputFiles files, or more bytes than lim.DiskSize in all.
func CheckFiles(files []File, lim Limits) error {
	if len(files) > DefaultInputFiles {
		return fmt.Errorf("sandbox: %d input files, at most %d", len(files), DefaultInputFiles)
	}
	seen := make(map[string]bool, len(files))
	var size int64
	for _, f := range files {
		n := f.Name
		if n == "" || strings.HasPrefix(n, "/") || path.Clean(n) != n || n == "." ||
			strings.HasPrefix(n, "../") || n == ".." || strings.ContainsRune(n, 0) || len(n) > 1024 {
			return fmt.Errorf("sandbox: input file name %q is not a clean relative path", n)
		}
		if seen[n] {
			return fmt.Errorf("sandbox: input file %q given twice", n)
		}
		seen[n] = true
		size += int64(len(f.Data))
	}
	if lim.DiskSize > 0 && size > lim.DiskSize {
		return fmt.Errorf("sandbox: input files hold %d bytes, more than the disk limit of %d", size, lim.DiskSize)
	}
	return nil
}

// CapBuffer keeps the first Max bytes written to it and counts them all,
// so that a program may print without bound while the bot's memory stays
// bounded. Its Write never fails.
type CapBuffer struct {
	Max int64
	buf bytes.Buffer
	n   int64
}

func (c *CapBuffer) Write(p []byte) (int, error) {
	if room := c.Max - int64(c.buf.Len()); room > 0 {
		c.buf.Write(p[:min(int64(len(p)), room)])
	}
	c.n += int64(len(p))
	return len(p), nil
}

// Bytes returns what was kept.
func (c *CapBuffer) Bytes() []byte { return c.buf.Bytes() }

// Size is how many bytes were written in all.
func (c *CapBuffer) Size() int64 { return c.n }

// Truncated reports whether bytes were dropped.
func (c *CapBuffer) Truncated() bool { return c.n > int64(c.buf.Len()) }

// Captured returns a Result holding what stdout and stderr kept, with the
// sizes written and whether they were cut.
func Captured(stdout, stderr *CapBuffer) *Result {
	return &Result{
		Stdout:          stdout.Bytes(),
		Stderr:          stderr.Bytes(),
		StdoutSize:      stdout.Size(),
		StderrSize:      stderr.Size(),
		StdoutTruncated: stdout.Truncated(),
		StderrTruncated: stderr.Truncated(),
	}
}

// Limit names the limit that ended a run.
type Limit string

const (
	LimitNone      Limit = ""
	LimitTimeout   Limit = "timeout"   // wall-clock timeout
	LimitMemory    Limit = "memory"    // killed by the memory limit
	LimitCPU       Limit = "cpu"       // CPU time limit
	LimitProcesses Limit = "processes" // the process limit was hit (the run may have ended normally)
	LimitDisk      Limit = "disk"      // a write hit the size limit
)

// Cap names a cap or limit that fired during a run, whether or not it
// ended the run, for operators: each is counted in the bot's metrics and
// logged once per run. Front ends show users the [Limit] instead.
type Cap string

const (
	CapOutput       Cap = "output"        // stdout or stderr passed Limits.Output
	CapResultList   Cap = "result_list"   // the list of files produced or omitted was cut
	CapMemory       Cap = "memory"        // the memory limit (cgroup or watcher) ended the run
	CapCPUQuota     Cap = "cpu_quota"     // the run was throttled to its CPU quota
	CapSocketFamily Cap = "socket_family" // the program asked for a socket family that is refused
	CapPreview      Cap = "preview"       // a file preview hit its budget
	CapToolResult   Cap = "tool_result"   // the tool result given to the model was cut to its size
)

// Result is what a run produced. It is returned, with a nil error, for every
// run the sandbox completed, whatever the program did.
type Result struct {
	Stdout []byte
	Stderr []byte
	// ExitCode is the program's exit status; a program killed by a signal
	// reports 128+signal (137 for SIGKILL), as a shell would.
	ExitCode int
	// TimedOut is set when the wall-clock timeout ended the run.
	TimedOut bool
	// OutOfMemory is set when the memory limit killed the program, or
	// one of its processes.
	OutOfMemory bool
	// StdoutTruncated and StderrTruncated are set when a stream passed
	// Limits.Output; StdoutSize and StderrSize count every byte written.
	StdoutTruncated bool
	StderrTruncated bool
	StdoutSize      int64
	StderrSize      int64
	// Limit names the limit that ended the run, or was hit during it.
	Limit Limit
	// MemoryPeak is the most memory the run used, where the backend can
	// tell (0 otherwise).
	MemoryPeak int64
	// Duration is the wall time from the sandbox's creation to its end.
	Duration time.Duration
	// Files are the files the program created or changed in WorkDir, in
	// lexical order, within Limits.Files and Limits.DiskSize.
	Files []File
	// FilesOmitted names files left out: symbolic links, special files,
	// or files past the count limit.
	FilesOmitted []string
	// Caps lists the caps that fired during the run, each once.
	Caps []Cap
}

// AddCap records that c fired, once.
func (r *Result) AddCap(c Cap) {
	if !slices.Contains(r.Caps, c) {
		r.Caps = append(r.Caps, c)
	}
}

// Truncated reports whether any output was cut.
func (r *Result) Truncated() bool { return r.StdoutTruncated || r.StderrTruncated }

// Runner runs requests. Backends implement it; consumers usually declare
// the subset they use.
type Runner interface {
	Run(ctx context.Context, req Request) (*Result, error)
}

// Error wraps a failure of the sandbox machinery (not of the user program).
type Error struct {
	Op  string // "start", "setup", "wait", ...
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("sandbox: %s: %v", e.Op, e.Err) }
func (e *Error) Unwrap() error { return e.Err }
