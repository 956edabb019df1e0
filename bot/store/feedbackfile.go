package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Feedback is one click on an answer's feedback buttons. It has the shape
// of the records bot/internal/replica keeps for replicas, and MessageTS
// besides (a thread may hold several answers).
type Feedback struct {
	Channel   string    `json:"channel"`
	ThreadTS  string    `json:"thread_ts"`
	MessageTS string    `json:"message_ts,omitempty"` // the answer's message
	User      string    `json:"user"`
	Rating    string    `json:"rating"` // ratingPositive or ratingNegative
	Model     string    `json:"model,omitempty"`
	Time      time.Time `json:"time"`
}

// Feedback: the clicks on answers' feedback buttons.
const (
	// feedbackFileName is the file in the data directory that keeps
	// them, one JSON line a click.
	FeedbackFileName = "feedback.jsonl"
	// feedbackFileBytes is the size past which the file is rotated to
	// feedbackFileName+".1", replacing the one before: about 50,000
	// clicks a file.
	FeedbackFileBytes = 10 << 20
)

// FeedbackFile keeps feedback in the data directory: one JSON line per click
// appended to feedback.jsonl in the data directory. When the file would
// pass maxBytes it becomes feedback.jsonl.1, replacing the one before:
// the two files keep the latest clicks, between maxBytes and twice that.
// Tallies count what the two files hold; they are kept in memory, read
// from the files when the store is opened. One process writes the files.
type FeedbackFile struct {
	path     string
	maxBytes int64

	mu   sync.Mutex
	size int64 // of the current file
	// cut says that the current file ends in a line cut short (a write
	// that failed): the next record starts on a line of its own.
	cut bool
	// cur and prev count the clicks of the current and the rotated file,
	// by channel and rating.
	cur, prev map[string]map[string]int64
}

// OpenFeedbackFile opens the feedback records in dir, counting the
// clicks they hold. Lines that are not records are skipped.
func OpenFeedbackFile(dir string, maxBytes int64) (*FeedbackFile, error) {
	f := &FeedbackFile{path: filepath.Join(dir, FeedbackFileName), maxBytes: maxBytes}
	var err error
	if f.prev, _, _, err = tallyFile(f.path + ".1"); err != nil {
		return nil, err
	}
	if f.cur, f.size, f.cut, err = tallyFile(f.path); err != nil {
		return nil, err
	}
	return f, nil
}

// tallyFile counts the clicks of a feedback file by channel and rating,
// returns its size and whether its last line lacks its line break; a
// missing file is empty.
func tallyFile(path string) (t map[string]map[string]int64, size int64, cut bool, err error) {
	t = map[string]map[string]int64{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading feedback: %w", err)
	}
	for line := range bytes.Lines(data) {
		var rec Feedback
		if json.Unmarshal(line, &rec) == nil && rec.Channel != "" && rec.Rating != "" {
			count(t, rec)
		}
	}
	return t, int64(len(data)), len(data) > 0 && data[len(data)-1] != '\n', nil
}

func count(t map[string]map[string]int64, f Feedback) {
	if t[f.Channel] == nil {
		t[f.Channel] = map[string]int64{}
	}
	t[f.Channel][f.Rating]++
}

// AddFeedback appends a click to the file, first rotating it when the
// line would take it past maxBytes.
func (s *FeedbackFile) AddFeedback(_ context.Context, f Feedback) error {
	if f.Channel == "" || f.Rating == "" {
		return errors.New("feedback needs a channel and a rating")
	}
	line, err := json.Marshal(f)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		line = append([]byte{'\n'}, line...)
	}
	if s.size > 0 && s.size+int64(len(line)) > s.maxBytes {
		if err := os.Rename(s.path, s.path+".1"); err != nil {
			return fmt.Errorf("rotating feedback: %w", err)
		}
		s.prev, s.cur, s.size = s.cur, map[string]map[string]int64{}, 0
		line = bytes.TrimPrefix(line, []byte{'\n'})
	}
	file, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) // it holds user IDs
	if err != nil {
		return fmt.Errorf("recording feedback: %w", err)
	}
	_, err = file.Write(line)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.cut = true // part of the line may be written
		return fmt.Errorf("recording feedback: %w", err)
	}
	s.size += int64(len(line))
	s.cut = false
	count(s.cur, f)
	return nil
}

// FeedbackTally counts a channel's clicks in the two files by rating.
func (s *FeedbackFile) FeedbackTally(_ context.Context, channel string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.prev[channel])
	if out == nil {
		out = map[string]int64{}
	}
	for r, n := range s.cur[channel] {
		out[r] += n
	}
	return out, nil
}
