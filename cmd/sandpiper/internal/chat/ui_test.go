package chat

import (
	"context"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

func TestStreamText(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deltas []string
		want   []string // what each delta shows, then what the flush shows
	}{
		{"plain", []string{"The answer ", "is 42."}, []string{"The answer ", "is 42.", ""}},
		{"escape in a delta", []string{"a\x1b[2Jb", "\x07"}, []string{"a␛[2Jb", "␇", ""}},
		{"escape across deltas", []string{"a\x1b", "[2J"}, []string{"a␛", "[2J", ""}},
		{"rune across deltas", []string{"84\xc2", "\xb3 = ", "\xe2\x80", "\xae!"}, []string{"84", "³ = ", "", "\ufffd!", ""}},
		{"CR LF across deltas", []string{"one\r", "\ntwo\r"}, []string{"one", "\ntwo", "\n"}},
		{"lone CR", []string{"one\r", "two"}, []string{"one", "\ntwo", ""}},
		{"broken rune at the end", []string{"x\xe2\x80"}, []string{"x", "\ufffd\ufffd"}},
		{"invalid byte is not held", []string{"x\xff"}, []string{"x\ufffd", ""}},
		{"C1 as a rune", []string{"\u009b31m"}, []string{"\ufffd31m", ""}},
		{"emoji joined across deltas", []string{"\U0001F468\u200d", "\U0001F469\u200d\xf0\x9f", "\x91\xa7\u200b!"}, []string{"\U0001F468", "\u200d\U0001F469", "\u200d\U0001F467!", ""}},
		{"tags", []string{"ok\U000E0069\U000E0067", "\U000E006E."}, []string{"ok", ".", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var st streamText
			var got []string
			for _, d := range tt.deltas {
				got = append(got, st.next(d))
			}
			got = append(got, st.flush())
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("shown %q, want %q", got, tt.want)
			}
		})
	}
}

// TestToolCardVerdicts: a card's status line says how its run ended in
// the words of the run's verdict.
func TestToolCardVerdicts(t *testing.T) {
	for _, run := range sandboxtest.Verdicts() {
		var out strings.Builder
		u := New(&out, &out, Options{})
		call := agent.ToolCallEvent{Call: agent.ToolCall{Name: agent.ExecuteCodeName}, Code: "x"}
		u.ToolCallFinished(context.Background(), agent.ToolResultEvent{ToolCallEvent: call, Sandbox: run.Result, Err: run.Err})
		status, _, _ := strings.Cut(out.String(), "\n")
		mark := "✓ "
		if run.Verdict().Failed() {
			mark = "✗ "
		}
		if want := "" + mark + run.Verdict().String() + " · "; !strings.HasPrefix(status, want) {
			t.Errorf("%s: status line %q, want it to start %q", run.Name, status, want)
		}
	}
}
