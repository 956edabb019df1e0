package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
)

// SchedulesFile is the name of the schedules file in the data directory.
const SchedulesFile = "schedules.json"

// FileSchedules keeps the schedules (package schedule) of a bot that runs
// alone in a JSON file, written atomically on every change, with the
// fires it claimed.
type FileSchedules struct {
	Path string

	mu        sync.Mutex
	schedules map[string]schedule.Schedule
	claims    map[string]int64 // schedule id: the last time claimed (Unix)
}

// OpenSchedules loads the schedules from dir; a file that cannot be read
// or parsed is an error naming it.
func OpenSchedules(dir string) (*FileSchedules, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	s := &FileSchedules{Path: filepath.Join(dir, SchedulesFile), schedules: map[string]schedule.Schedule{}, claims: map[string]int64{}}
	data, err := os.ReadFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading schedules: %w", err)
	default:
		var file schedulesFile
		if err := json.Unmarshal(data, &file); err != nil {
			return nil, fmt.Errorf("schedules file %s is corrupt (fix or delete it): %w", s.Path, err)
		}
		for _, sc := range file.Schedules {
			s.schedules[sc.ID] = sc
		}
		for id, t := range file.Claims {
			s.claims[id] = t
		}
	}
	return s, nil
}

type schedulesFile struct {
	Schedules []schedule.Schedule `json:"schedules"`
	Claims    map[string]int64    `json:"claims,omitempty"`
}

// List returns the schedules, oldest first.
func (s *FileSchedules) List(ctx context.Context) ([]schedule.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return schedule.Sorted(s.schedules), nil
}

// Put adds or replaces a schedule.
func (s *FileSchedules) Put(ctx context.Context, sc schedule.Schedule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.schedules[sc.ID]
	s.schedules[sc.ID] = sc
	if err := s.saveLocked(); err != nil {
		if had {
			s.schedules[sc.ID] = old
		} else {
			delete(s.schedules, sc.ID)
		}
		return err
	}
	return nil
}

// Update changes schedule id with f; f returning nil deletes it. An
// unknown id is schedule.ErrNotFound.
func (s *FileSchedules) Update(ctx context.Context, id string, f func(*schedule.Schedule) *schedule.Schedule) (*schedule.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.schedules[id]
	if !ok {
		return nil, schedule.ErrNotFound
	}
	cp := old.Clone()
	sc := f(&cp)
	if sc == nil {
		delete(s.schedules, id)
		delete(s.claims, id)
	} else {
		s.schedules[id] = *sc
	}
	if err := s.saveLocked(); err != nil {
		s.schedules[id] = old
		return nil, err
	}
	return sc, nil
}

// Claim says whether this process fires schedule id at at: once.
func (s *FileSchedules) Claim(ctx context.Context, id string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.claims[id]
	if had && old >= at.Unix() {
		return false, nil
	}
	s.claims[id] = at.Unix()
	if err := s.saveLocked(); err != nil {
		if had {
			s.claims[id] = old
		} else {
			delete(s.claims, id)
		}
		return false, err
	}
	return true, nil
}

func (s *FileSchedules) saveLocked() error {
	file := schedulesFile{Schedules: schedule.Sorted(s.schedules), Claims: s.claims}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.Path, append(data, '\n'))
}

// RedisSchedules keeps the schedules in the Redis replicas share; a fire
// is claimed with SET NX PX, so that one replica makes it.
type RedisSchedules struct{ store *replica.Store }

// NewRedisSchedules returns the schedules kept in st.
func NewRedisSchedules(st *replica.Store) RedisSchedules { return RedisSchedules{st} }

// List returns the schedules, oldest first. A record that cannot be read
// is left out and named in the error returned with the rest.
func (s RedisSchedules) List(ctx context.Context) ([]schedule.Schedule, error) {
	recs, err := s.store.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]schedule.Schedule, len(recs))
	var bad error
	for id, rec := range recs {
		var sc schedule.Schedule
		if err := json.Unmarshal(rec, &sc); err != nil {
			bad = errors.Join(bad, fmt.Errorf("schedule %s: %w", id, err))
			continue
		}
		m[id] = sc
	}
	return schedule.Sorted(m), bad
}

// Put adds or replaces a schedule.
func (s RedisSchedules) Put(ctx context.Context, sc schedule.Schedule) error {
	rec, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return s.store.PutSchedule(ctx, sc.ID, rec)
}

// Update changes schedule id with f in one step across replicas; f
// returning nil deletes it.
func (s RedisSchedules) Update(ctx context.Context, id string, f func(*schedule.Schedule) *schedule.Schedule) (*schedule.Schedule, error) {
	var out *schedule.Schedule
	err := s.store.UpdateSchedule(ctx, id, func(raw []byte) ([]byte, error) {
		var sc schedule.Schedule
		if err := json.Unmarshal(raw, &sc); err != nil {
			return nil, fmt.Errorf("schedule %s: %w", id, err)
		}
		out = f(&sc)
		if out == nil {
			return nil, nil
		}
		return json.Marshal(out)
	})
	if errors.Is(err, replica.ErrNoSchedule) {
		return nil, schedule.ErrNotFound
	}
	return out, err
}

// Claim says whether this replica fires schedule id at at: true for one
// replica only.
func (s RedisSchedules) Claim(ctx context.Context, id string, at time.Time) (bool, error) {
	return s.store.ClaimFire(ctx, id, at, schedule.ClaimTTL)
}
