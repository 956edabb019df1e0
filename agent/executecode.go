package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// ExecuteCodeName is the name the model calls the code tool by, as in the
// reference tool.
const ExecuteCodeName = "executeCode"

// MaxModelOutput is how many bytes of stdout, and of stderr, of one run
// go back to the model, counted as JSON encodes them, within
// [MaxToolResult] for the whole result. Longer output keeps its head and
// tail and says how much was left out; observers still get the whole
// [sandbox.Result].
const MaxModelOutput = 16 << 10

// noOutput is the result's output when a program succeeds silently.
const noOutput = "The code ran successfully but printed nothing. Only printed output comes back: print() every result you need."

// Runner runs code in a sandbox; [github.com/sandpiper-bot/sandpiper/sandbox/local.Sandbox]
// implements it. A Go error means the sandbox machinery failed; a program
// that fails is a [sandbox.Result]. Info says which limits a run gets.
type Runner interface {
	Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	Info() sandbox.Info
}

// ExecuteCodeOptions configure [NewExecuteCode]. Zero fields take defaults.
type ExecuteCodeOptions struct {
	// Runtime is the sandbox's Python and modules, from [ProbeRuntime];
	// the tool's description tells the model about them.
	Runtime Runtime
	// Limits go with every request, over the runner's own (its Info):
	// zero fields, usually all, take the runner's. The limits runs get
	// are described to the model ([ExecuteCode.Limits]).
	Limits sandbox.Limits
	// Logger gets a debug record of every run's code and raw output.
	Logger *slog.Logger
	// KeepState carries the conversation's Python variables from one run
	// to the next (see [sandbox.Request.KeepState]), in the Workspace,
	// within Limits.StateSize; the description and the results tell the
	// model what is kept. Off, every run starts with no names.
	KeepState bool
}

// ExecuteCode is the executeCode tool: it runs the model's Python with
// `python3 -c` in a fresh sandbox and returns what the program printed. It
// is safe for concurrent use if its Runner is.
type ExecuteCode struct {
	runner Runner
	opts   ExecuteCodeOptions
	limits sandbox.Limits // opts.Limits over the runner's: what runs get
	spec   ToolSpec
	// stateless is spec for a conversation that keeps no state, when
	// the tool keeps state.
	stateless ToolSpec
	log       *slog.Logger
}

var _ Tool = (*ExecuteCode)(nil)

// NewExecuteCode returns the executeCode tool running code through runner.
// It keeps no state when the runner cannot (its Info), whatever opts say.
func NewExecuteCode(runner Runner, opts ExecuteCodeOptions) *ExecuteCode {
	info := runner.Info()
	opts.KeepState = opts.KeepState && info.KeepsState
	t := &ExecuteCode{
		runner: runner,
		opts:   opts,
		limits: opts.Limits.Or(info.Limits),
		log:    orDiscard(opts.Logger),
	}
	t.spec = ToolSpec{
		Name:        ExecuteCodeName,
		Description: describeExecuteCode(opts.Runtime, t.limits, opts.KeepState),
		InputSchema: executeCodeSchema,
	}
	t.stateless = t.spec
	if opts.KeepState {
		t.stateless.Description = describeExecuteCode(opts.Runtime, t.limits, false)
	}
	return t
}

