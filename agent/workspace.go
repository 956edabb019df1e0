package agent

import (
	"context"
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
}

// MemWorkspace is a [Workspace] in memory. It is safe for concurrent use.
type MemWorkspace struct {
	maxSize int64

	mu    sync.Mutex
	files []sandbox.File // in the order first added
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
