package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// turn is one scripted model turn: a response streamed as deltas, or an
// error, or a function for turns that must watch ctx.
type turn struct {
	deltas []string // streamed text; joined, it is the message's text
	calls  []ToolCall
	usage  Usage
	finish Finish
	err    error
	fn     func(ctx context.Context, req *Request) (*Response, error)
}

// scriptedModel plays its turns in order and records every request.
type scriptedModel struct {
	mu       sync.Mutex
	turns    []turn
	repeat   bool // replay the last turn forever
	requests []Request
}

func (m *scriptedModel) ID() string { return "test/scripted" }

func (m *scriptedModel) Generate(ctx context.Context, req *Request, text func(string)) (*Response, error) {
	m.mu.Lock()
	cp := *req
	cp.Messages = append([]Message(nil), req.Messages...)
	m.requests = append(m.requests, cp)
	n := len(m.requests) - 1
	if n >= len(m.turns) {
		if !m.repeat {
			m.mu.Unlock()
			return nil, fmt.Errorf("scripted model: no turn %d", n+1)
		}
		n = len(m.turns) - 1
	}
	t := m.turns[n]
	m.mu.Unlock()
	if t.fn != nil {
		return t.fn(ctx, req)
	}
	if t.err != nil {
		return nil, t.err
	}
	for _, d := range t.deltas {
		text(d)
	}
	finish := t.finish
	if finish == "" {
		finish = FinishStop
		if len(t.calls) > 0 {
			finish = FinishToolCalls
		}
	}
	return &Response{
		Message: Message{Role: RoleAssistant, Text: strings.Join(t.deltas, ""), ToolCalls: t.calls},
		Usage:   t.usage,
		Finish:  finish,
	}, nil
}

// fakeRunner answers sandbox requests with a function and records them.
type fakeRunner struct {
	info *sandbox.Info // nil: the default limits, and state kept
	mu   sync.Mutex
	fn   func(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	reqs []sandbox.Request
}

func (r *fakeRunner) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.fn(ctx, req)
}

// Info reports r.info, or the default limits and that the fake keeps
// state.
func (r *fakeRunner) Info() sandbox.Info {
	if r.info != nil {
		return *r.info
	}
	return sandbox.Info{Backend: "fake", Limits: sandbox.Limits{}.WithDefaults(), KeepsState: true}
}

func (r *fakeRunner) codes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var codes []string
	for _, q := range r.reqs {
		codes = append(codes, q.Code)
	}
	return codes
}

// pythonish runs a few known programs the way Python would.
func pythonish(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	switch req.Code {
	case "print(5 + 5 - 84**3)":
		return &sandbox.Result{Stdout: []byte("-592694\n"), StdoutSize: 8, Duration: 40 * time.Millisecond}, nil
	case "print(5 + 5 - 84^3)":
		return &sandbox.Result{Stdout: []byte("-81\n"), StdoutSize: 4}, nil
	case "print(x)":
		tb := "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nNameError: name 'x' is not defined\n"
		return &sandbox.Result{Stderr: []byte(tb), StderrSize: int64(len(tb)), ExitCode: 1}, nil
	case "x = 1":
		return &sandbox.Result{}, nil
	}
	return &sandbox.Result{Stdout: []byte("ok\n")}, nil
}

func codeCall(id, code string) ToolCall {
	in, _ := json.Marshal(map[string]string{"code": code})
	return ToolCall{ID: id, Name: ExecuteCodeName, Input: in}
}

// recorder is an Observer that writes every event as a line.
type recorder struct {
	events   []string
	finished []ToolResultEvent
	finish   FinishEvent
}

