package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
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
	DefaultStateSize   = (DefaultMemory - StateOverhead) / 2 // bytes of a stateful run's saved state: 192 MiB
)

// StateOverhead is the memory a stateful run needs besides twice its
// state (the state's file and the values restored from it, or the values
// and the file they are saved to): the interpreter, preloaded modules
// and what the program holds meanwhile. A state's limit is at most
// [StateRoom] of the run's memory, so that a state at its limit is
// restored and saved within it.
const StateOverhead = 128 << 20

// StateRoom is the largest state a run with memory bytes of memory can
// restore and save: (memory - StateOverhead) / 2.
func StateRoom(memory int64) int64 { return (memory - StateOverhead) / 2 }

// Caps on the listing of a run's output files, the same for every backend:
// whatever a program leaves in WorkDir, what comes back of it stays small.
// Backends apply them where they list the files; [Result.Bound] applies
// them again to any Result.
const (
	// MaxListed is how many directory entries under WorkDir a backend
	// looks at; the listing stops there.
	MaxListed = 10000
	// MaxDepth is how many directory levels below WorkDir are looked
	// into; deeper ones are omitted as "too deep".
	MaxDepth = 32
	// MaxCandidates bounds how many regular files a backend keeps, the
	// first in lexical order, to choose the returned files from; see
	// [Candidates].
	MaxCandidates = 1024
	// MaxPathLen bounds a file's name (a slash-separated path), in
	// bytes; a longer output file is omitted.
	MaxPathLen = 1024
	// MaxOmitted bounds the entries of FilesOmitted, and MaxOmittedBytes
	// their bytes in all, not counting a last entry (see [MoreOmitted])
	// that says how many more were left out.
	MaxOmitted      = 100
	MaxOmittedBytes = 16 << 10
	// MaxOmittedName bounds the file name in an entry of FilesOmitted, in
	// bytes; a longer name is cut, ending in "…". MaxOmittedWhy bounds
	// the reason that follows it, in parentheses.
	MaxOmittedName = 255
	MaxOmittedWhy  = 96
)

// Candidates is how many regular files a backend keeps, the first in
// lexical order, to choose the returned files from: four times lim.Files
// (some may be too large), plus the inputs (not returned when unchanged),
// at most [MaxCandidates].
func Candidates(lim Limits, inputs int) int {
	return min(4*lim.WithDefaults().Files+inputs, MaxCandidates)
}

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
	StateSize int64         // bytes of Python state a stateful run may save (and start with)
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
	StateSize: DefaultStateSize,
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
	l.StateSize = positiveOr(l.StateSize, def.StateSize)
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
	// KeepState makes the run keep a conversation's Python state: the
	// names an earlier run saved, State, are restored into __main__
	// before Code runs, and the names Code leaves are saved after it,
	// within Limits.StateSize, into the Result's State (see
	// [StateResult]). The backend never unpickles State: only the
	// sandbox reads it.
	KeepState bool
	// State is what an earlier run saved ([StateResult.Data]); empty: the
	// run starts with no names of its own.
	State []byte
	// StateFrom, with StateLen, gives the state as a stream instead of
	// State: the backend reads StateLen bytes from it once, as it sends
	// them to the sandbox, so that the caller need not hold the state in
	// memory (the bot reads it from the thread's file). The caller closes
	// it, if it must be closed, after Run.
	StateFrom io.Reader
	StateLen  int64
}

// StateSize is the size of the state r starts from, whichever way it is
// given.
func (r *Request) StateSize() int64 {
	if r.StateFrom != nil {
		return r.StateLen
	}
	return int64(len(r.State))
}

// ErrNULInCode is returned for code holding a NUL byte: python3 -c would
// run only the code before it, while a reader is shown all of it.
var ErrNULInCode = errors.New("sandbox: the code holds a NUL byte (\\x00), which Python's -c cannot take; write it as \"\\x00\" in a string literal instead")

