package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

func TestCardGolden(t *testing.T) {
	longCode := strings.Repeat("x = 1  # a long program line\n", 200)
	for _, tc := range []struct {
		name string
		card Card
	}{
		{"running", Card{N: 1, Code: "print(6*7)", Running: true}},
		// A running card has a Stop button carrying the answer's key and
		// asker; a stopped one says by whom, and has no button.
		{"running_stop", Card{N: 2, Code: "import time\ntime.sleep(60)", Running: true, Stop: "C0MATH 1700000000.000100 1700000000.000300 U0ALICE"}},
		{"stopped", Card{N: 2, Code: "import time\ntime.sleep(60)", Stop: "C0MATH 1700000000.000100 1700000000.000300 U0ALICE",
			StoppedBy: "U0ADMIN", Err: errors.New("context canceled"), Duration: 1500 * time.Millisecond}},
		{"ok", Card{N: 1, Code: "print(6*7)", Result: &sandbox.Result{Stdout: []byte("42\n"), StdoutSize: 3, Duration: 1234 * time.Millisecond}}},
		{"no_output", Card{N: 2, Code: "x = 1", Result: &sandbox.Result{Duration: 80 * time.Millisecond}}},
		{"failed", Card{N: 1, Code: "print(1/0)", Result: &sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nZeroDivisionError: division by zero\n"), StderrSize: 95, Duration: 40 * time.Millisecond}}},
		{"timeout", Card{N: 3, Code: "while True: pass", Result: &sandbox.Result{ExitCode: 137, Limit: sandbox.LimitTimeout, Duration: 30 * time.Second}}},
		{"oom", Card{N: 1, Code: "x = ' ' * 10**10", Result: &sandbox.Result{ExitCode: 137, Limit: sandbox.LimitMemory, Stderr: []byte("Killed"), Duration: time.Second}}},
		{"cpu", Card{N: 2, Code: "while True: pass", Result: &sandbox.Result{ExitCode: 152, Limit: sandbox.LimitCPU, Duration: 61 * time.Second}}},
		{"gone", Card{N: 1, Code: "import time\ntime.sleep(60)", Result: &sandbox.Result{ExitCode: 137, Gone: "the Kubernetes sandbox sb-1 was deleted", Duration: 4 * time.Second}}},
		{"processes", Card{N: 1, Code: "import os\nos.fork()", Result: &sandbox.Result{Stdout: []byte("done\n"), StdoutSize: 5, Limit: sandbox.LimitProcesses, Duration: time.Second}}},
		{"sandbox_error", Card{N: 1, Code: "print(1)", Err: errors.New("the sandbox failed before running the code (clone: operation not permitted)"), Duration: 5 * time.Millisecond}},
		{"escaped", Card{N: 1, Code: "print('<!channel> & <@U1>')", Result: &sandbox.Result{Stdout: []byte("<!channel> & <@U1> <https://x.example|y> ```\n")}}},
		{"long", Card{N: 4, Code: longCode, Result: &sandbox.Result{Stdout: []byte(strings.Repeat("0123456789", 600)), StdoutSize: 5 << 20, StdoutTruncated: true, Duration: 2 * time.Second}}},
		{"files", Card{N: 2, Code: "plt.savefig('chart.png')", Result: &sandbox.Result{Stdout: []byte("saved\n"), StdoutSize: 6, Duration: 900 * time.Millisecond}, Files: []ProducedFile{
			{Name: "chart.png", Size: 48213, Image: true, Posted: true, ID: "F1"},
			{Name: "out/summary.csv", Size: 1200, Posted: true, ID: "F2"},
			{Name: "same.csv", Size: 10, Note: "unchanged, posted before"},
			{Name: "huge.parquet", Size: 40 << 20, Note: "not posted or kept: larger than the 25.0 MiB limit per file"},
			{Name: "link", Note: "not returned by the sandbox: not a regular file"},
		}}},
		{"many_files", Card{N: 1, Code: "for i in range(12): open(f'f{i}.txt','w').write('x')", Result: &sandbox.Result{Duration: 300 * time.Millisecond}, Files: manyFiles(12)}},
		// Escaping makes text longer ("<td>" is sent as 10 characters);
		// the cuts must count what Slack receives.
		{"escape_heavy", Card{N: 1, Code: strings.Repeat("x = '<&>' if a < b and c > d else '&'\n", 120), Result: &sandbox.Result{Stdout: []byte(strings.Repeat("<td>", 500)), StdoutSize: 2000, Duration: time.Second}}},
		{"escape_heavy_error", Card{N: 1, Code: "f()", Result: &sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n" + strings.Repeat("  File \"<string>\", line 1, in <lambda>\n", 150) + "RecursionError: maximum recursion depth exceeded\n"), Duration: time.Second}}},
		{"backticks", Card{N: 1, Code: "print('`' * 3000)", Result: &sandbox.Result{Stdout: []byte(strings.Repeat("`", 3000)), StdoutSize: 3000, Duration: time.Second}}},
		// Text from the sandbox is neutralised: escape sequences, BEL,
		// C1 controls and bidi overrides in the code, the output, the
		// error, file names and the sandbox's notes.
		{"hostile", Card{N: 1, Code: hostileCode, Result: &sandbox.Result{ExitCode: 1, Stdout: []byte(hostileStdout), StdoutSize: int64(len(hostileStdout)),
			Stderr: []byte(hostileStderr), StderrSize: int64(len(hostileStderr)), Duration: time.Second}, Files: hostileFiles}},
		{"hostile_debug", Card{N: 2, Debug: true, Code: "print('ok')", Result: &sandbox.Result{Stdout: []byte("ok\r\n"), StdoutSize: 4,
			Stderr: []byte("\x1b[1A\x1b[2Kwarning\x07\x9b\u2067\n"), StderrSize: 16, Duration: time.Second}}},
		{"hostile_long", Card{N: 3, Code: "print(...)", Result: &sandbox.Result{Stdout: []byte(strings.Repeat("\x1b[31m<td>\u202e", 400)),
			StdoutSize: 1 << 20, StdoutTruncated: true, Duration: time.Second}}},
		// What became of the thread's variables: restored (names a program
		// chose, escaped), not restored with why, a state set aside.
		{"state", Card{N: 2, Code: "print(df.shape)", Result: &sandbox.Result{Stdout: []byte("(5, 2)\n"), StdoutSize: 7, Duration: time.Second, State: &sandbox.StateResult{
			Restored: []string{"df", "x", "`<!here>`", "Point", "p", "f"}, RestoredCount: 8,
			NotRestored: []string{"b (posix.system is not called while restoring: a restore builds data)"}, NotRestoredCount: 1}}}},
		{"state_set_aside", Card{N: 3, Code: "print(1)", Result: &sandbox.Result{Stdout: []byte("1\n"), StdoutSize: 2, Duration: 16 * time.Second, State: &sandbox.StateResult{
			RestoreFailed: "restoring them took longer than 15 s"}}}},
		{"debug_ok", Card{N: 1, Debug: true, Code: "import warnings\nwarnings.warn('careful')\nprint(2)", Result: &sandbox.Result{Stdout: []byte("2\n"), StdoutSize: 2, Stderr: []byte("<string>:2: UserWarning: careful\n"), StderrSize: 33, Duration: 300 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, files := tc.card.Blocks()
			golden := map[string]any{
				"text":     tc.card.Fallback(),
				"blocks":   blocks,
				"files":    fileNames(files),
				"metadata": tc.card.Metadata().EventType,
			}
			if posted, ok := tc.card.Metadata().EventPayload["files"]; ok {
				golden["metadata_files"] = posted
			}
			checkLimits(t, blocks)
			slacktest.GoldenJSON(t, filepath.Join("testdata", "cards", tc.name+".json"), golden)
		})
	}
}

