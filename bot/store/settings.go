package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SettingsFile is the name of the per-channel settings file in the data
// directory.
const SettingsFile = "channels.json"

// ChannelSettings is what admins set for one channel. The zero value is
// the default: debug off, state kept, no data source granted.
type ChannelSettings struct {
	Debug bool `json:"debug"`
	// StateOff: the channel's threads keep no Python variables from one
	// run to the next (state on|off).
	StateOff bool `json:"state_off,omitempty"`
	// Sources are the data sources granted to the channel, by name
	// ([SetGrant]).
	Sources   map[string]Grant `json:"sources,omitempty"`
	UpdatedBy string           `json:"updated_by,omitempty"`
	UpdatedAt time.Time        `json:"updated_at,omitzero"`
}

// SetDebug returns the settings with debug set.
func SetDebug(on bool) func(*ChannelSettings) { return func(c *ChannelSettings) { c.Debug = on } }

// SetState returns the settings with the state kept (on) or not.
func SetState(on bool) func(*ChannelSettings) { return func(c *ChannelSettings) { c.StateOff = !on } }

// FileSettings keeps per-channel settings in a JSON file, written
// atomically (temporary file, fsync, rename) on every change.
type FileSettings struct {
	Path string

	mu       sync.Mutex
	channels map[string]ChannelSettings
}

// OpenSettings loads the store from dir, creating dir when missing. A file
// that cannot be read or parsed is an error naming it.
func OpenSettings(dir string) (*FileSettings, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	s := &FileSettings{Path: filepath.Join(dir, SettingsFile), channels: map[string]ChannelSettings{}}
	data, err := os.ReadFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading settings: %w", err)
	default:
		var file struct {
			Channels map[string]ChannelSettings `json:"channels"`
		}
		if err := json.Unmarshal(data, &file); err != nil {
			return nil, fmt.Errorf("settings file %s is corrupt (fix or delete it): %w", s.Path, err)
		}
		if file.Channels != nil {
			s.channels = file.Channels
		}
	}
	// Prove the directory is writable now rather than at the first toggle.
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("data directory %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return s, nil
}

// Get returns a channel's settings; a channel never set has the zero
// settings.
func (s *FileSettings) Get(channel string) ChannelSettings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.channels[channel]
}

// Set changes a channel's settings (change is [SetDebug]'s,
// [SetState]'s or [SetGrant]'s) and saves the store. On a failed save
// the change is undone.
func (s *FileSettings) Set(channel string, change func(*ChannelSettings), by string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.channels[channel]
	cs := old
	change(&cs)
	cs.UpdatedBy, cs.UpdatedAt = by, now.UTC()
	s.channels[channel] = cs
	if err := s.saveLocked(); err != nil {
		if had {
			s.channels[channel] = old
		} else {
			delete(s.channels, channel)
		}
		return err
	}
	return nil
}

func (s *FileSettings) saveLocked() error {
	data, err := json.MarshalIndent(struct {
		Channels map[string]ChannelSettings `json:"channels"`
	}{s.channels}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.Path, append(data, '\n'))
}

// writeFileAtomic replaces path with data so that readers (and a crash)
// see either the old or the new contents, never a mix.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
