package tui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// History limits.
const (
	// DefaultHistorySize is how many entries a history keeps.
	DefaultHistorySize = 1000
	// maxEntry is the largest entry saved, in bytes; a larger question
	// (a big paste) is kept for the session but not written.
	maxEntry = 64 << 10
)

// History is the questions asked in the chat, oldest first, kept in a
// file across sessions: one entry per line, each a JSON string, so that an
// entry of many lines stays one entry. The file is appended to as entries
// come, and rewritten with the newest entries when it has grown to twice
// its bound. A line that does not decode (a corrupt or truncated file) is
// skipped. The file is private (mode 0600, in a directory of mode 0700).
//
// A History is safe for concurrent use.
type History struct {
	path string // "" for a history kept in memory only
	max  int

	mu      sync.Mutex
	entries []string
	lines   int  // lines in the file
	cutLine bool // the file does not end with a line feed
}

// DefaultHistoryPath returns $XDG_STATE_HOME/sandpiper/history, or
// ~/.local/state/sandpiper/history when XDG_STATE_HOME is unset or not
// absolute. getenv is os.Getenv, or a test's.
func DefaultHistoryPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if home == "" {
			var err error
			if home, err = os.UserHomeDir(); err != nil {
				return "", fmt.Errorf("tui: history: %w", err)
			}
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "sandpiper", "history"), nil
}

// OpenHistory reads the history in the file at path, keeping the newest
// max entries (DefaultHistorySize when max <= 0). A missing file is an
// empty history; the file and its directory are made on the first Add.
// An empty path gives a history that is not saved.
func OpenHistory(path string, max int) (*History, error) {
	if max <= 0 {
		max = DefaultHistorySize
	}
	h := &History{path: path, max: max}
	if path == "" {
		return h, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("tui: history: %w", err)
	}
	h.cutLine = len(data) > 0 && data[len(data)-1] != '\n'
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8*maxEntry) // an entry is escaped: a line may be longer than it
	for sc.Scan() {
		h.lines++
		var e string
		if json.Unmarshal(sc.Bytes(), &e) != nil || e == "" {
			continue
		}
		h.entries = append(h.entries, e)
	}
	// A line too long for the scanner ends the reading: what came before
	// it is kept.
	h.trim()
	return h, nil
}

// Entries returns a copy of the entries, oldest first.
func (h *History) Entries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.entries...)
}

// Add appends e, unless it is blank or the same as the newest entry, and
// saves it. The entry is in the history even when saving fails.
func (h *History) Add(e string) error {
	if strings.TrimSpace(e) == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == e {
		return nil
	}
	h.entries = append(h.entries, e)
	h.trim()
	if h.path == "" || len(e) > maxEntry {
		return nil
	}
	if h.lines >= 2*h.max {
		return h.rewrite()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("tui: history: %w", err)
	}
	line = append(line, '\n')
	if h.cutLine { // end the last line first, so the entry has a line of its own
		line = append([]byte{'\n'}, line...)
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return fmt.Errorf("tui: history: %w", err)
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("tui: history: %w", err)
	}
	// A file made by hand, or by an older version, may be readable by
	// others: questions can hold private data.
	f.Chmod(0o600)
	// One write per entry: two sessions appending at once do not mix
	// their lines.
	_, werr := f.Write(line)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("tui: history: %w", err)
	}
	h.lines++
	h.cutLine = false
	return nil
}

// trim keeps the newest max entries.
func (h *History) trim() {
	if n := len(h.entries) - h.max; n > 0 {
		h.entries = append([]string(nil), h.entries[n:]...)
	}
}

// rewrite replaces the file with the entries, through a temporary file
// renamed over it.
func (h *History) rewrite() error {
	var buf bytes.Buffer
	lines := 0
	for _, e := range h.entries {
		if len(e) > maxEntry {
			continue
		}
		line, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("tui: history: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		lines++
	}
	dir := filepath.Dir(h.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tui: history: %w", err)
	}
	f, err := os.CreateTemp(dir, ".history-*")
	if err != nil {
		return fmt.Errorf("tui: history: %w", err)
	}
	_, werr := f.Write(buf.Bytes())
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("tui: history: %w", err)
	}
	if err := os.Rename(f.Name(), h.path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("tui: history: %w", err)
	}
	h.lines, h.cutLine = lines, false
	return nil
}
