package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
)

// DefaultMaxSteps bounds the model calls of one run when
// [Agent.MaxSteps] is zero.
const DefaultMaxSteps = 10

// StopReason says why a run ended.
type StopReason string

const (
	// StopAnswered: the model answered without calling a tool.
	StopAnswered StopReason = "answered"
	// StopStepLimit: the model was still calling tools when the run
	// reached its step limit; there is no final answer.
	StopStepLimit StopReason = "step-limit"
	// StopLength: the model's output token limit cut its answer short.
	StopLength StopReason = "length"
	// StopRefused: the provider's safety system declined to answer.
	StopRefused StopReason = "refused"
	// StopError: the model call failed.
	StopError StopReason = "error"
	// StopCanceled: the run's context was cancelled or timed out.
	StopCanceled StopReason = "canceled"
)

// Agent runs the tool loop. Its fields are read, never written, by Run, so
// one Agent can serve many runs at once.
type Agent struct {
	Model Model
	Tools []Tool
	// Instructions are the system prompt (default DefaultInstructions).
	Instructions string
	// MaxSteps bounds the model calls of one run (default DefaultMaxSteps).
	MaxSteps int
	Logger   *slog.Logger
}

// RunOptions are what a run works with besides its conversation.
type RunOptions struct {
	// Workspace is the run's working directory: every executeCode run
	// starts with its files and puts back what it writes. Nil: runs start
	// with no files, and what they write is not kept.
	Workspace Workspace
	// Observer is told what the run does, as it happens; nil observes
	// nothing.
	Observer Observer
	// Sources names the data sources the conversation may query (see
	// package datasource): the tools that read data offer only these,
	// and the model is told only of these. Nil: none. The terminal grants
	// every configured source; the bot those granted to the channel.
	Sources []string
	// User and Channel say who asked and where, for the audit log of the
	// tools that read data (e.g. Slack IDs; "terminal" in the terminal).
	User, Channel string
	// Instructions, when set, end the run's instructions: what the front
	// end tells the model of this conversation alone (e.g. that a data
	// source exists but is not granted here, and who can grant it).
	Instructions string
}

// RunInfo is what a tool call knows of its run, from [RunInfoFrom].
type RunInfo struct {
	Sources       []string // the data sources the run may query
	User, Channel string
}

// Granted reports whether the run may query the source.
func (r RunInfo) Granted(source string) bool { return slices.Contains(r.Sources, source) }

type runInfoKey struct{}

// RunInfoFrom returns the RunInfo of the run whose tool call ctx is, or
// the zero RunInfo (no sources) outside a run.
func RunInfoFrom(ctx context.Context) RunInfo {
	ri, _ := ctx.Value(runInfoKey{}).(RunInfo)
	return ri
}

// WithRunInfo returns ctx carrying ri, as [Agent.Run] passes it to
// tools; for calling a tool outside a run (tests, benchmarks).
func WithRunInfo(ctx context.Context, ri RunInfo) context.Context {
	return context.WithValue(ctx, runInfoKey{}, ri)
}

// Outcome is what a run did.
type Outcome struct {
	// Messages are the run's new messages, to append to the history for
	// the next turn: for each completed step the assistant message and the
	// tool message answering its calls, and the final answer. A step cut
	// short by an error or cancellation is left out, so the history stays
	// valid.
	Messages []Message
	// Answer is the text of the last assistant message: the answer when
	// Stop is StopAnswered, and whatever the model last said otherwise.
	Answer string
	Steps  int   // model calls made
	Usage  Usage // tokens, summed over the steps
	Stop   StopReason
	Model  string // the model's ID
}