// Check refuses a request no backend may run: code with a NUL byte, a
// state larger than lim.StateSize or without KeepState, and the input
// files [CheckFiles] refuses.
func (r *Request) Check(lim Limits) error {
	if strings.IndexByte(r.Code, 0) >= 0 {
		return ErrNULInCode
	}
	switch {
	case (len(r.State) > 0 || r.StateFrom != nil) && !r.KeepState:
		return errors.New("sandbox: a state was given for a run that keeps none")
	case r.StateFrom != nil && (len(r.State) > 0 || r.StateLen < 0):
		return errors.New("sandbox: a state was given both as bytes and as a stream, or with a negative length")
	case r.StateSize() > lim.WithDefaults().StateSize:
		return fmt.Errorf("sandbox: the state holds %d bytes, more than its limit of %d", r.StateSize(), lim.WithDefaults().StateSize)
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
		if !ValidName(n) {
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

// ValidName reports whether n may name a file in [WorkDir]: a clean
// relative path (not absolute, no empty, "." or ".." element) without a NUL
// byte, of at most [MaxPathLen] bytes.
func ValidName(n string) bool {
	return n != "" && len(n) <= MaxPathLen && !strings.HasPrefix(n, "/") && path.Clean(n) == n &&
		n != "." && n != ".." && !strings.HasPrefix(n, "../") && strings.IndexByte(n, 0) < 0
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
	// StdoutTruncated and StderrTruncated are set when a stream passed
	// Limits.Output; StdoutSize and StderrSize count every byte written.
	StdoutTruncated bool
	StderrTruncated bool
	StdoutSize      int64
	StderrSize      int64
	// Limit names the limit that ended the run (LimitTimeout: the wall
	// clock; LimitMemory: the memory limit killed the program, or one of
	// its processes), or was hit during it.
	Limit Limit
	// Limits are the limits the run had, every field set ([Result.Bound]
	// records them); the [Verdict] names their values.
	Limits Limits
	// Gone says that the sandbox went away during the run, which ended
	// the program, and how: "the Kubernetes sandbox sb-1 was deleted".
	// "" when it did not.
	Gone string
	// MemoryPeak is the most memory the run used, where the backend can
	// tell (0 otherwise).
	MemoryPeak int64
	// Duration is the wall time from the sandbox's creation to its end.
	Duration time.Duration
	// Warm is set when the run started in an interpreter that had
	// already imported the backend's preloaded modules (still a sandbox
	// and an interpreter of its own, used for this run alone).
	Warm bool
	// Files are the files the program created or changed in WorkDir, in
	// lexical order, within Limits.Files and Limits.DiskSize.
	Files []File
	// FilesOmitted names files left out: symbolic links, special files,
	// or files past the count limit.
	FilesOmitted []string
	// Caps lists the caps that fired during the run, each once.
	Caps []Cap
	// State is what a run with KeepState said of its state; nil for
	// other runs.
	State *StateResult
}

// AddCap records that c fired, once.
func (r *Result) AddCap(c Cap) {
	if !slices.Contains(r.Caps, c) {
		r.Caps = append(r.Caps, c)
	}
}

// Failed reports whether the program did not end well: it exited with a
// non-zero status, a limit ended it, or its sandbox went away (see
// [Result.Verdict]).
func (r *Result) Failed() bool { return r.Verdict().Failed() }

// Truncated reports whether any output was cut.
func (r *Result) Truncated() bool { return r.StdoutTruncated || r.StderrTruncated }

// Error wraps a failure of the sandbox machinery (not of the user program).
type Error struct {
	Op  string // "start", "setup", "wait", ...
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("sandbox: %s: %v", e.Op, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// moreOmitted* make the last entry of a FilesOmitted list that was cut.
const (
	moreOmittedPrefix  = "… and "
	moreOmittedSuffix  = " more not listed"
	moreOmittedPartial = "others not looked at"
)

// MoreOmitted is the last entry of a FilesOmitted list that was cut: n
// entries were left out of it. partial says that some entries were not
// even looked at: the listing stopped at [MaxListed] entries, or left out
// a directory too deep or whose path was too long.
func MoreOmitted(n int64, partial bool) string {
	switch {
	case n <= 0 && partial:
		return moreOmittedPrefix + moreOmittedPartial
	case partial:
		return moreOmittedPrefix + strconv.FormatInt(n, 10) + moreOmittedSuffix + ", and " + moreOmittedPartial
	}
	return moreOmittedPrefix + strconv.FormatInt(max(n, 0), 10) + moreOmittedSuffix
}

// ParseMoreOmitted reads an entry made by [MoreOmitted]: ok is false for
// any other.
func ParseMoreOmitted(s string) (n int64, partial, ok bool) {
	rest, ok := strings.CutPrefix(s, moreOmittedPrefix)
	if !ok {
		return 0, false, false
	}
	if rest == moreOmittedPartial {
		return 0, true, true
	}
	digits, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return 0, false, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != digits {
		return 0, false, false
	}
	switch " " + rest {
	case moreOmittedSuffix:
		return n, false, true
	case moreOmittedSuffix + ", and " + moreOmittedPartial:
		return n, true, true
	}
	return 0, false, false
}

// CutName returns s cut to at most limit bytes (limit ≥ 3), ending in "…"
// when it was longer. It does not split a UTF-8 sequence, backing off at
// most three bytes to find where one starts.
func CutName(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	k := limit - len("…")
	for i := 0; i < utf8.UTFMax-1 && k > 0 && !utf8.RuneStart(s[k]); i++ {
		k--
	}
	return s[:k] + "…"
}

// cutOmitted bounds one entry of FilesOmitted, "name (why)": it keeps a
// reason of at most MaxOmittedWhy bytes and cuts the name before it to
// MaxOmittedName; an entry without such a reason is cut whole, as a name.
func cutOmitted(e string) string {
	if strings.HasSuffix(e, ")") {
		if i := strings.LastIndex(e, " ("); i >= 0 && len(e)-i-3 <= MaxOmittedWhy {
			return CutName(e[:i], MaxOmittedName) + e[i:]
		}
	}
	return CutName(e, MaxOmittedName)
}

// Bound holds r to the caps every backend's result keeps to, whatever the
// backend did (lim's zero fields take the defaults):
//
//   - Files: at most lim.Files, of lim.DiskSize bytes in all, each named
//     by a [ValidName]; the others move to FilesOmitted.
//   - FilesOmitted: each entry's name cut to MaxOmittedName bytes (a
//     reason after it of at most MaxOmittedWhy bytes is kept); at most
//     MaxOmitted entries of MaxOmittedBytes in all, then one [MoreOmitted]
//     entry counting the rest (and what a backend's own such entry
//     counted).
//   - Stdout and Stderr: at most lim.Output bytes each, with their
//     Truncated flags set.
//   - Limits: lim, as the run's [Verdict] names them.
//   - State: its Data at most lim.StateSize bytes, and none when the
//     wall clock or the memory limit ended the run (the state before the
//     run stands); its lists of names as [StateResult] bounds them.
//
// It records [CapResultList] when the list of files was cut (here or, as a
// MoreOmitted entry shows, by the backend) and [CapOutput] when output was.
// Bound is idempotent.
func (r *Result) Bound(lim Limits) {
	lim = lim.WithDefaults()
	r.Limits = lim
	cut := false
	var moved []string
	kept := r.Files[:0]
	var size int64
	for _, f := range r.Files {
		why := ""
		switch {
		case len(f.Name) > MaxPathLen:
			why, cut = "path too long", true
		case !ValidName(f.Name):
			why = "not a clean relative path"
		case len(kept) >= lim.Files:
			why = "too many files"
		case size+int64(len(f.Data)) > lim.DiskSize:
			why = "too large"
		}
		if why != "" {
			moved = append(moved, f.Name+" ("+why+")")
			continue
		}
		size += int64(len(f.Data))
		kept = append(kept, f)
	}
	clear(r.Files[len(kept):])
	r.Files = kept

	var (
		more    int64
		partial bool
		full    bool
		n       int
		list    []string
	)
	for _, e := range slices.Concat(r.FilesOmitted, moved) {
		if m, p, ok := ParseMoreOmitted(e); ok {
			more, partial, cut = more+m, partial || p, true
			continue
		}
		c := cutOmitted(e)
		if c != e {
			cut = true
		}
		if full || len(list) >= MaxOmitted || n+len(c) > MaxOmittedBytes {
			full = true
			more++
			continue
		}
		list = append(list, c)
		n += len(c)
	}
	if more > 0 || partial {
		list, cut = append(list, MoreOmitted(more, partial)), true
	}
	if len(r.FilesOmitted) > 0 || len(list) > 0 {
		r.FilesOmitted = list
	}
	if cut {
		r.AddCap(CapResultList)
	}

	r.State.bound(lim, r.Limit)

	r.Stdout, r.StdoutSize, r.StdoutTruncated = capOutput(r.Stdout, r.StdoutSize, r.StdoutTruncated, lim.Output)
	r.Stderr, r.StderrSize, r.StderrTruncated = capOutput(r.Stderr, r.StderrSize, r.StderrTruncated, lim.Output)
	if r.Truncated() {
		r.AddCap(CapOutput)
	}
}

// capOutput keeps at most max bytes of b; size counts every byte written.
func capOutput(b []byte, size int64, truncated bool, limit int64) ([]byte, int64, bool) {
	size = max(size, int64(len(b)))
	if int64(len(b)) > limit {
		b, truncated = b[:limit:limit], true
	}
	return b, size, truncated
}
