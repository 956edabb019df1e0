package thread

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// workspacesDir is the directory of the threads' workspaces in the data
// directory.
const workspacesDir = "threads"

// workspaceIndex is the file in a thread's workspace that lists its files.
const workspaceIndex = "index.json"

// Workspaces keeps, per thread, the files its runs may read: the humans'
// attachments (downloaded once) and the files earlier runs wrote. Each
// thread has a directory under dataDir/threads holding the files and an
// index; a thread unused for the TTL is deleted. The files live on disk,
// not in memory, and survive a restart when the data directory does. Every
// path goes through an [os.Root], so no name can leave the directory.
type Workspaces struct {
	dir     string
	ttl     time.Duration
	maxSize int64 // a thread's files, in all
	// fileSize bounds a file a run wrote that is kept; runSize the bytes
	// an answer's runs start with (the files placed, and those its runs
	// wrote).
	fileSize, runSize int64
	log               *slog.Logger
	now               func() time.Time
	// States keeps the threads' Python states where every replica reads
	// them; nil: each in its thread's directory. Set it before use.
	States StateStore

	mu sync.Mutex // index reads and writes, and the sweeper
}

// Entry is one file of a thread's workspace.
type Entry struct {
	Name    string    `json:"name"` // path relative to /mnt/data
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Output  bool      `json:"output,omitempty"`   // written by a run (else attached by a person)
	SlackID string    `json:"slack_id,omitempty"` // the attachment it came from
	Posted  string    `json:"posted,omitempty"`   // the Slack file id of the bot's upload of this version
	TurnTS  string    `json:"turn_ts,omitempty"`  // the question it came with
	AddedAt time.Time `json:"added_at"`
}

type indexFile struct {
	UsedAt time.Time `json:"used_at"`
	Files  []Entry   `json:"files"`
}

// NewWorkspaces keeps the threads' workspaces in dataDir, each within
// lim.ThreadSize; an answer's runs start with at most runSize bytes.
func NewWorkspaces(dataDir string, ttl time.Duration, lim sandbox.FileLimits, runSize int64, log *slog.Logger) (*Workspaces, error) {
	dir := filepath.Join(dataDir, workspacesDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	return &Workspaces{dir: dir, ttl: ttl, maxSize: lim.ThreadSize, fileSize: lim.FileSize, runSize: runSize, log: log, now: time.Now}, nil
}

var reSafeKey = regexp.MustCompile(`^[A-Z0-9]{1,32}$`)
var reSafeTS = regexp.MustCompile(`^[0-9]{1,12}\.[0-9]{1,9}$`)

// threadDir names a thread's directory: readable when the ids look like
// Slack's, hashed otherwise.
func threadDir(channel, threadTS string) string {
	if reSafeKey.MatchString(channel) && reSafeTS.MatchString(threadTS) {
		return channel + "_" + threadTS
	}
	h := sha256.Sum256([]byte(channel + "/" + threadTS))
	return "h_" + hex.EncodeToString(h[:16])
}

// Workspace is one thread's workspace as an answer uses it. It is the
// answer's [agent.Workspace]: the answer's runs start with the files
// placed for it and those its earlier runs wrote, and what they write is
// kept in the thread's directory for later answers (a run's files are
// stored there once, by the executeCode tool). It opens the directory
// when first needed: a thread without files has none until a run writes
// one. The bot answers a thread's questions one at a time, so only the
// sweeper can act on the directory at the same time; it leaves threads
// used within the TTL alone.
type Workspace struct {
	ws                *Workspaces
	channel, threadTS string
	turnTS            string // the question the answer is for
	log               *slog.Logger

	root    *os.Root // nil until opened
	openErr error    // why it could not be opened
	idx     indexFile
	run     []string // the files runs start with, in order
	noState bool     // the answer's runs keep no state
}

var _ agent.Workspace = (*Workspace)(nil)

// ForAnswer returns the thread's workspace for answering the question at
// turnTS; nothing is opened yet.
func (w *Workspaces) ForAnswer(channel, threadTS, turnTS string, log *slog.Logger) *Workspace {
	return &Workspace{ws: w, channel: channel, threadTS: threadTS, turnTS: turnTS, log: log}
}

// Exists reports whether the thread has a workspace.
func (w *Workspaces) Exists(channel, threadTS string) bool {
	_, err := os.Stat(filepath.Join(w.dir, threadDir(channel, threadTS), workspaceIndex))
	return err == nil
}

// Open opens (creating) the thread's directory, once, and marks it used.
func (t *Workspace) Open() error {
	if t.root != nil || t.openErr != nil {
		return t.openErr
	}
	w := t.ws
	w.mu.Lock()
	defer w.mu.Unlock()
	dir := filepath.Join(w.dir, threadDir(t.channel, t.threadTS))
	root, err := openRoot(dir)
	if err != nil {
		t.openErr = fmt.Errorf("workspace: %w", err)
		return t.openErr
	}
	data, err := root.ReadFile(workspaceIndex)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		root.Close()
		t.openErr = fmt.Errorf("workspace index: %w", err)
		return t.openErr
	default:
		if err := json.Unmarshal(data, &t.idx); err != nil {
			w.log.Warn("workspace index unreadable; starting the thread's workspace afresh", "dir", dir, "err", err)
			t.idx = indexFile{}
		}
	}
	t.root = root
	t.idx.UsedAt = w.now()
	if err := t.saveLocked(); err != nil {
		root.Close()
		t.root, t.openErr = nil, err
	}
	return t.openErr
}

