package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEverySpec(t *testing.T) {
	for _, tt := range []struct {
		e     Every
		want  string
		field string // of the error, if any
	}{
		{Every{Kind: Daily, Clock: "9:00"}, "0 9 * * *", ""},
		{Every{Kind: Daily, Clock: "5:30pm"}, "30 17 * * *", ""},
		{Every{Kind: Weekdays, Clock: "08:15"}, "15 8 * * 1-5", ""},
		{Every{Kind: Weekly, Clock: "9", Weekday: time.Monday}, "0 9 * * 1", ""},
		{Every{Kind: Monthly, Clock: "7:00", Day: 1}, "0 7 1 * *", ""},
		{Every{Kind: Cron, Line: " 0  9 * * 1 "}, "0 9 * * 1", ""},
		{Every{Kind: Cron, Line: "@daily"}, "@daily", ""},
		{Every{Kind: Monthly, Clock: "7:00", Day: 31}, "", "day"},
		{Every{Kind: Daily, Clock: "25:00"}, "", "clock"},
		{Every{Kind: Daily, Clock: "nine"}, "", "clock"},
		{Every{Kind: Daily, Clock: "13pm"}, "", "clock"},
		{Every{Kind: Cron, Line: "every monday"}, "", "cron"},
		{Every{Kind: Cron, Line: "CRON_TZ=UTC 0 9 * * 1"}, "", "cron"},
		{Every{Kind: Cron}, "", "cron"},
		{Every{Kind: "hourly", Clock: "9:00"}, "", "kind"},
	} {
		got, err := tt.e.Spec()
		var fe *FieldError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: %v", tt.e, err)
		case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field):
			t.Errorf("%+v: error %v, want one for the field %q", tt.e, err, tt.field)
		case got != tt.want:
			t.Errorf("%+v: %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		spec, want string
	}{
		{"0 9 * * 1", ""},
		{"0 * * * *", ""},
		{"0 0 30 2 *", "never fires"},
		{"*/5 * * * *", "fires every 5 minutes; the shortest interval allowed here is 1 hour"},
		{"0,30 9 * * *", "fires every 30 minutes"},
	} {
		p, err := NewPlan(tt.spec, "Europe/Paris")
		if err != nil {
			t.Fatal(err)
		}
		err = p.Validate(now, time.Hour)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.spec, err, tt.want)
		}
	}
	if _, err := NewPlan("0 9 * * 1", "Mars/Olympus"); err == nil || !strings.Contains(err.Error(), "not a time zone") {
		t.Errorf("a bad zone: %v", err)
	}
}

// TestDaylightSaving: a 9:00 Monday report stays at 9:00 local across
// the changes, both ways; a time that does not exist on the day of the
// change (2:30 in New York in March) is skipped that day, not fired at
// another hour or twice.
func TestDaylightSaving(t *testing.T) {
	for _, tt := range []struct {
		tz, spec string
		from     time.Time
		want     []string
	}{
		{"Europe/Berlin", "0 9 * * 1", time.Date(2026, 10, 19, 0, 0, 0, 0, time.UTC),
			[]string{"2026-10-19T09:00:00+02:00", "2026-10-26T09:00:00+01:00", "2026-11-02T09:00:00+01:00"}},
		{"America/New_York", "0 9 * * 1", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
			[]string{"2026-03-02T09:00:00-05:00", "2026-03-09T09:00:00-04:00", "2026-03-16T09:00:00-04:00"}},
		{"America/New_York", "30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC),
			// 2:30 does not exist on March 8th there: that day has none.
			[]string{"2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
	} {
		p, err := NewPlan(tt.spec, tt.tz)
		if err != nil {
			t.Fatal(err)
		}
		at := tt.from
		var got []string
		for range tt.want {
			at = p.Next(at)
			got = append(got, at.Format(time.RFC3339))
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s %s: %v, want %v", tt.tz, tt.spec, got, tt.want)
		}
	}
}

func TestParseWhen(t *testing.T) {
	for _, tt := range []struct {
		in, spec, desc string
	}{
		{"every monday 9:00", "0 9 * * 1", "every Monday at 9:00"},
		{"every Monday at 9am", "0 9 * * 1", "every Monday at 9:00"},
		{"fridays 17:30", "30 17 * * 5", "every Friday at 17:30"},
		{"daily at 7", "0 7 * * *", "every day at 7:00"},
		{"every day 8:05", "5 8 * * *", "every day at 8:05"},
		{"weekdays 9 am", "0 9 * * 1-5", "on weekdays at 9:00"},
		{"monthly on the 2nd at 8:00", "0 8 2 * *", "on the 2nd of each month at 8:00"},
		{"cron 15 6 * * 1,3", "15 6 * * 1,3", "at `15 6 * * 1,3`"},
	} {
		e, err := ParseWhen(strings.Fields(tt.in))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		spec, err := e.Spec()
		if err != nil || spec != tt.spec || Describe(spec) != tt.desc {
			t.Errorf("%q: %q (%v), %q; want %q, %q", tt.in, spec, err, Describe(spec), tt.spec, tt.desc)
		}
	}
	for _, in := range []string{"", "sometimes", "monthly xth 9:00"} {
		if _, err := ParseWhen(strings.Fields(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestLatestFarBehind: a schedule firing every minute, stopped for a
// year, finds its latest time without walking every minute of the year.
func TestLatestFarBehind(t *testing.T) {
	p, err := NewPlan("* * * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 10, 0, 30, 0, time.UTC)
	last, n := p.Latest(now.AddDate(-1, 0, 0), now)
	if !last.Equal(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)) || n < maxLatestSteps || n > maxLatestSteps+24*60 {
		t.Errorf("Latest = %s, %d times", last, n)
	}
	if last, n := p.Latest(now, now); !last.IsZero() || n != 0 {
		t.Errorf("Latest(now, now) = %s, %d", last, n)
	}
}