func (r *recorder) StepStarted(_ context.Context, e StepEvent) {
	r.events = append(r.events, fmt.Sprintf("step %d/%d", e.Step, e.MaxSteps))
}
func (r *recorder) AnswerDelta(_ context.Context, e DeltaEvent) {
	r.events = append(r.events, fmt.Sprintf("delta %d %q", e.Step, e.Text))
}
func (r *recorder) ToolCallStarted(_ context.Context, e ToolCallEvent) {
	r.events = append(r.events, fmt.Sprintf("call %d.%d %s %s code=%q", e.Step, e.Index, e.Call.ID, e.Call.Name, e.Code))
}
func (r *recorder) ToolCallFinished(_ context.Context, e ToolResultEvent) {
	r.finished = append(r.finished, e)
	errText := ""
	if e.Err != nil {
		errText = " err"
	}
	r.events = append(r.events, fmt.Sprintf("done %d.%d %s error=%v%s", e.Step, e.Index, e.Call.ID, e.Result.IsError, errText))
}
func (r *recorder) Finished(_ context.Context, e FinishEvent) {
	r.finish = e
	r.events = append(r.events, fmt.Sprintf("finished %s steps=%d", e.Stop, e.Steps))
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestRun(t *testing.T) {
	const question = "What is 5 + 5 minus 84 cubed?"
	tests := []struct {
		name     string
		turns    []turn
		repeat   bool
		maxSteps int
		runner   func(context.Context, sandbox.Request) (*sandbox.Result, error)

		wantStop    StopReason
		wantAnswer  string
		wantSteps   int
		wantUsage   Usage
		wantCodes   []string // programs the sandbox ran, in order
		wantEvents  []string
		wantResults [][]ToolResult // tool results sent back, per step
	}{
		{
			name:       "answer without tools",
			turns:      []turn{{deltas: []string{"Hello", ", there."}, usage: Usage{10, 3}}},
			wantStop:   StopAnswered,
			wantAnswer: "Hello, there.",
			wantSteps:  1,
			wantUsage:  Usage{10, 3},
			wantEvents: []string{`step 1/10`, `delta 1 "Hello"`, `delta 1 ", there."`, `finished answered steps=1`},
		},
		{
			name: "one tool call",
			turns: []turn{
				{deltas: []string{"Let me compute."}, calls: []ToolCall{codeCall("c1", "print(5 + 5 - 84**3)")}, usage: Usage{100, 20}},
				{deltas: []string{"It is -592694."}, usage: Usage{150, 8}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "It is -592694.",
			wantSteps:  2,
			wantUsage:  Usage{250, 28},
			wantCodes:  []string{"print(5 + 5 - 84**3)"},
			wantEvents: []string{
				`step 1/10`, `delta 1 "Let me compute."`,
				`call 1.0 c1 executeCode code="print(5 + 5 - 84**3)"`, `done 1.0 c1 error=false`,
				`step 2/10`, `delta 2 "It is -592694."`, `finished answered steps=2`,
			},
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "executeCode", Content: `{"output":"-592694\n","stderr":"","exitCode":0}`}}},
		},
		{
			name: "failing program then a fixed one",
			turns: []turn{
				{calls: []ToolCall{codeCall("c1", "print(x)")}},
				{calls: []ToolCall{codeCall("c2", "print(5 + 5 - 84**3)")}},
				{deltas: []string{"-592694"}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "-592694",
			wantSteps:  3,
			wantCodes:  []string{"print(x)", "print(5 + 5 - 84**3)"},
			wantResults: [][]ToolResult{
				{{CallID: "c1", Name: "executeCode", Content: `{"output":"","stderr":"Traceback (most recent call last):\n  File \"\u003cstring\u003e\", line 1, in \u003cmodule\u003e\nNameError: name 'x' is not defined\n","exitCode":1}`}},
				{{CallID: "c2", Name: "executeCode", Content: `{"output":"-592694\n","stderr":"","exitCode":0}`}},
			},
		},
		{
			name: "two tool calls in one step run in order",
			turns: []turn{
				{calls: []ToolCall{codeCall("a", "print(5 + 5 - 84**3)"), codeCall("b", "print(5 + 5 - 84^3)")}},
				{deltas: []string{"** is power; ^ is xor."}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "** is power; ^ is xor.",
			wantSteps:  2,
			wantCodes:  []string{"print(5 + 5 - 84**3)", "print(5 + 5 - 84^3)"},
			wantEvents: []string{
				`step 1/10`,
				`call 1.0 a executeCode code="print(5 + 5 - 84**3)"`, `done 1.0 a error=false`,
				`call 1.1 b executeCode code="print(5 + 5 - 84^3)"`, `done 1.1 b error=false`,
				`step 2/10`, `delta 2 "** is power; ^ is xor."`, `finished answered steps=2`,
			},
			wantResults: [][]ToolResult{{
				{CallID: "a", Name: "executeCode", Content: `{"output":"-592694\n","stderr":"","exitCode":0}`},
				{CallID: "b", Name: "executeCode", Content: `{"output":"-81\n","stderr":"","exitCode":0}`},
			}},
		},
		{
			name: "unknown tool",
			turns: []turn{
				{calls: []ToolCall{{ID: "c1", Name: "calculator", Input: json.RawMessage(`{"expr":"1+1"}`)}}},
				{deltas: []string{"2"}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "2",
			wantSteps:  2,
			wantEvents: []string{`step 1/10`, `call 1.0 c1 calculator code=""`, `done 1.0 c1 error=true err`, `step 2/10`, `delta 2 "2"`, `finished answered steps=2`},
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "calculator", IsError: true,
				Content: `Error: unknown tool "calculator"; the available tools are: executeCode`}}},
		},
		{
			name: "invalid JSON arguments",
			turns: []turn{
				{calls: []ToolCall{{ID: "c1", Name: ExecuteCodeName, Input: json.RawMessage(`{"code": "print(1)`)}}},
				{deltas: []string{"Sorry."}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "Sorry.",
			wantSteps:  2,
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "executeCode", IsError: true,
				Content: `Error: invalid input for executeCode: the arguments are not valid JSON; send a JSON object that matches the tool's schema`}}},
		},
		{
			name: "arguments without code",
			turns: []turn{
				{calls: []ToolCall{{ID: "c1", Name: ExecuteCodeName, Input: json.RawMessage(`{"source": "print(1)"}`)}}},
				{deltas: []string{"Sorry."}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "Sorry.",
			wantSteps:  2,
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "executeCode", IsError: true,
				Content: `Error: invalid input: the required field "code" is missing; send an object like {"code": "print(5 + 5)"}`}}},
		},
		{
			name: "program that prints nothing",
			turns: []turn{
				{calls: []ToolCall{codeCall("c1", "x = 1")}},
				{deltas: []string{"Done."}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "Done.",
			wantSteps:  2,
			wantCodes:  []string{"x = 1"},
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "executeCode",
				Content: `{"output":"` + noOutput + `","stderr":"","exitCode":0}`}}},
		},
		{
			name: "sandbox failure goes back to the model",
			turns: []turn{
				{calls: []ToolCall{codeCall("c1", "print(1)")}},
				{deltas: []string{"The sandbox is down."}},
			},
			runner: func(context.Context, sandbox.Request) (*sandbox.Result, error) {
				return nil, &sandbox.Error{Op: "start", Err: errors.New("no user namespaces")}
			},
			wantStop:   StopAnswered,
			wantAnswer: "The sandbox is down.",
			wantSteps:  2,
			wantCodes:  []string{"print(1)"},
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "executeCode", IsError: true,
				Content: `Error: the sandbox failed before running the code (sandbox: start: no user namespaces); this is not a problem with the code`}}},
		},
		{
			name:      "step limit",
			turns:     []turn{{deltas: []string{"Again."}, calls: []ToolCall{codeCall("", "print(5 + 5 - 84**3)")}, usage: Usage{1, 1}}},
			repeat:    true,
			maxSteps:  3,
			wantStop:  StopStepLimit,
			wantSteps: 3,
			wantUsage: Usage{3, 3},
			// The last step's text is all there is.
			wantAnswer: "Again.",
			wantCodes:  []string{"print(5 + 5 - 84**3)", "print(5 + 5 - 84**3)", "print(5 + 5 - 84**3)"},
		},
		{
			// The limit cut the call's code: it is not run, and the model
			// is told why.
			name: "tool call cut by the token limit",
			turns: []turn{
				{calls: []ToolCall{codeCall("c1", "print(1")}, finish: FinishLength},
				{deltas: []string{"Shorter now."}},
			},
			wantStop:   StopAnswered,
			wantAnswer: "Shorter now.",
			wantSteps:  2,
			wantResults: [][]ToolResult{{{CallID: "c1", Name: "executeCode", IsError: true,
				Content: "Error: not run: your output reached the output-token limit before this call was complete. Write shorter code, or split the work into several calls."}}},
		},
		{
			name:       "refusal",
			turns:      []turn{{deltas: []string{"I can't help with that."}, finish: FinishRefusal}},
			wantStop:   StopRefused,
			wantAnswer: "I can't help with that.",
			wantSteps:  1,
		},
		{
			name:       "answer cut by the token limit",
			turns:      []turn{{deltas: []string{"The answer is"}, finish: FinishLength}},
			wantStop:   StopLength,
			wantAnswer: "The answer is",
			wantSteps:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := &scriptedModel{turns: tt.turns, repeat: tt.repeat}
			fn := tt.runner
			if fn == nil {
				fn = pythonish
			}
			runner := &fakeRunner{fn: fn}
			a := &Agent{
				Model:    model,
				Tools:    []Tool{NewExecuteCode(runner, ExecuteCodeOptions{Runtime: Runtime{Python: "3.13.1"}})},
				MaxSteps: tt.maxSteps,
				Logger:   testLogger(t),
			}
			history := []Message{UserMessage(question)}
			rec := &recorder{}
			out, err := a.Run(t.Context(), history, RunOptions{Observer: rec})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.Stop != tt.wantStop || out.Answer != tt.wantAnswer || out.Steps != tt.wantSteps {
				t.Errorf("Run = stop %q, answer %q, steps %d; want %q, %q, %d", out.Stop, out.Answer, out.Steps, tt.wantStop, tt.wantAnswer, tt.wantSteps)
			}
			if out.Usage != tt.wantUsage {
				t.Errorf("usage = %+v, want %+v", out.Usage, tt.wantUsage)
			}
			if out.Model != "test/scripted" {
				t.Errorf("model = %q", out.Model)
			}
			if got := runner.codes(); !reflect.DeepEqual(got, tt.wantCodes) {
				t.Errorf("sandbox ran %q, want %q", got, tt.wantCodes)
			}
			if tt.wantEvents != nil && !reflect.DeepEqual(rec.events, tt.wantEvents) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(rec.events, "\n"), strings.Join(tt.wantEvents, "\n"))
			}
			if rec.finish.Stop != tt.wantStop || rec.finish.Steps != tt.wantSteps || rec.finish.Usage != tt.wantUsage || rec.finish.Model != "test/scripted" || rec.finish.Answer != tt.wantAnswer {
				t.Errorf("Finished(%+v), want stop %q steps %d", rec.finish, tt.wantStop, tt.wantSteps)
			}

			// Every request starts with the history, carries the tool, and
			// then what the earlier steps added.
			if len(model.requests) != tt.wantSteps {
				t.Fatalf("model called %d times, want %d", len(model.requests), tt.wantSteps)
			}
			for i, req := range model.requests {
				if !reflect.DeepEqual(req.Messages[0], history[0]) {
					t.Errorf("request %d starts with %+v", i, req.Messages[0])
				}
				if len(req.Tools) != 1 || req.Tools[0].Name != ExecuteCodeName || req.Instructions != DefaultInstructions {
					t.Errorf("request %d: tools %v, instructions %.20q", i, req.Tools, req.Instructions)
				}
				if want := 1 + 2*i; len(req.Messages) != want {
					t.Errorf("request %d has %d messages, want %d", i, len(req.Messages), want)
				}
			}
			for i, want := range tt.wantResults {
				msgs := model.requests[i+1].Messages
				last := msgs[len(msgs)-1]
				if last.Role != RoleTool || !reflect.DeepEqual(last.ToolResults, want) {
					t.Errorf("step %d results sent back:\n%+v\nwant\n%+v", i+1, last, want)
				}
				if prev := msgs[len(msgs)-2]; prev.Role != RoleAssistant || len(prev.ToolCalls) != len(want) {
					t.Errorf("step %d: tool message follows %+v", i+1, prev)
				}
			}

			// Outcome.Messages is what the run added: what the last request
			// had beyond the question, then the last step.
			last := model.requests[len(model.requests)-1].Messages[1:]
			if !reflect.DeepEqual(out.Messages[:len(last)], last) {
				t.Errorf("Outcome.Messages =\n%+v\nwant it to start with\n%+v", out.Messages, last)
			}
			tail := out.Messages[len(last):]
			switch tt.wantStop {
			case StopStepLimit:
				if len(tail) != 2 || tail[0].Role != RoleAssistant || tail[1].Role != RoleTool {
					t.Errorf("step limit: the last step added %+v", tail)
				}
			default:
				if want := []Message{{Role: RoleAssistant, Text: tt.wantAnswer}}; !reflect.DeepEqual(tail, want) {
					t.Errorf("the answer added %+v, want %+v", tail, want)
				}
			}
			if len(history) != 1 {
				t.Errorf("history changed: %+v", history)
			}
		})
	}
}

