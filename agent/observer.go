package agent

import (
	"context"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Observer is told what a run does, for whoever shows it (a terminal, a
// Slack thread). [Agent.Run] calls its methods with the run's ctx, from
// the goroutine that called Run, in the order things happen, and waits
// for each to return, so an observer needs no locking; the run waits
// while it works.
//
// A run goes: for each step, StepStarted, then AnswerDelta for each piece
// of text the model writes, then, for each tool call in call order,
// ToolCallStarted and ToolCallFinished; at the end, Finished exactly once.
// Text written in a step that then calls tools is the model's commentary
// before the calls; the answer is the text of the last step.
type Observer interface {
	StepStarted(context.Context, StepEvent)
	AnswerDelta(context.Context, DeltaEvent)
	ToolCallStarted(context.Context, ToolCallEvent)
	ToolCallFinished(context.Context, ToolResultEvent)
	Finished(context.Context, FinishEvent)
}

// StepEvent starts a step: one model call and the tool calls it makes.
type StepEvent struct {
	Step     int // from 1
	MaxSteps int
	// Retry is 1 when the step's model call starts again because the
	// connection broke off while the answer was streaming: the text of
	// the step streamed so far is to be discarded. Err says what broke.
	Retry int
	Err   error
}

// DeltaEvent is a piece of text streamed from the model.
type DeltaEvent struct {
	Step int
	Text string
}

// ToolCallEvent is a tool call about to run.
type ToolCallEvent struct {
	Step  int
	Index int // position of the call in its step, from 0
	Call  ToolCall
	// Code is the Python source of an executeCode call (empty for other
	// tools, or when the input could not be decoded).
	Code string
}

// ToolResultEvent is a tool call that finished.
type ToolResultEvent struct {
	ToolCallEvent
	// Result is what goes back to the model.
	Result ToolResult
	// Sandbox is the raw run of an executeCode call: stdout, stderr, exit
	// code, the limit that ended it, and files it produced. It is nil for
	// other tools and when the code never ran (bad input, sandbox failure).
	Sandbox *sandbox.Result
	// Query is the database query of a data tool's call (package
	// datasource), whether it succeeded or the database refused it; nil
	// for other tools and when no query reached a database.
	Query *Query
	// Charts are the charts an executeCode run drew with the sandbox's
	// chart helper, as data ([Chart]); their PNGs are among
	// Sandbox.Files.
	Charts []Chart
	// Duration is how long the call took, sandbox start-up included.
	Duration time.Duration
	// Err is why the tool failed (unknown tool, invalid input, a sandbox
	// machinery failure), or the context's error when the run was
	// cancelled during the call; nil when it ran. A program that fails is
	// not a tool failure: see Sandbox.ExitCode.
	Err error
}

// FinishEvent ends a run.
type FinishEvent struct {
	Steps int
	Usage Usage
	Stop  StopReason
	Model string // the model's ID
	// Answer is the final text (possibly empty, or partial when Stop is
	// StopLength or StopStepLimit).
	Answer string
	// Err is the error Run returns, when Stop is StopError or StopCanceled.
	Err error
}

// ObserverFuncs is an [Observer] made of optional functions; nil ones do
// nothing. The zero value observes nothing.
type ObserverFuncs struct {
	OnStepStarted      func(StepEvent)
	OnAnswerDelta      func(DeltaEvent)
	OnToolCallStarted  func(ToolCallEvent)
	OnToolCallFinished func(ToolResultEvent)
	OnFinished         func(FinishEvent)
}

var _ Observer = ObserverFuncs{}

func (o ObserverFuncs) StepStarted(_ context.Context, e StepEvent)  { notify(o.OnStepStarted, e) }
func (o ObserverFuncs) AnswerDelta(_ context.Context, e DeltaEvent) { notify(o.OnAnswerDelta, e) }
func (o ObserverFuncs) ToolCallStarted(_ context.Context, e ToolCallEvent) {
	notify(o.OnToolCallStarted, e)
}
func (o ObserverFuncs) ToolCallFinished(_ context.Context, e ToolResultEvent) {
	notify(o.OnToolCallFinished, e)
}
func (o ObserverFuncs) Finished(_ context.Context, e FinishEvent) { notify(o.OnFinished, e) }

// notify calls f with e unless f is nil.
func notify[E any](f func(E), e E) {
	if f != nil {
		f(e)
	}
}

// Query is a database query a tool ran on a data source, for whoever shows
// it as a card: the source, the SQL, what came back and where it was kept.
// Text in it is as the database returned it: neutralise it to show it.
type Query struct {
	Source string // the source's name, e.g. "sales"
	Engine string // PostgreSQL, MySQL, MariaDB or SQLite
	SQL    string
	// Columns are the result's columns; Preview its first rows (at most
	// a few dozen), each cell as text, NULL as [QueryNull].
	Columns []QueryColumn
	Preview [][]string
	// Rows is how many rows were read: all of them, or as many as the
	// limits allowed when Truncated says why it stopped.
	Rows      int64
	Truncated string
	// File is the name of the whole result in the run's Workspace (under
	// sandbox.WorkDir for the code), "" when it was not kept; FileSize
	// its size in bytes.
	File     string
	FileSize int64
	// Outcome is "ok", "truncated", "failed" (the database refused the
	// SQL: a syntax error, an unknown table, a write), "timeout" or
	// "unavailable" (the source could not be reached), as counted in the
	// metric sandpiper_queries_total.
	Outcome string
	// Err is what went wrong when Outcome is failed, timeout or
	// unavailable, as the model read it (with no secret in it).
	Err      string
	Duration time.Duration // from sending the SQL to its last row
}

// QueryColumn is a column of a query's result.
type QueryColumn struct {
	Name string
	Type string // the database's type name, e.g. "numeric", "varchar"
}

// QueryNull stands for NULL in [Query.Preview].
const QueryNull = "NULL"