func openRoot(dir string) (*os.Root, error) {
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o750); err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// Close closes the directory, if it was opened.
func (t *Workspace) Close() {
	if t.root != nil {
		t.root.Close()
	}
}

// Files returns the files the answer's next run starts with.
func (t *Workspace) Files(context.Context) ([]sandbox.File, error) {
	files := make([]sandbox.File, 0, len(t.run))
	for _, name := range t.run {
		data, err := t.Read(name)
		if err != nil {
			return nil, err
		}
		files = append(files, sandbox.File{Name: name, Data: data})
	}
	return files, nil
}

// Put keeps the files a run wrote in the thread, for the answer's later
// runs and for later answers. A file larger than the per-file limit is
// not kept; one that would take the answer's runs past their size or
// count is kept for later answers only. Both are dropped.
func (t *Workspace) Put(_ context.Context, files []sandbox.File) (dropped []string, err error) {
	if len(files) == 0 {
		return nil, nil
	}
	if err := t.Open(); err != nil {
		t.log.Error("opening the thread's workspace failed; the run's files are not kept", "err", err)
		for _, f := range files {
			dropped = append(dropped, f.Name)
		}
		return dropped, err
	}
	for _, f := range files {
		if int64(len(f.Data)) > t.ws.fileSize {
			dropped = append(dropped, f.Name)
			continue
		}
		if _, perr := t.Store(Entry{Name: f.Name, Output: true, TurnTS: t.turnTS}, f.Data, t.run...); perr != nil {
			t.log.Error("keeping a run's file in the thread's workspace failed", "file", f.Name, "err", perr)
			err = errors.Join(err, perr)
			t.run = slices.DeleteFunc(t.run, func(n string) bool { return n == f.Name })
			dropped = append(dropped, f.Name)
			continue
		}
		if !t.use(f.Name) {
			dropped = append(dropped, f.Name)
		}
	}
	return dropped, err
}

// use adds a stored file to those the answer's runs start with, unless
// that takes them past their count or size: then it reports false.
func (t *Workspace) use(name string) bool {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	t.run = slices.DeleteFunc(t.run, func(n string) bool { return n == name })
	var total int64
	for _, e := range t.idx.Files {
		if e.Name == name || slices.Contains(t.run, e.Name) {
			total += e.Size
		}
	}
	if len(t.run) >= sandbox.DefaultInputFiles || total > t.ws.runSize {
		return false
	}
	t.run = append(t.run, name)
	return true
}

// Posted returns the id of the bot's upload of f into the thread, when
// the thread keeps f as it is and the bot posted this version before.
func (t *Workspace) Posted(f sandbox.File) string {
	if t.root == nil {
		return ""
	}
	e, ok := t.ByName(f.Name)
	if !ok || e.SHA256 != sha(f.Data) {
		return ""
	}
	return e.Posted
}

// saveLocked writes the index atomically; ws.mu is held.
func (t *Workspace) saveLocked() error {
	data, err := json.MarshalIndent(t.idx, "", "  ")
	if err != nil {
		return fmt.Errorf("workspace index: %w", err)
	}
	tmp := workspaceIndex + ".tmp"
	if err := t.root.WriteFile(tmp, data, 0o640); err != nil {
		return fmt.Errorf("workspace index: %w", err)
	}
	if err := t.root.Rename(tmp, workspaceIndex); err != nil {
		return fmt.Errorf("workspace index: %w", err)
	}
	return nil
}

// Entries returns the files, newest first.
func (t *Workspace) Entries() []Entry {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	out := slices.Clone(t.idx.Files)
	slices.SortStableFunc(out, func(a, b Entry) int { return b.AddedAt.Compare(a.AddedAt) })
	return out
}

