package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// A SettingError is a variable whose value is wrong. It names the
// variable, the value as written, the dotenv file that set it (when one
// did), and what would do, with an example.
type SettingError struct {
	Name    string // the variable
	Value   string // as written
	File    string // the dotenv file that set it, or "" (the environment)
	Problem string // "is not a duration", "is out of range"
	Want    string // what would do: "a duration, e.g. SANDPIPER_SANDBOX_TIMEOUT=30s"
}

func (e *SettingError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	b.WriteString(e.Name)
	b.WriteByte('=')
	b.WriteString(quoteValue(e.Value))
	if e.File != "" {
		b.WriteString(" (in " + e.File + ")")
	}
	b.WriteByte(' ')
	b.WriteString(e.Problem)
	if e.Want != "" {
		b.WriteString(": want ")
		b.WriteString(e.Want)
	}
	return b.String()
}

// quoteValue writes a value as it could be set: bare, unless it is empty
// or holds spaces, quotes, control characters or what a shell would read.
func quoteValue(v string) string {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("\"'`\\$;&|<>()*?#~", r) }) {
		return strconv.Quote(v)
	}
	return v
}

// CheckRange is one setting's bounds: when bad, it returns the start-up
// error naming the variable, its value and what it may be. A Load
// function returns all of its checks that fail, with [Join].
func CheckRange(name string, value any, want string, bad bool) error {
	if !bad {
		return nil
	}
	v := fmt.Sprint(value)
	if d, ok := value.(time.Duration); ok {
		v = formatDuration(d)
	}
	return &SettingError{Name: name, Value: v, Problem: "is out of range", Want: want}
}

// Problems are several settings to fix, reported together.
type Problems []error

func (p Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config: %d settings to fix:", len(p))
	for _, err := range p {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(strings.TrimPrefix(err.Error(), "config: "), "\n", "\n    "))
	}
	return b.String()
}

func (p Problems) Unwrap() []error { return p }

// Join returns the errors that are not nil: nil when there are none, the
// one error, or [Problems]. Errors joined already (Problems,
// errors.Join's) are flattened.
func Join(errs ...error) error {
	var p Problems
	for _, err := range errs {
		if more, ok := err.(interface{ Unwrap() []error }); ok {
			p = append(p, more.Unwrap()...)
		} else if err != nil {
			p = append(p, err)
		}
	}
	switch len(p) {
	case 0:
		return nil
	case 1:
		return p[0]
	}
	return p
}

// Locate names, in every [SettingError] in err that does not yet name
// one, the dotenv file its variable was read from, when lookup is
// [Lookup]'s. It returns err.
func Locate(lookup envconfig.Lookuper, err error) error {
	l, ok := lookup.(interface{ File(string) string })
	if !ok || err == nil {
		return err
	}
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *SettingError:
			if e.File == "" {
				e.File = l.File(e.Name)
			}
		case interface{ Unwrap() []error }:
			for _, err := range e.Unwrap() {
				walk(err)
			}
		case interface{ Unwrap() error }:
			if err := e.Unwrap(); err != nil {
				walk(err)
			}
		}
	}
	walk(err)
	return err
}

// Process sets the fields of target (a pointer to an env struct, whose
// fields are tagged `env:"NAME"`) whose variables are set and not empty,
// keeping the others (their defaults). Every value that cannot be read is
// a [SettingError]; all of them are returned together ([Join]).
func Process(_ context.Context, lookup envconfig.Lookuper, target any) error {
	v := reflect.ValueOf(target).Elem()
	var errs []error
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		text, ok := lookup.Lookup(name)
		if !ok || strings.TrimSpace(text) == "" {
			continue // unset or empty: the default
		}
		if err := decode(v.Field(i), text); err != nil {
			problem, want := describe(v.Field(i), name)
			errs = append(errs, &SettingError{Name: name, Value: text, Problem: problem, Want: want})
		}
	}
	return Locate(lookup, Join(errs...))
}

// decoder is a type that reads itself from a variable: [ByteSize], [OnOff].
type decoder interface{ EnvDecode(string) error }

// decode sets f from the variable's text.
func decode(f reflect.Value, text string) error {
	if d, ok := f.Addr().Interface().(decoder); ok {
		return d.EnvDecode(text)
	}
	t := strings.TrimSpace(text)
	switch f.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(t)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case bool:
		var o OnOff
		if err := o.EnvDecode(t); err != nil {
			return err
		}
		f.SetBool(bool(o))
	case []string:
		var list []string
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		f.Set(reflect.ValueOf(list))
	default:
		return decodeKind(f, text)
	}
	return nil
}

// decodeKind sets f, a string or a number, from the variable's text.
func decodeKind(f reflect.Value, text string) error {
	t := strings.TrimSpace(text)
	switch f.Kind() {
	case reflect.String:
		f.SetString(text) // as written: a token, a URL, instructions
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || f.OverflowInt(n) {
			return errors.New("not a whole number")
		}
		f.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return err
		}
		f.SetFloat(n)
	default:
		panic(fmt.Sprintf("config: a setting of type %s", f.Type()))
	}
	return nil
}

// describe says what is wrong with a value that f's type could not read,
// and what would do, with an example: f's default when it has one.
func describe(f reflect.Value, name string) (problem, want string) {
	eg := func(def, fallback string) string {
		if f.IsZero() {
			def = fallback
		}
		return "e.g. " + name + "=" + def
	}
	switch v := f.Interface().(type) {
	case time.Duration:
		return "is not a duration", "a number with a unit (ms, s, m, h), " + eg(formatDuration(v), "30s")
	case ByteSize:
		return "is not a size", "a number of bytes, or with a unit (KiB, MiB, GiB; KB, MB, GB), " + eg(formatSize(v.n), "64MiB")
	case OnOff:
		return "is not a switch", "on or off (or true/false, yes/no, 1/0), " + eg(v.String(), "on")
	case bool:
		return "is not a switch", "on or off (or true/false, yes/no, 1/0), " + eg(OnOff(v).String(), "on")
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int64:
		return "is not a whole number", eg(strconv.FormatInt(f.Int(), 10), "4")
	case reflect.Float64:
		return "is not a number", eg(strconv.FormatFloat(f.Float(), 'g', -1, 64), "0.5")
	}
	return "cannot be read", ""
}

// formatDuration writes d as a person would set it: 30s, 10m, 1h30m.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatSize writes n bytes in the largest binary unit that divides it:
// 512MiB, 1GiB, 4096.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// logLevelVar sets the level of every command's log.
const logLevelVar = "SANDPIPER_LOG_LEVEL"

// LogLevel reads SANDPIPER_LOG_LEVEL, which every command checks: the
// level set, or def when it is not (info for the bot, warn in the
// terminal).
func LogLevel(lookup envconfig.Lookuper, def slog.Level) (slog.Level, error) {
	v, ok := lookup.Lookup(logLevelVar)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	var level slog.Level
	switch s := strings.ToLower(strings.TrimSpace(v)); s {
	case "debug", "info", "warn", "error":
		level.UnmarshalText([]byte(s))
		return level, nil
	}
	return def, Locate(lookup, &SettingError{Name: logLevelVar, Value: v, Problem: "is not a log level",
		Want: "debug, info, warn or error, e.g. " + logLevelVar + "=warn"})
}
