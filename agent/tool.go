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
}

// codeTool is implemented by tools whose input carries Python source, so
// that observers can show it before the call runs.
type codeTool interface {
	code(input json.RawMessage) string
}
