package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

// TestCards renders cards of every kind, without colour, into one golden
// file.
func TestCards(t *testing.T) {
	t.Parallel()
	many := make([]string, 50)
	for i := range many {
		many[i] = fmt.Sprint("line ", i+1)
	}
	sqlCall := agent.ToolCallEvent{Call: agent.ToolCall{Name: "runSQL", Input: []byte(`{"source":"sales","sql":"SELECT region, sum(amount) AS total\nFROM orders GROUP BY region"}`)}}
	call := pythonCall("import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df.describe())")
	var files []savedFile
	for i := range 12 {
		files = append(files, savedFile{name: fmt.Sprintf("f%d.png", i), size: int64(i * 700), path: fmt.Sprintf("out/f%d.png", i)})
	}
	files[1].err, files[1].path = errors.New("disk full"), ""
	for _, test := range []struct {
		name  string
		width int
		e     agent.ToolResultEvent
		files []savedFile
	}{
		{"ok", 80, agent.ToolResultEvent{ToolCallEvent: call, Duration: 1234 * time.Millisecond, Sandbox: &sandbox.Result{Stdout: []byte("count 3\nmean 2.0\n")}}, nil},
		{"no output", 80, agent.ToolResultEvent{ToolCallEvent: call, Duration: 41 * time.Millisecond, Sandbox: &sandbox.Result{}}, nil},
		{"long output", 60, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{
			Stdout: []byte(strings.Join(many, "\n")), StdoutTruncated: true, StdoutSize: 3 << 20,
			Stderr: []byte("Traceback (most recent call last):\n  File \"<string>\", line 1\nValueError: " + strings.Repeat("x", 130)), ExitCode: 1,
		}}, nil},
		{"files", 60, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{FilesOmitted: []string{"big.bin (larger than the limit)"}}}, files},
		{"state", 80, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{Stdout: []byte("ok\n"), State: &sandbox.StateResult{
			Restored: []string{"df", "x", "f"}, RestoredCount: 5, NotRestored: []string{"b (posix.system is not called while restoring)"}, NotRestoredCount: 1}}}, nil},
		{"state set aside", 80, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{Stdout: []byte("ok\n"), State: &sandbox.StateResult{
			RestoreFailed: "restoring them took longer than 15 s"}}}, nil},
		{"timeout", 80, agent.ToolResultEvent{ToolCallEvent: call, Duration: 30 * time.Second, Sandbox: &sandbox.Result{ExitCode: 137, Limit: sandbox.LimitTimeout}}, nil},
		{"memory", 80, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{ExitCode: 137, Limit: sandbox.LimitMemory}}, nil},
		{"cpu", 80, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{ExitCode: 152, Limit: sandbox.LimitCPU}}, nil},
		{"gone", 80, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{ExitCode: 137, Gone: "the Kubernetes sandbox sb-1 was deleted"}}, nil},
		{"processes", 80, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{Limit: sandbox.LimitProcesses}}, nil},
		{"error", 80, agent.ToolResultEvent{ToolCallEvent: call, Err: errors.New("sandbox: start interpreter: no such file")}, nil},
		{"stopped", 80, agent.ToolResultEvent{ToolCallEvent: call, Err: context.Canceled, Duration: 300 * time.Millisecond}, nil},
		{"out of time", 80, agent.ToolResultEvent{ToolCallEvent: call, Err: context.DeadlineExceeded, Duration: 300 * time.Millisecond}, nil},
		{"other tool", 80, agent.ToolResultEvent{ToolCallEvent: agent.ToolCallEvent{Call: agent.ToolCall{Name: "lookup", Input: []byte(`{"q":"x"}`)}}, Result: agent.ToolResult{Content: "found"}}, nil},
		{"query", 60, agent.ToolResultEvent{ToolCallEvent: sqlCall, Duration: 12 * time.Millisecond, Query: &agent.Query{
			Source: "sales", Engine: "PostgreSQL", Outcome: "ok", Rows: 1234, File: "by_region.csv", FileSize: 20480,
			Columns: []agent.QueryColumn{{Name: "region", Type: "text"}, {Name: "total", Type: "numeric"}},
			Preview: [][]string{{"north", "1234.50"}, {"a name longer than the cell allows", agent.QueryNull}},
		}}, nil},
		{"query failed", 60, agent.ToolResultEvent{ToolCallEvent: sqlCall, Query: &agent.Query{Source: "sales", Engine: "PostgreSQL", Outcome: "failed",
			Err: `the database refused the statement: ERROR: relation "ordres" does not exist (SQLSTATE 42P01)`}}, nil},
		{"narrow", 24, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{Stdout: []byte("a line longer than the card is wide\nanunbreakablewordlongerthanthecard\n  indented  spaces\n")}}, nil},
		{"wide", 200, agent.ToolResultEvent{ToolCallEvent: call, Sandbox: &sandbox.Result{Stdout: []byte("capped at 100 columns\n")}}, nil},
	} {
		th := newTheme(termenv.Ascii, true)
		md := newMarkdown(codeWrap, termenv.Ascii, codeStyle(true))
		top := cardTop(th, md, test.width, test.e.ToolCallEvent)
		bottom := cardBottom(th, test.width, test.e, test.files)
		card := stripSGR(top + "\n" + bottom)
		for i, l := range strings.Split(card, "\n") {
			if w := lipgloss.Width(l); w != min(max(test.width, 20), maxCardWidth) {
				t.Errorf("%s: line %d is %d columns wide: %q", test.name, i, w, l)
			}
		}
		fmt.Fprintf(&goldenBuf, "%s (%d columns):\n%s\n\n", test.name, test.width, card)
	}
	teatest.RequireEqualOutput(t, []byte(goldenBuf.String()))
}

var goldenBuf strings.Builder

// TestCardHighlight checks that the code in a card is highlighted when
// the terminal has colours, and that the frame still fits.
func TestCardHighlight(t *testing.T) {
	t.Parallel()
	th := newTheme(termenv.ANSI256, true)
	md := newMarkdown(codeWrap, termenv.ANSI256, codeStyle(true))
	top := cardTop(th, md, 60, pythonCall("import math\nprint(math.pi)  # π"))
	if !strings.Contains(top, "\x1b[38;5;") {
		t.Errorf("no 256-colour highlighting in %q", top)
	}
	for i, l := range strings.Split(top, "\n") {
		if w := lipgloss.Width(l); w != 60 {
			t.Errorf("line %d is %d columns wide: %q", i, w, l)
		}
	}
}

// TestCardVerdicts: a card's status row says how its run ended in the
// words of the run's verdict.
func TestCardVerdicts(t *testing.T) {
	t.Parallel()
	th := newTheme(termenv.Ascii, true)
	for _, run := range sandboxtest.Verdicts() {
		e := agent.ToolResultEvent{ToolCallEvent: pythonCall("x"), Sandbox: run.Result, Err: run.Err}
		card := stripSGR(cardBottom(th, 100, e, nil))
		status, _, _ := strings.Cut(card, "\n")
		mark := "✓ "
		if run.Verdict().Failed() {
			mark = "✗ "
		}
		if want := mark + run.Verdict().String() + " · "; !strings.Contains(status, want) {
			t.Errorf("%s: status row %q does not say %q", run.Name, status, want)
		}
	}
}
