package agentconfig

import (
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
)

func TestLoadState(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		on   bool
		size int64
		err  string
	}{
		{env: nil, on: true, size: 192 << 20},
		{env: map[string]string{"SANDPIPER_STATE": "off", "SANDPIPER_STATE_MAX_SIZE": "16MiB"}, on: false, size: 16 << 20},
		{env: map[string]string{"SANDPIPER_STATE": "maybe"}, err: "SANDPIPER_STATE"},
		{env: map[string]string{"SANDPIPER_STATE_MAX_SIZE": "1KiB"}, err: "SANDPIPER_STATE_MAX_SIZE=1KiB is out of range: want at least 64KiB"},
		{env: map[string]string{"SANDPIPER_STATE_MAX_SIZE": "1GiB"}, err: "SANDPIPER_STATE_MAX_SIZE=1GiB is out of range: want at most half of SANDPIPER_SANDBOX_MEMORY less 64.0 MiB (192.0 MiB)"},
		{env: map[string]string{"SANDPIPER_SANDBOX_MEMORY": "256MiB"}, err: "want at most half of SANDPIPER_SANDBOX_MEMORY less 64.0 MiB (64.0 MiB)"},
		{env: map[string]string{"SANDPIPER_SANDBOX_MEMORY": "256MiB", "SANDPIPER_STATE_MAX_SIZE": "64MiB"}, on: true, size: 64 << 20},
	} {
		env := map[string]string{"SANDPIPER_MODEL_API_KEY": "k"}
		for k, v := range tc.env {
			env[k] = v
		}
		c, err := Load(t.Context(), envconfig.MapLookuper(env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err = %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if bool(c.State.On) != tc.on || c.Sandbox.Limits().StateSize != tc.size {
			t.Errorf("%v: on %v, size %d; want %v, %d", tc.env, c.State.On, c.Sandbox.Limits().StateSize, tc.on, tc.size)
		}
	}
}
