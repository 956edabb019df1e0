package bot

import (
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
)

// workspacesDir is the directory of the threads' workspaces in the data
// directory.
const workspacesDir = "threads"

// workspaceIndex is the file in a thread's workspace that lists its files.
const workspaceIndex = "index.json"

// workspaces keeps, per thread, the files its runs may read: the humans'
// attachments (downloaded once) and the files earlier runs wrote. Each
// thread has a directory under dataDir/threads holding the files and an
// index; a thread unused for the TTL is deleted. The files live on disk,
// not in memory, and survive a restart when the data directory does. Every
// path goes through an [os.Root], so no name can leave the directory.
type workspaces struct {
	dir     string
	ttl     time.Duration
	maxSize int64
	log     *slog.Logger
	now     func() time.Time

	mu sync.Mutex // index reads and writes, and the sweeper
}

// wsEntry is one file of a thread's workspace.
type wsEntry struct {
	Name    string    `json:"name"` // path relative to /mnt/data
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Output  bool      `json:"output,omitempty"`   // written by a run (else attached by a person)
	SlackID string    `json:"slack_id,omitempty"` // the attachment it came from
	Posted  string    `json:"posted,omitempty"`   // the Slack file id of the bot's upload of this version
	TurnTS  string    `json:"turn_ts,omitempty"`  // the question it came with
	AddedAt time.Time `json:"added_at"`
}

type wsIndexFile struct {
	UsedAt time.Time `json:"used_at"`
	Files  []wsEntry `json:"files"`
}

func newWorkspaces(dataDir string, ttl time.Duration, maxSize int64, log *slog.Logger) (*workspaces, error) {
	dir := filepath.Join(dataDir, workspacesDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	return &workspaces{dir: dir, ttl: ttl, maxSize: maxSize, log: log, now: time.Now}, nil
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

// threadFiles is one thread's workspace, opened for an answer. The bot
// answers a thread's questions one at a time, so only the sweeper can
// act on the directory at the same time; it leaves threads used within
// the TTL alone.
type threadFiles struct {
	ws   *workspaces
	root *os.Root
	idx  wsIndexFile
}

// exists reports whether the thread has a workspace.
func (w *workspaces) exists(channel, threadTS string) bool {
	_, err := os.Stat(filepath.Join(w.dir, threadDir(channel, threadTS), workspaceIndex))
	return err == nil
}

// open opens (creating) the thread's workspace and marks it used.
func (w *workspaces) open(channel, threadTS string) (*threadFiles, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	dir := filepath.Join(w.dir, threadDir(channel, threadTS))
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o750); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	t := &threadFiles{ws: w, root: root}
	data, err := root.ReadFile(workspaceIndex)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		root.Close()
		return nil, fmt.Errorf("workspace index: %w", err)
	default:
		if err := json.Unmarshal(data, &t.idx); err != nil {
			w.log.Warn("workspace index unreadable; starting the thread's workspace afresh", "dir", dir, "err", err)
			t.idx = wsIndexFile{}
		}
	}
	t.idx.UsedAt = w.now()
	if err := t.saveLocked(); err != nil {
		root.Close()
		return nil, err
	}
	return t, nil
}

func (t *threadFiles) close() { t.root.Close() }

// saveLocked writes the index atomically; ws.mu is held.
func (t *threadFiles) saveLocked() error {
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

// entries returns the files, newest first.
func (t *threadFiles) entries() []wsEntry {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	out := slices.Clone(t.idx.Files)
	slices.SortStableFunc(out, func(a, b wsEntry) int { return b.AddedAt.Compare(a.AddedAt) })
	return out
}

// byName returns the entry with the name.
func (t *threadFiles) byName(name string) (wsEntry, bool) {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	i := slices.IndexFunc(t.idx.Files, func(e wsEntry) bool { return e.Name == name })
	if i < 0 {
		return wsEntry{}, false
	}
	return t.idx.Files[i], true
}

// bySlackID returns the entry holding the Slack file: an attachment, or
// an output the bot posted.
func (t *threadFiles) bySlackID(id string) (wsEntry, bool) {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	i := slices.IndexFunc(t.idx.Files, func(e wsEntry) bool { return e.SlackID == id || e.Posted == id })
	if i < 0 {
		return wsEntry{}, false
	}
	return t.idx.Files[i], true
}

// taken reports whether a name is used.
func (t *threadFiles) taken(name string) bool {
	_, ok := t.byName(name)
	return ok
}

// read returns a file's bytes.
func (t *threadFiles) read(name string) ([]byte, error) {
	if !filepath.IsLocal(name) {
		return nil, fmt.Errorf("workspace: bad name %q", name)
	}
	return t.root.ReadFile(path.Join("files", name))
}

// put stores a file, replacing the entry of the same name, then deletes
// the oldest other files while the workspace is over its size bound
// (never those named in keep). It returns the names it deleted.
func (t *threadFiles) put(e wsEntry, data []byte, keep ...string) (evicted []string, err error) {
	if !filepath.IsLocal(e.Name) {
		return nil, fmt.Errorf("workspace: bad name %q", e.Name)
	}
	sum := sha256.Sum256(data)
	e.SHA256, e.Size = hex.EncodeToString(sum[:]), int64(len(data))
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
	t.idx.Files = slices.DeleteFunc(t.idx.Files, func(x wsEntry) bool { return x.Name == e.Name })
	t.idx.Files = append(t.idx.Files, e)
	keep = append(keep, e.Name)
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

// setPosted records the bot's upload of a file's current version.
func (t *threadFiles) setPosted(name, fileID string) error {
	t.ws.mu.Lock()
	defer t.ws.mu.Unlock()
	for i := range t.idx.Files {
		if t.idx.Files[i].Name == name {
			t.idx.Files[i].Posted = fileID
		}
	}
	return t.saveLocked()
}

func (t *threadFiles) sizeLocked() int64 {
	var n int64
	for _, e := range t.idx.Files {
		n += e.Size
	}
	return n
}

// sweep deletes the workspaces of threads not used for the TTL.
func (w *workspaces) sweep() {
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
		var idx wsIndexFile
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
