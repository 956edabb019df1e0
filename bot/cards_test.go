package bot

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestCardGolden(t *testing.T) {
	longCode := strings.Repeat("x = 1  # a long program line\n", 200)
	for _, tc := range []struct {
		name string
		card card
	}{
		{"running", card{N: 1, Code: "print(6*7)", Running: true}},
		{"ok", card{N: 1, Code: "print(6*7)", Result: &sandbox.Result{Stdout: []byte("42\n"), StdoutSize: 3, Duration: 1234 * time.Millisecond}}},
		{"no_output", card{N: 2, Code: "x = 1", Result: &sandbox.Result{Duration: 80 * time.Millisecond}}},
		{"failed", card{N: 1, Code: "print(1/0)", Result: &sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nZeroDivisionError: division by zero\n"), StderrSize: 95, Duration: 40 * time.Millisecond}}},
		{"timeout", card{N: 3, Code: "while True: pass", Result: &sandbox.Result{ExitCode: 137, TimedOut: true, Limit: sandbox.LimitTimeout, Duration: 30 * time.Second}}},
		{"oom", card{N: 1, Code: "x = ' ' * 10**10", Result: &sandbox.Result{ExitCode: 137, OutOfMemory: true, Limit: sandbox.LimitMemory, Stderr: []byte("Killed"), Duration: time.Second}}},
		{"sandbox_error", card{N: 1, Code: "print(1)", Err: errors.New("the sandbox failed before running the code (clone: operation not permitted)"), Duration: 5 * time.Millisecond}},
		{"escaped", card{N: 1, Code: "print('<!channel> & <@U1>')", Result: &sandbox.Result{Stdout: []byte("<!channel> & <@U1> <https://x.example|y> ```\n")}}},
		{"long", card{N: 4, Code: longCode, Result: &sandbox.Result{Stdout: []byte(strings.Repeat("0123456789", 600)), StdoutSize: 5 << 20, StdoutTruncated: true, Duration: 2 * time.Second}}},
		{"files", card{N: 2, Code: "plt.savefig('chart.png')", Result: &sandbox.Result{Stdout: []byte("saved\n"), StdoutSize: 6, Duration: 900 * time.Millisecond}, Files: []producedFile{
			{Name: "chart.png", Size: 48213, Image: true, Posted: true, ID: "F1"},
			{Name: "out/summary.csv", Size: 1200, Posted: true, ID: "F2"},
			{Name: "same.csv", Size: 10, Note: "unchanged, posted before"},
			{Name: "huge.parquet", Size: 40 << 20, Note: "not posted or kept: larger than the 25.0 MiB limit per file"},
			{Name: "link", Note: "not returned by the sandbox: not a regular file"},
		}}},
		{"many_files", card{N: 1, Code: "for i in range(12): open(f'f{i}.txt','w').write('x')", Result: &sandbox.Result{Duration: 300 * time.Millisecond}, Files: manyFiles(12)}},
		// Escaping makes text longer ("<td>" is sent as 10 characters);
		// the cuts must count what Slack receives.
		{"escape_heavy", card{N: 1, Code: strings.Repeat("x = '<&>' if a < b and c > d else '&'\n", 120), Result: &sandbox.Result{Stdout: []byte(strings.Repeat("<td>", 500)), StdoutSize: 2000, Duration: time.Second}}},
		{"escape_heavy_error", card{N: 1, Code: "f()", Result: &sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n" + strings.Repeat("  File \"<string>\", line 1, in <lambda>\n", 150) + "RecursionError: maximum recursion depth exceeded\n"), Duration: time.Second}}},
		{"backticks", card{N: 1, Code: "print('`' * 3000)", Result: &sandbox.Result{Stdout: []byte(strings.Repeat("`", 3000)), StdoutSize: 3000, Duration: time.Second}}},
		{"debug_ok", card{N: 1, Debug: true, Code: "import warnings\nwarnings.warn('careful')\nprint(2)", Result: &sandbox.Result{Stdout: []byte("2\n"), StdoutSize: 2, Stderr: []byte("<string>:2: UserWarning: careful\n"), StderrSize: 33, Duration: 300 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, files := tc.card.render()
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // keep &lt; readable in the golden files
			enc.SetIndent("", "  ")
			golden := map[string]any{
				"text":     tc.card.fallback(),
				"blocks":   blocks,
				"files":    fileNames(files),
				"metadata": tc.card.metadata().EventType,
			}
			if posted, ok := tc.card.metadata().EventPayload["files"]; ok {
				golden["metadata_files"] = posted
			}
			if err := enc.Encode(golden); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSuffix(buf.String(), "\n")
			checkLimits(t, blocks)
			path := filepath.Join("testdata", "cards", tc.name+".json")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./bot -run TestCardGolden -update)", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("card %s differs from %s (run with -update to accept):\n%s", tc.name, path, got)
			}
		})
	}
}

func manyFiles(n int) []producedFile {
	var out []producedFile
	for i := range n {
		out = append(out, producedFile{Name: fmt.Sprintf("f%d.txt", i), Size: 1, Posted: i < 10, ID: fmt.Sprintf("F%d", i), Note: "not posted: an answer posts at most 10 files"})
	}
	return out
}

func fileNames(fs []attachment) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// checkLimits fails the test when blocks break Slack's limits.
func checkLimits(t *testing.T, blocks []slack.Block) {
	t.Helper()
	if len(blocks) > slackMaxBlocks {
		t.Errorf("%d blocks", len(blocks))
	}
	total := 0
	for i, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			n := runeLen(b.Text.Text)
			total += n
			if n > slackSectionChars {
				t.Errorf("block %d: section of %d characters", i, n)
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok {
					total += runeLen(tb.Text)
				}
			}
		}
	}
	if total > messageTextBudget {
		t.Errorf("%d characters of text, over the %d budget", total, messageTextBudget)
	}
}

func TestCardEscapesEverything(t *testing.T) {
	c := card{N: 1, Code: "print('<!here>')", Result: &sandbox.Result{ExitCode: 1, Stdout: []byte("<@U123>"), Stderr: []byte("<!channel>")}}
	blocks, _ := c.render()
	raw, _ := json.Marshal(blocks)
	var v any
	json.Unmarshal(raw, &v)
	s := strings.Join(collect(v), "\n")
	for _, bad := range []string{"<!here>", "<@U123>", "<!channel>"} {
		if strings.Contains(s, bad) {
			t.Errorf("card contains live %s:\n%s", bad, s)
		}
	}
}

func collect(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, collect(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, collect(e)...)
		}
		return out
	}
	return nil
}
