package store

import (
	"testing"
	"time"
)

// TestFileSettingsSet: changing one setting keeps the others, and the
// change survives reopening the file.
func TestFileSettingsSet(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Get("C1"); got.Debug || got.StateOff {
		t.Errorf("default settings %+v, want debug off and state on", got)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := s.Set("C1", SetDebug(true), "U1", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("C1", SetState(false), "U2", now); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Get("C1"); !got.Debug || !got.StateOff || got.UpdatedBy != "U2" {
		t.Errorf("settings %+v, want debug on, state off, changed by U2", got)
	}
	if got := s.Get("C2"); got.Debug || got.StateOff {
		t.Errorf("another channel's settings %+v", got)
	}
}
