package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe says a plan in words: "every Monday at 9:00", "every day at
// 7:30", "on weekdays at 9:00", "on the 1st of each month at 8:00"; a
// cron line it cannot say otherwise is shown as it is.
func Describe(spec string) string {
	f := strings.Fields(spec)
	if len(f) != 5 {
		return "at `" + spec + "`"
	}
	m, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || f[3] != "*" {
		return "at `" + spec + "`"
	}
	at := fmt.Sprintf("at %d:%02d", h, m)
	dom, dow := f[2], f[4]
	switch {
	case dom == "*" && dow == "*":
		return "every day " + at
	case dom == "*" && dow == "1-5":
		return "on weekdays " + at
	case dom == "*":
		if d, err := strconv.Atoi(dow); err == nil && d >= 0 && d <= 7 {
			return "every " + time.Weekday(d%7).String() + " " + at
		}
	case dow == "*":
		if d, err := strconv.Atoi(dom); err == nil && d >= 1 && d <= 31 {
			return "on the " + ordinal(d) + " of each month " + at
		}
	}
	return "at `" + spec + "`"
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// ParseWhen reads how often and when from the words after "repeat":
// "every monday 9:00", "daily at 8:30", "weekdays 9am", "every day at
// 7", "monthly on the 1st at 8:00", "cron 0 9 * * 1".
func ParseWhen(words []string) (Every, error) {
	var w []string
	for _, x := range words {
		x = strings.ToLower(strings.Trim(x, ",."))
		switch x {
		case "every", "at", "on", "the", "each", "of", "", "month's":
			continue
		}
		w = append(w, x)
	}
	usage := fieldErr("kind", "Say how often and when, e.g. `repeat every monday 9:00`, `repeat weekdays 8:30`, `repeat daily 7:00`, `repeat monthly 1st 9:00` or `repeat cron 0 9 * * 1`.")
	if len(w) == 0 {
		return Every{}, usage
	}
	if w[0] == "cron" {
		return Every{Kind: Cron, Line: strings.Join(w[1:], " ")}, nil
	}
	clock := "9:00"
	if len(w) > 1 {
		clock = strings.Join(w[len(w)-1:], "")
		w = w[:len(w)-1]
		if len(w) > 1 && (clock == "am" || clock == "pm") {
			clock = w[len(w)-1] + clock
			w = w[:len(w)-1]
		}
	}
	e := Every{Clock: clock}
	switch kind := w[0]; kind {
	case "day", "daily", "days":
		e.Kind = Daily
	case "weekday", "weekdays":
		e.Kind = Weekdays
	case "month", "monthly":
		e.Kind, e.Day = Monthly, 1
		if len(w) > 1 {
			d, err := strconv.Atoi(strings.TrimRight(w[1], "stndrh"))
			if err != nil {
				return Every{}, fieldErr("day", "%q is not a day of the month; say e.g. `repeat monthly 1st 9:00`.", w[1])
			}
			e.Day = d
		}
	default:
		for d := time.Sunday; d <= time.Saturday; d++ {
			name := strings.ToLower(d.String())
			if kind == name || kind == name+"s" || len(kind) >= 3 && strings.HasPrefix(name, kind) {
				e.Kind, e.Weekday = Weekly, d
			}
		}
		if e.Kind == "" {
			return Every{}, usage
		}
	}
	return e, nil
}
