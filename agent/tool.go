package agent

import (
	"context"
	"encoding/json"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Tool is something the model can call.
type Tool interface {
	// Spec describes the tool to the model.
	Spec() ToolSpec
	// Call runs the tool for a run whose working directory is ws (nil:
	// the run has none). An error is a failure to do what was asked (bad
	// input, broken machinery); the loop sends its message to the model as
	// an error result, so it should say what went wrong in words a model
	// can act on, and never contain secrets.
	Call(ctx context.Context, ws Workspace, input json.RawMessage) (*ToolOutput, error)
}

// ToolOutput is what a [Tool] returns.
type ToolOutput struct {
	Content string // what the model reads
	IsError bool   // the call did not do what was asked
	// Sandbox is the raw sandbox run behind the output, if there was one;
	// observers receive it in [ToolResultEvent].
	Sandbox *sandbox.Result
	// Query is the database query behind the output, if there was one;
	// observers receive it in [ToolResultEvent].
	Query *Query
	// Charts are the charts the run drew with the chart helper, read
	// from their specs ([TakeCharts]); observers receive them in
	// [ToolResultEvent].
	Charts []Chart
}

// RunTool is a [Tool] whose offer depends on the run: the tools that read
// data are offered only when the run may query a source
// ([RunOptions.Sources]), and tell the model which.
type RunTool interface {
	Tool
	// ForRun returns what the run's instructions add for the tool ("":
	// nothing), and whether the tool is offered in the run at all. ctx
	// carries run ([RunInfoFrom]); it is called once per run, before
	// the first model call, and should return within a few seconds.
	ForRun(ctx context.Context, run RunInfo) (instructions string, offered bool)
}

// codeTool is implemented by tools whose input carries Python source, so
// that observers can show it before the call runs.
type codeTool interface {
	code(input json.RawMessage) string
}

// workspaceTool is implemented by tools whose description depends on the
// run's working directory (whether its conversation keeps state).
type workspaceTool interface {
	specFor(ws Workspace) ToolSpec
}