// Text a hostile program (or a model led by one) writes: an OSC 52
// clipboard write, a screen clear, BEL, 8-bit CSI (as a raw byte and as
// U+009B), carriage returns and bidi overrides and isolates.
const (
	hostileCode   = "print('\x1b]52;c;cm0gLXJmIC8=\x07')  # \u202eevil\n\x1b[2J"
	hostileStdout = "\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J\x1b[Hcleared\r\nraw \x9b31m c1 \u009b31m\n\u202eexe.gnp\u202c \u2066iso\u2069\rover\n"
	hostileStderr = "Traceback (most recent call last):\nValueError: \x1b]0;pwned\x07 \x1b[8mhidden\n"
)

var hostileFiles = []ProducedFile{
	{Name: "evil\u202egnp.exe", Size: 10, Posted: true, ID: "F1"},
	{Name: "\x1b[31mred\x1b[0m.csv", Size: 3, Note: "unchanged, posted before"},
	{Name: "bell\x07\x9b.txt", Size: 5 << 20, Note: "not posted: Slack refused the upload (<!channel> \x1b[2J\u202e)"},
	{Name: "line\nbreak\ttab.txt", Note: "not returned by the sandbox: not a regular\x1b[5m file"},
}

// TestCardNeutralisesSandboxText renders cards full of control text, as
// posted, as plain after Slack refused them and as remembered, and checks
// that nothing Slack shows holds a control character (other than line
// feed and tab), a C1 control, a bidi control or invalid UTF-8: not the
// blocks, the fallback text, nor the attached files' names, titles and
// text.
func TestCardNeutralisesSandboxText(t *testing.T) {
	for _, c := range []Card{
		{N: 1, Code: hostileCode, Running: true},
		{N: 1, Code: hostileCode, Result: &sandbox.Result{ExitCode: 1, Stdout: []byte(hostileStdout), Stderr: []byte(hostileStderr)}, Files: hostileFiles},
		{N: 2, Code: strings.Repeat(hostileCode+"\n", 200), Debug: true, Result: &sandbox.Result{
			Stdout: []byte(strings.Repeat(hostileStdout, 100)), StdoutSize: 9 << 20, StdoutTruncated: true,
			Stderr: []byte(strings.Repeat(hostileStderr, 100)), StderrSize: 9 << 20, StderrTruncated: true}, Files: append(manyFiles(10), hostileFiles...)},
		{N: 3, Code: hostileCode, Err: errors.New("setup: \x1b]0;bad\x07 \u202efile")},
		{N: 4, Code: hostileCode, Result: &sandbox.Result{ExitCode: 1, Stderr: []byte(strings.Repeat(hostileStderr, 200))}},
	} {
		checkNeutral(t, c.N, &c)
	}
}

