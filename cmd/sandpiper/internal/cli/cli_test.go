package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestSaveOutputNames(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, want string }{
		{"chart.png", "chart.png"},
		{"out/a b.csv", "out/a b.csv"},
		{"evil\u202egnp.exe", "evil\ufffdgnp.exe"},
		{"out/\x1b[2J\x07.txt", "out/␛[2J␇.txt"},
		{"line\nbreak.txt", "line␊break.txt"},
	} {
		p, err := SaveOutput(dir, sandbox.File{Name: tt.name, Data: []byte("x")})
		if err != nil || p != filepath.Join(dir, tt.want) {
			t.Errorf("SaveOutput(%q) = %q, %v; want %q", tt.name, p, err, filepath.Join(dir, tt.want))
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%q not saved: %v", tt.name, err)
		}
	}
	for _, bad := range []string{"../x", "/etc/x", ""} {
		if _, err := SaveOutput(dir, sandbox.File{Name: bad}); err == nil {
			t.Errorf("SaveOutput(%q) saved", bad)
		}
	}
}