func TestRunFillsMissingCallIDs(t *testing.T) {
	model := &scriptedModel{turns: []turn{
		{calls: []ToolCall{codeCall("", "print(1)"), codeCall("", "print(2)")}},
		{deltas: []string{"1 and 2"}},
	}}
	a := &Agent{Model: model, Tools: []Tool{NewExecuteCode(&fakeRunner{fn: pythonish}, ExecuteCodeOptions{})}}
	out, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls, results := out.Messages[0].ToolCalls, out.Messages[1].ToolResults
	if calls[0].ID == "" || calls[0].ID == calls[1].ID || results[0].CallID != calls[0].ID || results[1].CallID != calls[1].ID {
		t.Errorf("calls %+v, results %+v: want distinct IDs matched by the results", calls, results)
	}
}

func TestRunModelError(t *testing.T) {
	apiErr := &APIError{Provider: "Anthropic API", StatusCode: 529, Retries: 2}
	model := &scriptedModel{turns: []turn{
		{calls: []ToolCall{codeCall("c1", "print(5 + 5 - 84**3)")}, usage: Usage{5, 5}},
		{err: apiErr},
	}}
	a := &Agent{Model: model, Tools: []Tool{NewExecuteCode(&fakeRunner{fn: pythonish}, ExecuteCodeOptions{})}}
	rec := &recorder{}
	out, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{Observer: rec})
	if !errors.Is(err, apiErr) {
		t.Fatalf("err = %v, want the API error", err)
	}
	if want := "agent: step 2: model: Anthropic API: 529 Overloaded (after 2 retries)"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if out.Stop != StopError || out.Steps != 1 || out.Usage != (Usage{5, 5}) || len(out.Messages) != 2 {
		t.Errorf("outcome = %+v", out)
	}
	if rec.finish.Stop != StopError || !errors.Is(rec.finish.Err, apiErr) {
		t.Errorf("Finished(%+v)", rec.finish)
	}
}

