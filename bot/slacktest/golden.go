package slacktest

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares got with the golden file at path (its text without the
// last line feed), or rewrites the file when the test runs with -update.
func Golden(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if strings.TrimSuffix(string(want), "\n") != got {
		t.Errorf("%s differs from %s (run with -update to accept):\n%s", t.Name(), path, got)
	}
}

// GoldenJSON is [Golden] for v as indented JSON, with <, > and & kept
// as they are so that Slack's escapes stay readable.
func GoldenJSON(t testing.TB, path string, v any) {
	t.Helper()
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	Golden(t, path, strings.TrimSuffix(buf.String(), "\n"))
}