// Run continues the conversation in history (which must end with a user
// message) until the model answers or the step limit is reached, telling
// opts.Observer as it goes. It returns a non-nil Outcome even with
// an error: the error is the model's failure (usually an [*APIError]) or
// the context's, and the Outcome holds the steps completed before it.
// Tool failures are not errors: they go back to the model.
func (a *Agent) Run(ctx context.Context, history []Message, opts RunOptions) (*Outcome, error) {
	obs := opts.Observer
	if obs == nil {
		obs = ObserverFuncs{}
	}
	if a.Model == nil {
		return &Outcome{}, errors.New("agent: no model")
	}
	if len(history) == 0 {
		return &Outcome{Model: a.Model.ID()}, errors.New("agent: no question: the history is empty")
	}
	log := orDiscard(a.Logger)
	maxSteps := a.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	instructions := a.Instructions
	if instructions == "" {
		instructions = DefaultInstructions
	}
	run := RunInfo{Sources: slices.Clone(opts.Sources), User: opts.User, Channel: opts.Channel}
	ctx = WithRunInfo(ctx, run)
	tools := make(map[string]Tool, len(a.Tools))
	specs := make([]ToolSpec, 0, len(a.Tools))
	for _, t := range a.Tools {
		if rt, ok := t.(RunTool); ok {
			more, offered := rt.ForRun(ctx, run)
			if !offered {
				continue
			}
			if more != "" {
				instructions += "\n\n" + more
			}
		}
		s := t.Spec()
		if w, ok := t.(workspaceTool); ok {
			s = w.specFor(opts.Workspace)
		}
		tools[s.Name] = t
		specs = append(specs, s)
	}
	if opts.Instructions != "" {
		instructions += "\n\n" + opts.Instructions
	}

	out := &Outcome{Model: a.Model.ID()}
	start := time.Now()
	end := func(stop StopReason, err error) (*Outcome, error) {
		out.Stop = stop
		attrs := []any{"model", out.Model, "steps", out.Steps, "stop", string(stop), "usage", out.Usage, "duration", time.Since(start)}
		if err != nil {
			// The caller gets the error and reports it; this is context.
			log.InfoContext(ctx, "agent: run failed", append(attrs, "err", err)...)
		} else {
			log.InfoContext(ctx, "agent: run finished", attrs...)
		}
		obs.Finished(ctx, FinishEvent{Steps: out.Steps, Usage: out.Usage, Stop: stop, Model: out.Model, Answer: out.Answer, Err: err})
		return out, err
	}
	failed := func(err error) (*Outcome, error) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return end(StopCanceled, fmt.Errorf("agent: run stopped: %w", ctxErr))
		}
		return end(StopError, err)
	}

	msgs := slices.Clip(history)
	req := &Request{Instructions: instructions, Tools: specs}
	for step := 1; step <= maxSteps; step++ {
		obs.StepStarted(ctx, StepEvent{Step: step, MaxSteps: maxSteps})
		req.Messages = msgs
		generate := func() (*Response, error) {
			return a.Model.Generate(ctx, req, func(delta string) {
				if delta != "" {
					obs.AnswerDelta(ctx, DeltaEvent{Step: step, Text: delta})
				}
			})
		}
		resp, err := generate()
		// A provider does not retry a call whose answer had started to
		// stream (the text is already out). The loop may: the observer is
		// told to discard it. Once, so a failing API is not hammered.
		if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Partial && ctx.Err() == nil {
			log.WarnContext(ctx, "agent: the answer broke off; trying the step again", "step", step, "err", err)
			obs.StepStarted(ctx, StepEvent{Step: step, MaxSteps: maxSteps, Retry: 1, Err: err})
			resp, err = generate()
		}
		if err != nil {
			return failed(fmt.Errorf("agent: step %d: %w", step, err))
		}
		out.Steps = step
		out.Usage = out.Usage.Add(resp.Usage)
		msg := resp.Message
		msg.Role = RoleAssistant
		out.Answer = msg.Text
		log.DebugContext(ctx, "agent: model turn", "step", step, "finish", string(resp.Finish),
			"tool_calls", len(msg.ToolCalls), "text_bytes", len(msg.Text), "usage", resp.Usage)

		if len(msg.ToolCalls) == 0 {
			if strings.TrimSpace(msg.Text) != "" {
				out.Messages = append(out.Messages, msg)
			}
			switch resp.Finish {
			case FinishLength:
				return end(StopLength, nil)
			case FinishRefusal:
				return end(StopRefused, nil)
			}
			return end(StopAnswered, nil)
		}

		msg.ToolCalls = slices.Clone(msg.ToolCalls)
		results := make([]ToolResult, len(msg.ToolCalls))
		for i := range msg.ToolCalls {
			call := &msg.ToolCalls[i]
			if call.ID == "" { // some OpenAI-compatible servers leave it out
				call.ID = fmt.Sprintf("call_%d_%d", step, i)
			}
			if resp.Finish == FinishLength {
				// The limit cut the turn inside its calls: their arguments
				// are incomplete (Anthropic's SDK even turns them into {}).
				// Say so rather than run what is left, or the model retries
				// the same long call until the step limit.
				results[i] = ToolResult{CallID: call.ID, Name: call.Name, IsError: true,
					Content: "Error: not run: your output reached the output-token limit before this call was complete. Write shorter code, or split the work into several calls."}
				log.InfoContext(ctx, "agent: tool call cut by the output limit", "tool", call.Name, "step", step)
				continue
			}
			results[i] = a.call(ctx, log, obs, opts.Workspace, tools, step, i, *call)
			if ctx.Err() != nil {
				return failed(ctx.Err())
			}
		}
		turn := []Message{msg, {Role: RoleTool, ToolResults: results}}
		out.Messages = append(out.Messages, turn...)
		msgs = append(msgs, turn...)
	}
	log.InfoContext(ctx, "agent: step limit reached", "max_steps", maxSteps)
	return end(StopStepLimit, nil)
}

