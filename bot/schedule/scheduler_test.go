package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/bot/store"
)

// firer records fires and notices; fail says how a fire ends.
type firer struct {
	mu      sync.Mutex
	fires   []fired
	notices []schedule.Notice
	fail    func(n int) error // the nth fire's error (from 0)
	figures func(n int) []schedule.Figure
}

type fired struct {
	at   time.Time // the schedule's time
	when time.Time // when it was fired
	good *schedule.Fire
}

func (f *firer) Fire(ctx context.Context, sc schedule.Schedule, at time.Time) (schedule.Fire, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.fires)
	f.fires = append(f.fires, fired{at: at, when: time.Now(), good: sc.Good})
	if f.fail != nil {
		if err := f.fail(n); err != nil {
			return schedule.Fire{}, err
		}
	}
	out := schedule.Fire{Message: fmt.Sprintf("ts%d", n)}
	if f.figures != nil {
		out.Figures = f.figures(n)
	}
	return out, nil
}

func (f *firer) Tell(ctx context.Context, sc schedule.Schedule, n schedule.Notice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notices = append(f.notices, n)
}

func (f *firer) snapshot() ([]fired, []schedule.Notice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fires), slices.Clone(f.notices)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// monday9 is a weekly schedule, Mondays 9:00 in Paris, created at created.
func monday9(created time.Time) schedule.Schedule {
	return schedule.Schedule{ID: "s1", Channel: "C1", Owner: "U1", Question: "weekly sign-ups", Spec: "0 9 * * 1", TZ: "Europe/Paris", Created: created}
}

var paris, _ = time.LoadLocation("Europe/Paris")

// run runs a scheduler on st for d of fake time, then stops it.
func run(t *testing.T, st schedule.Store, f schedule.Firer, lim schedule.Limits, d time.Duration) {
	ctx, cancel := context.WithCancel(t.Context())
	s := schedule.New(st, f, lim, quiet())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	time.Sleep(d)
	cancel()
	<-done
}

// TestFiresOnTime: a weekly schedule fires at 9:00 local each Monday,
// once, across the change from summer time, and each fire sees the last
// good one's figures.
func TestFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// synctest's clock starts at 2000-01-01 UTC: move to a Friday in
		// October 2026 (summer time ends on the 25th).
		time.Sleep(time.Until(time.Date(2026, 10, 16, 12, 0, 0, 0, time.UTC)))
		st, err := store.OpenSchedules(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(t.Context(), monday9(time.Now())); err != nil {
			t.Fatal(err)
		}
		f := &firer{figures: func(n int) []schedule.Figure {
			return []schedule.Figure{{Label: "Sign-ups", Text: fmt.Sprint(100 + n), Value: float64(100 + n)}}
		}}
		run(t, st, f, schedule.Limits{}, 17*24*time.Hour)
		fires, notices := f.snapshot()
		want := []string{"2026-10-19T09:00:00+02:00", "2026-10-26T09:00:00+01:00", "2026-11-02T09:00:00+01:00"}
		if len(fires) != len(want) || len(notices) != 0 {
			t.Fatalf("fired %v, told %v; want %v", fires, notices, want)
		}
		for i, fr := range fires {
			if got := fr.at.In(paris).Format(time.RFC3339); got != want[i] || !fr.when.Equal(fr.at) {
				t.Errorf("fire %d for %s at %s, want %s on time", i, got, fr.when, want[i])
			}
			if i > 0 && (fr.good == nil || len(fr.good.Figures) != 1 || fr.good.Figures[0].Value != float64(100+i-1)) {
				t.Errorf("fire %d saw the last good fire %+v, want its figure %d", i, fr.good, 100+i-1)
			}
		}
		list, _ := st.List(t.Context())
		if l := list[0].Last; l == nil || l.Message != "ts2" || l.Err != "" {
			t.Errorf("last fire recorded %+v", l)
		}
	})
}

// TestMissedFire: a time missed while no replica ran is made up once on
// start within the grace window, and skipped (the owner told) past it.
func TestMissedFire(t *testing.T) {
	for _, tt := range []struct {
		name  string
		start time.Time // when the bot comes back
		fired bool
	}{
		{"within grace", time.Date(2026, 11, 2, 9, 40, 0, 0, paris), true},
		{"past grace", time.Date(2026, 11, 2, 12, 0, 0, 0, paris), false},
		{"weeks late", time.Date(2026, 11, 20, 12, 0, 0, 0, paris), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC)))
				dir := t.TempDir()
				st, _ := store.OpenSchedules(dir)
				sc := monday9(time.Now())
				sc.Last = &schedule.Fire{At: time.Date(2026, 10, 26, 9, 0, 0, 0, paris)} // the last one made
				st.Put(t.Context(), sc)
				time.Sleep(time.Until(tt.start)) // down
				f := &firer{}
				run(t, st, f, schedule.Limits{}, time.Minute)
				fires, notices := f.snapshot()
				if tt.fired {
					if len(fires) != 1 || !fires[0].at.Equal(time.Date(2026, 11, 2, 9, 0, 0, 0, paris)) || len(notices) != 0 {
						t.Fatalf("fired %v, told %v; want the missed time made up once", fires, notices)
					}
					return
				}
				if len(fires) != 0 || len(notices) != 1 || notices[0].Kind != schedule.Skipped {
					t.Fatalf("fired %v, told %v; want it skipped and the owner told", fires, notices)
				}
				list, _ := st.List(t.Context())
				if l := list[0].Last; l == nil || !l.Skipped || l.Missed < 1 {
					t.Errorf("last fire %+v, want a skipped one", l)
				}
			})
		})
	}
}

