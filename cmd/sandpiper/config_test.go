package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/botconfig"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/kubernetes"
)

// TestREADMEDefaults: the Default column of README's variable table says
// what the configuration takes when a variable is unset. The defaults are
// declared once, in the packages that own them; this holds README to them.
func TestREADMEDefaults(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // variable → the first `value` of its Default cell
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z0-9_]+)` \\| [^|`]*`([^`]*)`").FindAllSubmatch(readme, -1) {
		documented[string(m[1])] = string(m[2])
	}
	none := envconfig.MapLookuper(nil)
	ctx := t.Context()
	b, err := botconfig.Load(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	m, err := agentconfig.LoadModel(ctx, envconfig.MapLookuper(map[string]string{"SANDPIPER_MODEL_API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := config.LoadSandbox(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.LoadFiles(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	st, err := config.LoadState(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	src, err := agentconfig.LoadSources(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	envs := []any{b, m, s, f, st, src}
	// Every backend's own settings, as the registry makes them: this
	// binary links them all.
	if got := config.Registered(); !slices.Equal(got, sandbox.Backends) {
		t.Errorf("backends linked: %q, want %q", got, sandbox.Backends)
	}
	for _, name := range config.Registered() {
		settings, _ := config.DefaultSettings(name)
		envs = append(envs, reflect.ValueOf(settings).Elem().Interface())
	}
	checked := 0
	for _, env := range envs {
		v := reflect.ValueOf(env)
		for i := range v.NumField() {
			name := v.Type().Field(i).Tag.Get("env")
			if name == "" || v.Field(i).IsZero() {
				continue // no default: README says what happens instead
			}
			doc, ok := documented[name]
			if !ok {
				t.Errorf("README has no default for %s", name)
				continue
			}
			var same bool
			switch val := v.Field(i).Interface().(type) {
			case time.Duration:
				d, err := time.ParseDuration(doc)
				same = err == nil && d == val
			case config.ByteSize:
				var n config.ByteSize
				same = n.EnvDecode(doc) == nil && n.Bytes() == val.Bytes()
			default: // strings and numbers
				same = doc == fmt.Sprint(val)
			}
			if !same {
				t.Errorf("README says %s defaults to %q; the configuration takes %v", name, doc, v.Field(i))
			}
			checked++
		}
	}
	// Defaults a backend applies to a zero setting, which the
	// configuration leaves zero.
	for name, val := range map[string]time.Duration{"SANDPIPER_KUBERNETES_READY_TIMEOUT": kubernetes.DefaultReadyTimeout} {
		if d, err := time.ParseDuration(documented[name]); err != nil || d != val {
			t.Errorf("README says %s defaults to %q; the backend takes %v", name, documented[name], val)
		}
	}
	if checked < 30 {
		t.Errorf("checked %d defaults; README's table was not read?", checked)
	}
}

// TestNoRawParseErrors: a value that cannot be read, in any setting of
// any settings struct (the bot's, the model's, the sandbox's and every
// backend's, the files', the state's, the sources'), gives an error that
// names the variable, the value and an example of a good one, and none of
// Go's own (strconv's, time's).
func TestNoRawParseErrors(t *testing.T) {
	// The settings, by the backend that reads them ("" for every one).
	structs := map[string][]any{"": {botconfig.Bot{}, agentconfig.Model{}, config.Sandbox{}, config.Files{}, config.State{}, agentconfig.Sources{}}}
	for _, name := range config.Registered() {
		settings, _ := config.DefaultSettings(name)
		structs[name] = append(structs[name], reflect.ValueOf(settings).Elem().Interface())
	}
	bad := map[reflect.Type]string{
		reflect.TypeFor[time.Duration]():   "-1",
		reflect.TypeFor[int]():             "x",
		reflect.TypeFor[int64]():           "1e3",
		reflect.TypeFor[float64]():         "two",
		reflect.TypeFor[bool]():            "maybe",
		reflect.TypeFor[config.OnOff]():    "maybe",
		reflect.TypeFor[config.ByteSize](): "lots",
	}
	raw := regexp.MustCompile(`strconv\.|time: |invalid syntax|\.Parse`)
	settings, rawErrs := 0, 0
	for backend, envs := range structs {
		for _, env := range envs {
			typ := reflect.TypeOf(env)
			for i := range typ.NumField() {
				name := typ.Field(i).Tag.Get("env")
				value, ok := bad[typ.Field(i).Type]
				if name == "" || !ok {
					continue // text: every value can be read
				}
				settings++
				t.Run(name, func(t *testing.T) {
					vars := map[string]string{name: value, "SANDPIPER_MODEL_API_KEY": "k", "SANDPIPER_KUBERNETES_WARM_POOL": "p"}
					if backend != "" {
						vars["SANDPIPER_SANDBOX"] = backend
					}
					lookup := envconfig.MapLookuper(vars)
					_, berr := botconfig.Load(t.Context(), lookup)
					_, aerr := agentconfig.Load(t.Context(), lookup)
					err := errors.Join(berr, aerr)
					switch {
					case err == nil:
						t.Errorf("%s=%s: no error", name, value)
					case raw.MatchString(err.Error()) || !strings.Contains(err.Error(), name+"="+value+" ") || !strings.Contains(err.Error(), "e.g. "+name+"="):
						rawErrs++
						t.Errorf("%s=%s: the error does not name the variable, the value and an example, or is Go's own:\n%v", name, value, err)
					}
				})
			}
		}
	}
	t.Logf("%d of %d settings give a raw error for a value that cannot be read", rawErrs, settings)
	if settings < 30 {
		t.Errorf("checked %d settings; want every one", settings)
	}
}

// TestSettingErrorNamesDotenv: a bad value read from .env says so; one
// from the environment does not.
func TestSettingErrorNamesDotenv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("SANDPIPER_SANDBOX_TIMEOUT=-1\nSANDPIPER_SANDBOX_CPUS=4096\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SANDPIPER_WORKERS", "x")
	lookup, _, err := config.Lookup(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, serr := config.LoadSandbox(t.Context(), lookup)
	_, berr := botconfig.Load(t.Context(), lookup)
	got := config.Locate(lookup, config.Join(serr, berr)).Error()
	for _, want := range []string{
		"\n  SANDPIPER_SANDBOX_TIMEOUT=-1 (in .env) is not a duration: want a number with a unit (ms, s, m, h), e.g. SANDPIPER_SANDBOX_TIMEOUT=30s",
		"\n  SANDPIPER_SANDBOX_CPUS=4096 (in .env) is out of range: want 0.01 to 1024",
		"\n  SANDPIPER_WORKERS=x is not a whole number: want e.g. SANDPIPER_WORKERS=8",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("error lacks %q:\n%s", want, got)
		}
	}
}