// TestRunCancel cancels a run while its code runs: Run returns at once
// with the context's error, and the cut step is not in the history.
func TestRunCancel(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan struct{})
	runner := &fakeRunner{fn: func(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
		close(started)
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	}}
	model := &scriptedModel{turns: []turn{{calls: []ToolCall{codeCall("c1", "while True: pass")}}}}
	a := &Agent{Model: model, Tools: []Tool{NewExecuteCode(runner, ExecuteCodeOptions{})}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	rec := &recorder{}
	t0 := time.Now()
	out, err := a.Run(ctx, []Message{UserMessage("loop forever")}, RunOptions{Observer: rec})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Run took %v after cancel", d)
	}
	select {
	case <-stopped:
	default:
		t.Error("the runner's ctx was not cancelled")
	}
	if out.Stop != StopCanceled || len(out.Messages) != 0 {
		t.Errorf("outcome = %+v", out)
	}
	if rec.finish.Stop != StopCanceled {
		t.Errorf("Finished(%+v)", rec.finish)
	}
}

// TestRunCancelModel cancels a run while the model is thinking.
func TestRunCancelModel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	model := &scriptedModel{turns: []turn{{fn: func(ctx context.Context, _ *Request) (*Response, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}}}}
	a := &Agent{Model: model}
	out, err := a.Run(ctx, []Message{UserMessage("q")}, RunOptions{})
	if !errors.Is(err, context.Canceled) || out.Stop != StopCanceled {
		t.Fatalf("Run = %+v, %v; want canceled", out, err)
	}
}

