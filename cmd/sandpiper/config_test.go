package main

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
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