// executeCodeSchema is the tool's input: one required string.
var executeCodeSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"Python 3 source code, run as python3 -c. Print every result you need to see, e.g. print(5 + 5)."}},"required":["code"],"additionalProperties":false}`)

// Limits are the limits the tool's runs get: ExecuteCodeOptions.Limits
// over the runner's, every field set. Front ends show them (what a limit
// that ended a run was) instead of keeping a copy.
func (t *ExecuteCode) Limits() sandbox.Limits { return t.limits }

// Spec describes the tool.
func (t *ExecuteCode) Spec() ToolSpec { return t.spec }

// specFor describes the tool for a run with the working directory ws:
// without one, or in a conversation that keeps no state
// ([StateSwitch]), as keeping no variables.
func (t *ExecuteCode) specFor(ws Workspace) ToolSpec {
	if ws == nil {
		return t.stateless
	}
	if s, ok := ws.(StateSwitch); ok && !s.KeepsState() {
		return t.stateless
	}
	return t.spec
}

// Call runs the code in input ({"code": "..."}) with the files of ws,
// and puts the files it writes back in ws; with KeepState, it starts from
// the state ws keeps, and keeps the one the run saves.
func (t *ExecuteCode) Call(ctx context.Context, ws Workspace, input json.RawMessage) (*ToolOutput, error) {
	code, err := decodeCode(input)
	if err != nil {
		return nil, err
	}
	req := sandbox.Request{Code: code, Limits: t.opts.Limits}
	if ws != nil {
		if req.Files, err = ws.Files(ctx); err != nil {
			t.log.ErrorContext(ctx, "executeCode: reading the workspace failed", "err", err)
			return nil, fmt.Errorf("the files of the working directory could not be read (%v); this is not a problem with the code", err)
		}
	}
	if n := filesSize(req.Files); n > 0 {
		// The input files live in the writable working directory: make
		// room for them on top of the space the program is promised.
		req.Limits.DiskSize = t.limits.DiskSize + n
	}
	var st stateNotes
	if t.opts.KeepState && ws != nil {
		st = t.loadState(ctx, ws, &req)
	}
	t.log.DebugContext(ctx, "executeCode: running", "code", code, "files", len(req.Files), "state", req.StateSize())
	// The sandbox takes the state: nothing here holds it during the run,
	// so that the host keeps at most the one the run saves.
	run := req
	req.State, req.StateFrom = nil, nil
	res, err := t.runner.Run(ctx, run)
	st.done()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t.log.ErrorContext(ctx, "executeCode: sandbox failed", "err", err)
		return nil, fmt.Errorf("the sandbox failed before running the code (%v); this is not a problem with the code", err)
	}
	t.log.DebugContext(ctx, "executeCode: finished",
		"exit_code", res.ExitCode, "limit", string(res.Limit), "duration", res.Duration,
		"stdout", string(res.Stdout), "stderr", string(res.Stderr),
		"stdout_truncated", res.StdoutTruncated, "stderr_truncated", res.StderrTruncated,
		"files", len(res.Files))
	// The chart specs are the host's to read, never files to keep.
	var charts []Chart
	charts, res.Files = TakeCharts(res.Files)
	var notKept []string
	if ws != nil && len(res.Files) > 0 {
		dropped, err := ws.Put(ctx, res.Files)
		if err != nil {
			t.log.ErrorContext(ctx, "executeCode: keeping the run's files failed", "err", err)
		}
		for _, name := range dropped {
			notKept = append(notKept, name+" (not kept for later runs: over the working directory's limits)")
		}
	}
	if req.KeepState {
		st = t.keepState(ctx, ws, res, st)
	}
	return &ToolOutput{Content: t.encodeResult(res, notKept, st), Sandbox: res, Charts: charts}, nil
}

func filesSize(files []sandbox.File) int64 {
	var n int64
	for _, f := range files {
		n += int64(len(f.Data))
	}
	return n
}

// limitNote explains, in stderr, in the words of the run's verdict, what
// ended the run when the program did not (a limit, the sandbox going
// away), and a limit that hampered it.
func limitNote(v sandbox.Verdict) string {
	var notes []string
	switch {
	case v.Limited():
		notes = append(notes, v.Phrase)
	case v.Kind == sandbox.VerdictGone:
		notes = append(notes, v.Phrase+", which ended the program; this is not a problem with the code, and running it again gets a new sandbox")
	}
	if v.Note != "" {
		notes = append(notes, v.Note)
	}
	if len(notes) == 0 {
		return ""
	}
	return "[sandbox: " + strings.Join(notes, "; ") + "]"
}

// code implements codeTool.
func (t *ExecuteCode) code(input json.RawMessage) string {
	code, _ := decodeCode(input)
	return code
}

// decodeCode reads {"code": "..."}. Its errors are written for the model.
func decodeCode(input json.RawMessage) (string, error) {
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		// Some models send the arguments object as a JSON string.
		var s string
		if json.Unmarshal(input, &s) == nil && json.Unmarshal([]byte(s), &in) == nil {
			err = nil
		}
		if err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) || !json.Valid(input) {
				return "", fmt.Errorf(`invalid input: the arguments are not valid JSON (%v); send an object like {"code": "print(5 + 5)"}`, err)
			}
			return "", fmt.Errorf(`invalid input: %v; send an object like {"code": "print(5 + 5)"}`, err)
		}
	}
	if in.Code == nil {
		return "", errors.New(`invalid input: the required field "code" is missing; send an object like {"code": "print(5 + 5)"}`)
	}
	if strings.TrimSpace(*in.Code) == "" {
		return "", errors.New(`invalid input: "code" is empty; send the Python source to run`)
	}
	return *in.Code, nil
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