func TestRunToolPanic(t *testing.T) {
	model := &scriptedModel{turns: []turn{{calls: []ToolCall{{ID: "1", Name: "boom", Input: json.RawMessage(`{}`)}}}, {deltas: []string{"ok"}}}}
	a := &Agent{Model: model, Tools: []Tool{panicTool{}}}
	out, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{})
	if err != nil || out.Answer != "ok" {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if r := out.Messages[1].ToolResults[0]; !r.IsError || r.Content != "Error: the tool crashed: kaboom" {
		t.Errorf("result = %+v", r)
	}
}

type panicTool struct{}

func (panicTool) Spec() ToolSpec { return ToolSpec{Name: "boom"} }
func (panicTool) Call(context.Context, Workspace, json.RawMessage) (*ToolOutput, error) {
	panic("kaboom")
}

// TestStepRetriedAfterABrokenAnswer: a call that broke off after its answer
// had started to stream (which the provider cannot retry) is run again
// once; the observer is told to discard the text.
func TestStepRetriedAfterABrokenAnswer(t *testing.T) {
	broken := &APIError{Provider: "Test API", Message: "the connection broke off", Partial: true}
	for _, tc := range []struct {
		name     string
		turns    []turn
		wantErr  bool
		wantCall int
	}{
		{"once", []turn{{err: broken}, {deltas: []string{"42"}}}, false, 2},
		{"not twice", []turn{{err: broken}, {err: broken}, {deltas: []string{"42"}}}, true, 2},
		{"not when the API refused", []turn{{err: &APIError{Provider: "Test API", StatusCode: 400}}, {deltas: []string{"42"}}}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &scriptedModel{turns: tc.turns}
			a := &Agent{Model: model, Logger: testLogger(t)}
			var retries []StepEvent
			obs := ObserverFuncs{OnStepStarted: func(e StepEvent) {
				if e.Retry > 0 {
					retries = append(retries, e)
				}
			}}
			out, err := a.Run(t.Context(), []Message{UserMessage("q")}, RunOptions{Observer: obs})
			if (err != nil) != tc.wantErr || len(model.requests) != tc.wantCall {
				t.Fatalf("Run = %+v, %v after %d calls; want error %v after %d", out, err, len(model.requests), tc.wantErr, tc.wantCall)
			}
			if !tc.wantErr && (out.Answer != "42" || out.Stop != StopAnswered || out.Steps != 1) {
				t.Errorf("outcome = %+v", out)
			}
			if wantRetries := min(tc.wantCall-1, 1); len(retries) != wantRetries || (wantRetries == 1 && (retries[0].Step != 1 || retries[0].Err == nil)) {
				t.Errorf("retry events = %+v, want %d", retries, wantRetries)
			}
		})
	}
}

// TestAPIErrorOneFullStop: the hint follows the API's message after one
// full stop, whether or not the message ended its sentence.
func TestAPIErrorOneFullStop(t *testing.T) {
	for _, tt := range []struct{ msg, want string }{
		{"You do not have access to it.", "model: openai: 403 Forbidden: You do not have access to it. Check the key."},
		{"no access", "model: openai: 403 Forbidden: no access. Check the key."},
		{"Really?", "model: openai: 403 Forbidden: Really? Check the key."},
	} {
		e := &APIError{Provider: "openai", StatusCode: 403, Message: tt.msg, Hint: "Check the key."}
		if got := e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
