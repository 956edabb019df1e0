package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Workspace is the working directory a conversation's runs share: every
// executeCode run starts with its files and puts back the files it
// wrote, so that a run reads what an earlier one wrote although each gets
// a fresh sandbox. A front end gives it to [Agent.Run] in [RunOptions]:
// the bot keeps a Slack thread's files on disk, the terminal keeps them
// in memory ([MemWorkspace]). Run calls it from its own goroutine, one
// tool call at a time.
type Workspace interface {
	// Files returns the files the next run starts with.
	Files(ctx context.Context) ([]sandbox.File, error)
	// Put keeps the files a run created or changed, replacing those of
	// the same name. dropped names those it could not keep (over its
	// bounds); the model is told.
	Put(ctx context.Context, files []sandbox.File) (dropped []string, err error)

	// State returns the Python state the next run starts with (the
	// names earlier runs left, as bytes only a sandbox reads), nil when
	// there is none. It returns ErrNoState when the conversation keeps
	// no state (it was switched off), and an error wrapping
	// ErrStateUnusable, without reading it all, when the state kept
	// cannot be used: it holds more than max bytes, or parts of it are
	// gone.
	State(ctx context.Context, max int64) ([]byte, error)
	// PutState replaces the state with the one a run saved.
	PutState(ctx context.Context, state []byte) error
	// SetStateAside moves the state out of the way without deleting it
	// (a sandbox could not read it, or it is unusable): the next run
	// starts without one.
	SetStateAside(ctx context.Context) error
}

// StateSwitch is implemented by a [Workspace] whose conversation may keep
// no Python state. KeepsState reports whether it keeps one; when it does
// not, the executeCode tool is described to the model as keeping none
// for that conversation's run (a Workspace without the method keeps
// state when the tool does).
type StateSwitch interface {
	KeepsState() bool
}

// StateStreamer is implemented by a [Workspace] that can give the state
// to a run as a stream, so that neither the tool nor the sandbox holds it
// in memory (the bot reads it from the thread's file). OpenState returns
// what State would, as a reader of n bytes (nil and 0 when there is no
// state), with the same errors; the caller closes it.
type StateStreamer interface {
	OpenState(ctx context.Context, max int64) (r io.ReadCloser, n int64, err error)
}

// ErrNoState is [Workspace.State]'s error for a conversation that keeps
// no state.
var ErrNoState = errors.New("the conversation keeps no Python state")

// ErrStateUnusable is wrapped by [Workspace.State]'s error for a state
// that cannot be used (too large, incomplete).
var ErrStateUnusable = errors.New("the saved state cannot be used")

// MemWorkspace is a [Workspace] in memory. It is safe for concurrent use.
type MemWorkspace struct {
	maxSize int64

	mu    sync.Mutex
	files []sandbox.File // in the order first added
	state []byte
	aside []byte // the state last set aside
}

var _ Workspace = (*MemWorkspace)(nil)

// NewMemWorkspace returns a workspace holding files. maxSize bounds the
// bytes it keeps (0: no bound beyond the sandbox's own limits); it keeps
// at most [sandbox.DefaultInputFiles] files, the most a sandbox accepts.
func NewMemWorkspace(files []sandbox.File, maxSize int64) *MemWorkspace {
	w := &MemWorkspace{maxSize: maxSize}
	w.Put(context.Background(), files)
	return w
}

// Files returns the workspace's files.
func (w *MemWorkspace) Files(context.Context) ([]sandbox.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.files), nil
}

// Put adds files, replacing those with the same name, and returns the
// names of those it could not keep within its bounds.
func (w *MemWorkspace) Put(_ context.Context, files []sandbox.File) (dropped []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range files {
		i := slices.IndexFunc(w.files, func(g sandbox.File) bool { return g.Name == f.Name })
		var total int64
		for j, g := range w.files {
			if j != i {
				total += int64(len(g.Data))
			}
		}
		if w.maxSize > 0 && total+int64(len(f.Data)) > w.maxSize || i < 0 && len(w.files) >= sandbox.DefaultInputFiles {
			dropped = append(dropped, f.Name)
			continue
		}
		if i >= 0 {
			w.files[i] = f
		} else {
			w.files = append(w.files, f)
		}
	}
	return dropped, nil
}

// State returns the state the last run saved.
func (w *MemWorkspace) State(_ context.Context, max int64) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if int64(len(w.state)) > max {
		return nil, fmt.Errorf("%w: it holds %s, more than its limit of %s", ErrStateUnusable, sandbox.FormatSize(int64(len(w.state))), sandbox.FormatSize(max))
	}
	return w.state, nil
}

// PutState keeps a run's state.
func (w *MemWorkspace) PutState(_ context.Context, state []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = state
	return nil
}

// SetStateAside keeps the state aside, replacing the one set aside
// before.
func (w *MemWorkspace) SetStateAside(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state, w.aside = nil, w.state
	return nil
}
