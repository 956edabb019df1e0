package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// How often a schedule fires, as the form asks it.
const (
	Daily    = "daily"
	Weekdays = "weekdays"
	Weekly   = "weekly"
	Monthly  = "monthly"
	Cron     = "cron"
)

// Every is a schedule as a person sets it: how often, at what time, in
// which time zone. [Every.Spec] turns it into a cron line.
type Every struct {
	Kind    string       // Daily, Weekdays, Weekly, Monthly or Cron
	Clock   string       // "9:00", "17:30" (not for Cron)
	Weekday time.Weekday // for Weekly
	Day     int          // day of the month, 1 to 28, for Monthly
	Line    string       // the five fields, for Cron
}

// FieldError is an error in one field of the form, by the field's name:
// "kind", "clock", "weekday", "day", "cron", "tz".
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// parser reads the five standard fields (minute, hour, day of month,
// month, day of week) and the descriptors (@daily, @weekly…).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec returns e as a cron line of five fields.
func (e Every) Spec() (string, error) {
	if e.Kind == Cron {
		line := strings.Join(strings.Fields(e.Line), " ")
		if line == "" {
			return "", fieldErr("cron", "Write a cron line of five fields, e.g. `0 9 * * 1` for Mondays at 9:00.")
		}
		if strings.HasPrefix(strings.ToUpper(line), "CRON_TZ=") || strings.HasPrefix(strings.ToUpper(line), "TZ=") {
			return "", fieldErr("cron", "Choose the time zone in its own field, not in the cron line.")
		}
		if _, err := parser.Parse(line); err != nil {
			return "", fieldErr("cron", "%q is not a cron line (%v); e.g. `0 9 * * 1` is Mondays at 9:00.", line, err)
		}
		return line, nil
	}
	h, m, err := parseClock(e.Clock)
	if err != nil {
		return "", err
	}
	switch e.Kind {
	case Daily:
		return fmt.Sprintf("%d %d * * *", m, h), nil
	case Weekdays:
		return fmt.Sprintf("%d %d * * 1-5", m, h), nil
	case Weekly:
		if e.Weekday < time.Sunday || e.Weekday > time.Saturday {
			return "", fieldErr("weekday", "Choose a day of the week.")
		}
		return fmt.Sprintf("%d %d * * %d", m, h, int(e.Weekday)), nil
	case Monthly:
		if e.Day < 1 || e.Day > 28 {
			return "", fieldErr("day", "Choose a day of the month from 1 to 28 (every month has those).")
		}
		return fmt.Sprintf("%d %d %d * *", m, h, e.Day), nil
	}
	return "", fieldErr("kind", "Choose how often: daily, weekdays, weekly, monthly or a cron line.")
}

// parseClock reads "9", "9:00", "09:30", "9am", "5:30pm".
func parseClock(s string) (hour, minute int, err error) {
	bad := fieldErr("clock", "%q is not a time of day; write it as 9:00 or 17:30.", s)
	t := strings.ToLower(strings.TrimSpace(s))
	pm, am := strings.HasSuffix(t, "pm"), strings.HasSuffix(t, "am")
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "pm"), "am"))
	hs, ms, hasMin := strings.Cut(t, ":")
	if hs == "" || len(hs) > 2 || hasMin && len(ms) != 2 {
		return 0, 0, bad
	}
	hour, err1 := strconv.Atoi(hs)
	if hasMin {
		minute, err = strconv.Atoi(ms)
	}
	if err1 != nil || err != nil || minute < 0 || minute > 59 || hour < 0 || hour > 23 {
		return 0, 0, bad
	}
	if pm || am {
		if hour < 1 || hour > 12 {
			return 0, 0, bad
		}
		hour %= 12
		if pm {
			hour += 12
		}
	}
	return hour, minute, nil
}

// A Plan is a parsed schedule: its cron line in a time zone.
type Plan struct {
	Spec string
	Loc  *time.Location
	s    cron.Schedule
}

// NewPlan parses spec (five fields) in the IANA time zone tz.
func NewPlan(spec, tz string) (*Plan, error) {
	loc, err := loadLocation(tz)
	if err != nil {
		return nil, err
	}
	s, err := parser.Parse(spec)
	if err != nil {
		return nil, fieldErr("cron", "%q is not a cron line: %v", spec, err)
	}
	return &Plan{Spec: spec, Loc: loc, s: s}, nil
}

func loadLocation(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fieldErr("tz", "%q is not a time zone; use a name such as Europe/Paris or America/New_York.", tz)
	}
	return loc, nil
}

// Next returns the first time the plan fires after t (the zero time if
// it never does within five years). Times are the zone's wall clock: a
// 9:00 report stays at 9:00 local across a change to or from daylight
// saving time.
func (p *Plan) Next(t time.Time) time.Time {
	return p.s.Next(t.In(p.Loc))
}

// Latest returns the last time the plan fired after after and at or
// before now, and how many of its times fell in that span (0: none).
// Past maxLatestSteps times it counts on from the day before now only
// (a schedule stopped for months that fires every minute).
func (p *Plan) Latest(after, now time.Time) (time.Time, int) {
	var last time.Time
	n := 0
	for t := p.Next(after); !t.IsZero() && !t.After(now); t = p.Next(t) {
		last = t
		if n++; n == maxLatestSteps {
			if day := now.Add(-24 * time.Hour); day.After(t) {
				t = day // far behind: jump ahead
			}
		}
	}
	return last, n
}

const maxLatestSteps = 10_000

// Validate checks that the plan fires within a year of now and never
// sooner than min after its previous time. Its errors are *FieldErrors
// of the field "cron".
func (p *Plan) Validate(now time.Time, min time.Duration) error {
	first := p.Next(now)
	if first.IsZero() || first.Sub(now) > 366*24*time.Hour {
		return fieldErr("cron", "`%s` never fires (no such date in the coming year); check the day and month fields.", p.Spec)
	}
	// The shortest gap between two of its times over its next 500.
	prev := first
	for range 500 {
		next := p.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); gap < min {
			return fieldErr("cron", "`%s` fires every %s; the shortest interval allowed here is %s.", p.Spec, human(gap), human(min))
		}
		prev = next
	}
	return nil
}

// human writes a duration as people do: "1 minute", "30 minutes",
// "1 hour", "90 minutes", "2 days".
func human(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.FormatInt(n, 10) + " " + one + "s"
	}
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return unit(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d >= time.Minute:
		return unit(int64(d/time.Minute), "minute")
	}
	return unit(int64(d/time.Second), "second")
}
