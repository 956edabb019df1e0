package store

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestFileGrants: a source granted to a channel is granted there alone,
// survives reopening the file, keeps the channel's other settings, and
// is gone once denied; a grant of a source no longer configured grants
// nothing.
func TestFileGrants(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	configured := []string{"sales", "warehouse"}
	if got := s.Get("C1").Granted(configured); got != nil {
		t.Errorf("a new channel has %v granted", got)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		change func(*ChannelSettings)
	}{
		{SetDebug(true)},
		{SetGrant("warehouse", true, "U1", now)},
		{SetGrant("old", true, "U1", now)},
		{SetGrant("sales", true, "U2", now.Add(time.Hour))},
		{SetGrant("sales", false, "U2", now)},
	} {
		if err := s.Set("C1", step.change, "U1", now); err != nil {
			t.Fatal(err)
		}
	}
	s, err = OpenSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Get("C1")
	if got := c.Granted(configured); !slices.Equal(got, []string{"warehouse"}) || !c.Debug {
		t.Errorf("granted %v (debug %v), want [warehouse] and debug on", got, c.Debug)
	}
	if g, ok := c.GrantOf("warehouse"); !ok || g.By != "U1" || !g.At.Equal(now) {
		t.Errorf("the grant of warehouse is %+v", g)
	}
	if got := s.Get("C2").Granted(configured); got != nil {
		t.Errorf("another channel has %v granted", got)
	}
}

// TestFileGrantUndone: a grant that cannot be saved is not made, and the
// channel's earlier grants are unchanged.
func TestFileGrantUndone(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.Set("C1", SetGrant("sales", true, "U1", now), "U1", now); err != nil {
		t.Fatal(err)
	}
	s.Path = filepath.Join(dir, "gone", SettingsFile) // no directory to save into, even for root
	if err := s.Set("C1", SetGrant("sales", false, "U1", now), "U1", now); err == nil {
		t.Fatal("saving into a read-only directory succeeded")
	}
	if err := s.Set("C1", SetGrant("warehouse", true, "U1", now), "U1", now); err == nil {
		t.Fatal("saving into a read-only directory succeeded")
	}
	if got := s.Get("C1").Granted([]string{"sales", "warehouse"}); !slices.Equal(got, []string{"sales"}) {
		t.Errorf("after failed saves, granted %v, want [sales]", got)
	}
}
