package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// grantedTool is offered only in runs that may query "sales"; its call
// returns the run it sees and a Query.
type grantedTool struct{}

func (grantedTool) Spec() ToolSpec { return ToolSpec{Name: "runSQL"} }
func (grantedTool) ForRun(_ context.Context, run RunInfo) (string, bool) {
	if !run.Granted("sales") {
		return "", false
	}
	return "Data sources: sales.", true
}
func (grantedTool) Call(ctx context.Context, _ Workspace, _ json.RawMessage) (*ToolOutput, error) {
	ri := RunInfoFrom(ctx)
	return &ToolOutput{Content: ri.User + "@" + ri.Channel + ":" + strings.Join(ri.Sources, ","),
		Query: &Query{Source: "sales", SQL: "SELECT 1", Rows: 1, Outcome: "ok"}}, nil
}

// TestRunToolOfferedPerRun: a RunTool is offered, and its instructions
// added, only in the runs it accepts; its call sees the run, and its
// Query reaches the observer.
func TestRunToolOfferedPerRun(t *testing.T) {
	call := turn{calls: []ToolCall{{ID: "1", Name: "runSQL", Input: json.RawMessage(`{}`)}}}
	t.Run("granted", func(t *testing.T) {
		model := &scriptedModel{turns: []turn{call, {deltas: []string{"ok"}}}}
		a := &Agent{Model: model, Tools: []Tool{grantedTool{}}, Instructions: "Be brief."}
		rec := &recorder{}
		out, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{Observer: rec, Sources: []string{"sales"}, User: "U1", Channel: "C1"})
		if err != nil {
			t.Fatal(err)
		}
		req := model.requests[0]
		if req.Instructions != "Be brief.\n\nData sources: sales." || len(req.Tools) != 1 {
			t.Errorf("instructions %q, tools %v", req.Instructions, req.Tools)
		}
		if got := out.Messages[1].ToolResults[0].Content; got != "U1@C1:sales" {
			t.Errorf("the tool saw %q", got)
		}
		if q := rec.finished[0].Query; q == nil || q.Source != "sales" || q.Rows != 1 {
			t.Errorf("the observer got query %+v", q)
		}
	})
	t.Run("not granted", func(t *testing.T) {
		model := &scriptedModel{turns: []turn{call, {deltas: []string{"ok"}}}}
		a := &Agent{Model: model, Tools: []Tool{grantedTool{}}, Instructions: "Be brief."}
		out, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{Sources: []string{"other"}})
		if err != nil {
			t.Fatal(err)
		}
		if req := model.requests[0]; req.Instructions != "Be brief." || len(req.Tools) != 0 {
			t.Errorf("instructions %q, tools %v", req.Instructions, req.Tools)
		}
		if r := out.Messages[1].ToolResults[0]; !r.IsError || !strings.Contains(r.Content, `unknown tool "runSQL"`) {
			t.Errorf("a call of the tool not offered: %+v", r)
		}
	})
}

// TestRunInstructions: a run's own instructions end the agent's, after
// what the tools offered add.
func TestRunInstructions(t *testing.T) {
	for _, tc := range []struct {
		sources []string
		want    string
	}{
		{[]string{"sales"}, "Be brief.\n\nData sources: sales.\n\nAsk an admin."},
		{nil, "Be brief.\n\nAsk an admin."},
	} {
		model := &scriptedModel{turns: []turn{{deltas: []string{"ok"}}}}
		a := &Agent{Model: model, Tools: []Tool{grantedTool{}}, Instructions: "Be brief."}
		if _, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{Sources: tc.sources, Instructions: "Ask an admin."}); err != nil {
			t.Fatal(err)
		}
		if got := model.requests[0].Instructions; got != tc.want {
			t.Errorf("sources %v: instructions %q, want %q", tc.sources, got, tc.want)
		}
	}
}