// aCard is a tool card or a query card, as the tests read it.
type aCard interface {
	Blocks() ([]slack.Block, []Attachment)
	Plain(why string) ([]slack.Block, []Attachment)
	Fallback() string
}

// checkNeutral renders card n as posted and as plain after Slack refused
// it, and fails the test when what Slack shows (the blocks, the
// notification, the attached files' names, titles and text) holds a
// control character (other than line feed and tab), a C1 control, a bidi
// control or invalid UTF-8, or the blocks break Slack's limits. It
// returns both renderings.
func checkNeutral(t *testing.T, n int, c aCard) (blocks, plain []slack.Block) {
	t.Helper()
	blocks, files := c.Blocks()
	plain, plainFiles := c.Plain("invalid_blocks \x1b[2J\u202e")
	raw, _ := json.Marshal([]any{blocks, plain})
	var v any
	json.Unmarshal(raw, &v)
	texts := append(slacktest.JSONStrings(v), c.Fallback())
	for _, f := range append(files, plainFiles...) {
		texts = append(texts, f.Name, f.Title, f.Content)
	}
	for _, s := range texts {
		if bad, _ := slacktest.UnsafeRune(s); bad >= 0 {
			t.Errorf("card %d shows %U in %.200q", n, bad, s)
		}
	}
	checkLimits(t, blocks)
	return blocks, plain
}

func manyFiles(n int) []ProducedFile {
	var out []ProducedFile
	for i := range n {
		out = append(out, ProducedFile{Name: fmt.Sprintf("f%d.txt", i), Size: 1, Posted: i < 10, ID: fmt.Sprintf("F%d", i), Note: "not posted: an answer posts at most 10 files"})
	}
	return out
}

func fileNames(fs []Attachment) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// checkLimits fails the test when blocks break Slack's limits.
func checkLimits(t *testing.T, blocks []slack.Block) {
	t.Helper()
	if len(blocks) > MaxBlocks {
		t.Errorf("%d blocks", len(blocks))
	}
	total := 0
	for i, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			n := utf8.RuneCountInString(b.Text.Text)
			total += n
			if n > SectionChars {
				t.Errorf("block %d: section of %d characters", i, n)
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok {
					total += utf8.RuneCountInString(tb.Text)
				}
			}
		}
	}
	if total > messageTextBudget {
		t.Errorf("%d characters of text, over the %d budget", total, messageTextBudget)
	}
}

func TestCardEscapesEverything(t *testing.T) {
	c := Card{N: 1, Code: "print('<!here>')", Result: &sandbox.Result{ExitCode: 1, Stdout: []byte("<@U123>"), Stderr: []byte("<!channel>")}}
	blocks, _ := c.Blocks()
	raw, _ := json.Marshal(blocks)
	var v any
	json.Unmarshal(raw, &v)
	s := strings.Join(slacktest.JSONStrings(v), "\n")
	for _, bad := range []string{"<!here>", "<@U123>", "<!channel>"} {
		if strings.Contains(s, bad) {
			t.Errorf("card contains live %s:\n%s", bad, s)
		}
	}
}

// TestCardVerdicts: a card says how its run ended in the words of the
// run's verdict, in its first line, its notification and what a
// follow-up remembers of a failed run; a card the asker stopped says
// stopped, whatever the sandbox returned.
func TestCardVerdicts(t *testing.T) {
	for _, run := range sandboxtest.Verdicts() {
		t.Run(run.Name, func(t *testing.T) {
			v := run.Verdict()
			c := Card{N: 1, Code: "x", Result: run.Result, Err: run.Err}
			blocks, _ := c.Blocks()
			first := blocks[0].(*slack.ContextBlock).ContextElements.Elements[0].(*slack.TextBlockObject).Text
			for what, s := range map[string]string{"first line": first, "notification": c.Fallback()} {
				if !strings.Contains(strings.ToLower(s), strings.ToLower(Escape(v.String()))) {
					t.Errorf("%s %q does not say %q", what, s, v)
				}
			}
			if out := RunOutput(run.Result, run.Err); run.Result != nil && v.Kind != sandbox.VerdictExit && v.Failed() && !strings.Contains(out, "["+v.Phrase+"]") {
				t.Errorf("remembered output %q does not say %q", out, v.Phrase)
			}
			c.StoppedBy = "U1"
			if _, words := c.heading(); words != "Stopped" {
				t.Errorf("a stopped card says %q", words)
			}
		})
	}
}