// ByName returns the entry with the name.
func (t *Workspace) ByName(name string) (Entry, bool) {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	i := slices.IndexFunc(t.idx.Files, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return t.idx.Files[i], true
}

// BySlackID returns the entry holding the Slack file: an attachment, or
// an output the bot posted.
func (t *Workspace) BySlackID(id string) (Entry, bool) {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	i := slices.IndexFunc(t.idx.Files, func(e Entry) bool { return e.SlackID == id || e.Posted == id })
	if i < 0 {
		return Entry{}, false
	}
	return t.idx.Files[i], true
}

// Taken reports whether a name is used.
func (t *Workspace) Taken(name string) bool {
	_, ok := t.ByName(name)
	return ok
}

// Read returns a file's bytes.
func (t *Workspace) Read(name string) ([]byte, error) {
	if !filepath.IsLocal(name) {
		return nil, fmt.Errorf("workspace: bad name %q", name)
	}
	return t.root.ReadFile(path.Join("files", name))
}

// Store stores a file, replacing the entry of the same name, then deletes
// the oldest other files while the workspace is over its size bound
// (never those named in keep). It returns the names it deleted.
func (t *Workspace) Store(e Entry, data []byte, keep ...string) (evicted []string, err error) {
	if !filepath.IsLocal(e.Name) {
		return nil, fmt.Errorf("workspace: bad name %q", e.Name)
	}
	e.SHA256, e.Size = sha(data), int64(len(data))
	if e.AddedAt.IsZero() {
		e.AddedAt = t.ws.now()
	}
	p := path.Join("files", e.Name)
	if dir := path.Dir(p); dir != "files" {
		if err := t.root.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	if err := t.root.WriteFile(p, data, 0o640); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	if i := slices.IndexFunc(t.idx.Files, func(x Entry) bool { return x.Name == e.Name }); i >= 0 && t.idx.Files[i].SHA256 == e.SHA256 && e.Posted == "" {
		e.Posted = t.idx.Files[i].Posted // the bot's upload shows this version still
	}
	t.idx.Files = slices.DeleteFunc(t.idx.Files, func(x Entry) bool { return x.Name == e.Name })
	t.idx.Files = append(t.idx.Files, e)
	keep = append(slices.Clip(keep), e.Name)
	for t.sizeLocked() > t.ws.maxSize {
		oldest := -1
		for i, x := range t.idx.Files {
			if !slices.Contains(keep, x.Name) && (oldest < 0 || x.AddedAt.Before(t.idx.Files[oldest].AddedAt)) {
				oldest = i
			}
		}
		if oldest < 0 {
			break
		}
		name := t.idx.Files[oldest].Name
		t.root.Remove(path.Join("files", name))
		t.idx.Files = slices.Delete(t.idx.Files, oldest, oldest+1)
		evicted = append(evicted, name)
	}
	return evicted, t.saveLocked()
}

// SetPosted records the bot's upload of f, when the thread keeps f as it
// is.
func (t *Workspace) SetPosted(f sandbox.File, fileID string) error {
	if t.root == nil {
		return nil
	}
	sum := sha(f.Data)
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	for i, e := range t.idx.Files {
		if e.Name == f.Name && e.SHA256 == sum {
			t.idx.Files[i].Posted = fileID
		}
	}
	return t.saveLocked()
}

// sha is the hex SHA-256 of data, as the index records it.
func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (t *Workspace) sizeLocked() int64 {
	var n int64
	for _, e := range t.idx.Files {
		n += e.Size
	}
	return n
}

// Sweep deletes the workspaces of threads not used for the TTL.
func (w *Workspaces) Sweep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		w.log.Warn("sweeping workspaces failed", "err", err)
		return
	}
	cutoff := w.now().Add(-w.ttl)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(w.dir, e.Name())
		var idx indexFile
		data, err := os.ReadFile(filepath.Join(dir, workspaceIndex))
		if err == nil {
			err = json.Unmarshal(data, &idx)
		}
		used := idx.UsedAt
		if err != nil { // no or broken index: go by the directory's age
			if fi, serr := e.Info(); serr == nil {
				used = fi.ModTime()
			}
		}
		if used.Before(cutoff) {
			if err := os.RemoveAll(dir); err != nil {
				w.log.Warn("deleting an expired workspace failed", "dir", dir, "err", err)
				continue
			}
			w.log.Debug("expired workspace deleted", "dir", dir)
		}
	}
}

// AddRun adds a stored file, placed for the answer, to those its runs
// start with.
func (t *Workspace) AddRun(name string) { t.run = append(t.run, name) }