// TestRestartBetweenFires: a bot restarted between two fires (a new
// process, the same file) fires the second once and not the first again.
func TestRestartBetweenFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)))
		dir := t.TempDir()
		st, _ := store.OpenSchedules(dir)
		st.Put(t.Context(), monday9(time.Now()))
		f := &firer{}
		run(t, st, f, schedule.Limits{}, 2*24*time.Hour) // Monday the 2nd fires
		time.Sleep(3 * 24 * time.Hour)                   // down until Thursday
		st2, err := store.OpenSchedules(dir)
		if err != nil {
			t.Fatal(err)
		}
		run(t, st2, f, schedule.Limits{}, 5*24*time.Hour) // the 9th fires
		fires, _ := f.snapshot()
		if len(fires) != 2 || !fires[0].at.Equal(time.Date(2026, 11, 2, 9, 0, 0, 0, paris)) || !fires[1].at.Equal(time.Date(2026, 11, 9, 9, 0, 0, 0, paris)) {
			t.Fatalf("fired %v, want the 2nd and the 9th once each", fires)
		}
	})
}

// TestRetries: a failing fire is tried again after 1, 4 and 16 minutes;
// after the last try the owner is told; a PauseError pauses at once.
func TestRetries(t *testing.T) {
	due := time.Date(2026, 11, 2, 9, 0, 0, 0, paris)
	for _, tt := range []struct {
		name    string
		fail    func(int) error
		tries   []time.Duration // after due
		notice  schedule.NoticeKind
		paused  bool
		lastErr bool
	}{
		{"second try", func(n int) error {
			if n == 0 {
				return errors.New("model: 503")
			}
			return nil
		}, []time.Duration{0, time.Minute}, 0, false, false},
		{"every try", func(int) error { return errors.New("model: 503") },
			[]time.Duration{0, time.Minute, 5 * time.Minute, 21 * time.Minute}, schedule.Failed, false, true},
		{"channel archived", func(int) error { return &schedule.PauseError{Reason: "the channel was archived"} },
			[]time.Duration{0}, schedule.Paused, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)))
				st, _ := store.OpenSchedules(t.TempDir())
				st.Put(t.Context(), monday9(time.Now()))
				f := &firer{fail: tt.fail}
				run(t, st, f, schedule.Limits{}, 2*24*time.Hour)
				fires, notices := f.snapshot()
				var got []time.Duration
				for _, fr := range fires {
					got = append(got, fr.when.Sub(due))
				}
				if !slices.Equal(got, tt.tries) {
					t.Errorf("tries at %v after the time, want %v", got, tt.tries)
				}
				if tt.notice == 0 && len(notices) != 0 || tt.notice != 0 && (len(notices) != 1 || notices[0].Kind != tt.notice || notices[0].Err == nil) {
					t.Errorf("told %+v, want kind %d", notices, tt.notice)
				}
				list, _ := st.List(t.Context())
				sc := list[0]
				if (sc.Paused != "") != tt.paused || (sc.Last.Err != "") != tt.lastErr {
					t.Errorf("schedule paused %q, last %+v", sc.Paused, sc.Last)
				}
			})
		})
	}
}

func TestChanges(t *testing.T) {
	prev := []schedule.Figure{{Label: "Sign-ups", Text: "1,234", Value: 1234}, {Label: "Churn", Text: "2.5%", Value: 2.5}, {Label: "Gone", Text: "7", Value: 7}}
	cur := []schedule.Figure{{Label: "sign-ups", Text: "1,456", Value: 1456}, {Label: "Churn", Text: "2.1%", Value: 2.1}, {Label: "New", Text: "99", Value: 99}}
	var got []string
	for _, c := range schedule.Changes(prev, cur) {
		got = append(got, c.String())
	}
	want := []string{"sign-ups: 1,234 → 1,456 (+18.0%)", "Churn: 2.5% → 2.1% (-0.4 points)"}
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
}