// call runs one tool call and tells obs. Every failure becomes an error
// result for the model.
func (a *Agent) call(ctx context.Context, log *slog.Logger, obs Observer, ws Workspace, tools map[string]Tool, step, index int, call ToolCall) ToolResult {
	ev := ToolCallEvent{Step: step, Index: index, Call: call}
	tool, ok := tools[call.Name]
	if ok {
		if ct, isCode := tool.(codeTool); isCode {
			ev.Code = ct.code(call.Input)
		}
	}
	obs.ToolCallStarted(ctx, ev)
	start := time.Now()
	var (
		output *ToolOutput
		err    error
	)
	switch {
	case !ok:
		err = unknownTool(call.Name, tools)
	case len(call.Input) > 0 && !json.Valid(call.Input):
		err = fmt.Errorf("invalid input for %s: the arguments are not valid JSON; send a JSON object that matches the tool's schema", call.Name)
	default:
		input := call.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		output, err = callTool(ctx, tool, ws, input)
	}
	dur := time.Since(start)

	res := ToolResult{CallID: call.ID, Name: call.Name}
	done := ToolResultEvent{ToolCallEvent: ev, Duration: dur}
	switch {
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		res.Content = "Error: " + err.Error()
		res.IsError = true
		done.Err = err
		log.InfoContext(ctx, "agent: tool call failed", "tool", call.Name, "step", step, "err", err)
	default:
		res.Content = output.Content
		res.IsError = output.IsError
		done.Sandbox = output.Sandbox
		done.Query = output.Query
		done.Charts = output.Charts
	}
	done.Result = res
	obs.ToolCallFinished(ctx, done)
	return res
}

// callTool calls t, turning a panic into an error so that one bad tool
// cannot take the process down.
func callTool(ctx context.Context, t Tool, ws Workspace, input json.RawMessage) (out *ToolOutput, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the tool crashed: %v", r)
		}
	}()
	out, err = t.Call(ctx, ws, input)
	if err == nil && out == nil {
		err = errors.New("the tool returned no result")
	}
	return out, err
}

func unknownTool(name string, tools map[string]Tool) error {
	if len(tools) == 0 {
		return fmt.Errorf("unknown tool %q: no tools are available; answer without calling one", name)
	}
	return fmt.Errorf("unknown tool %q; the available tools are: %s", name, strings.Join(slices.Sorted(maps.Keys(tools)), ", "))
}
