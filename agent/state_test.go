package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// stateWorkspace is a MemWorkspace whose state calls can fail.
type stateWorkspace struct {
	*MemWorkspace
	off                bool
	readErr, putErr    error
	asides, puts, gets int
}

func (w *stateWorkspace) State(ctx context.Context, max int64) ([]byte, error) {
	w.gets++
	switch {
	case w.off:
		return nil, ErrNoState
	case w.readErr != nil:
		return nil, w.readErr
	}
	return w.MemWorkspace.State(ctx, max)
}

func (w *stateWorkspace) PutState(ctx context.Context, state []byte) error {
	w.puts++
	if w.putErr != nil {
		return w.putErr
	}
	return w.MemWorkspace.PutState(ctx, state)
}

func (w *stateWorkspace) SetStateAside(ctx context.Context) error {
	w.asides++
	return w.MemWorkspace.SetStateAside(ctx)
}

// stateResult decodes the result's state field.
func stateOf(t *testing.T, content string) *stateJSON {
	t.Helper()
	var r codeResult
	if err := json.Unmarshal([]byte(content), &r); err != nil {
		t.Fatalf("result %s: %v", content, err)
	}
	return r.State
}

// TestExecuteCodeState: the tool starts each run from the state the
// workspace keeps and keeps the one it saves; the result tells the model
// what was restored, kept and dropped, and what went wrong.
func TestExecuteCodeState(t *testing.T) {
	var saved *sandbox.StateResult // what the next run returns
	r := &fakeRunner{fn: func(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
		return &sandbox.Result{Stdout: []byte("ok\n"), State: saved}, nil
	}}
	tool := NewExecuteCode(r, ExecuteCodeOptions{KeepState: true, Limits: sandbox.Limits{StateSize: 100}})
	if desc := tool.Spec().Description; !strings.Contains(desc, "kept for the later calls of this conversation") || !strings.Contains(desc, "`state` (the variables restored, kept and dropped)") {
		t.Errorf("description does not say the state is kept:\n%s", desc)
	}
	ws := &stateWorkspace{MemWorkspace: NewMemWorkspace(nil, 0)}
	call := func() *stateJSON {
		t.Helper()
		out, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code":"x = 1"}`))
		if err != nil {
			t.Fatal(err)
		}
		return stateOf(t, out.Content)
	}

	saved = &sandbox.StateResult{Data: []byte("S1"), Kept: []string{"x", "df"}, KeptCount: 2, Dropped: []string{"g (cannot pickle 'generator' object)"}, DroppedCount: 1}
	st := call()
	if req := r.reqs[0]; !req.KeepState || req.State != nil || req.Limits.StateSize != 100 {
		t.Errorf("first request: keep %v, state %q, limit %d", req.KeepState, req.State, req.Limits.StateSize)
	}
	if st == nil || strings.Join(st.Kept, ",") != "x,df" || strings.Join(st.Dropped, ",") != "g (cannot pickle 'generator' object)" || st.Note != "" {
		t.Errorf("state %+v", st)
	}

	saved = &sandbox.StateResult{Data: []byte("S2"), Restored: []string{"x", "df"}, RestoredCount: 2, Kept: []string{"x", "df", "y"}, KeptCount: 1000}
	st = call()
	if got := string(r.reqs[1].State); got != "S1" {
		t.Errorf("second run started from %q, want S1", got)
	}
	if strings.Join(st.Restored, ",") != "x,df" || strings.Join(st.Kept, ",") != "x,df,y,… and 997 more" {
		t.Errorf("state %+v", st)
	}

	// Nothing saved (a timeout): the state stands, and the model is told.
	saved = &sandbox.StateResult{Unsaved: "the run was stopped (timeout)"}
	if st = call(); !strings.Contains(st.Note, "nothing was saved (the run was stopped (timeout)): the next call starts with the variables this call started with") {
		t.Errorf("note %q", st.Note)
	}
	if got, _ := ws.MemWorkspace.State(t.Context(), 100); string(got) != "S2" {
		t.Errorf("state after a run that saved nothing = %q, want S2", got)
	}

	// Unreadable: set aside, and the new state kept.
	saved = &sandbox.StateResult{Data: []byte("S3"), Unreadable: "ValueError: it is not a state file of this version"}
	if st = call(); !strings.Contains(st.Note, "could not be read (ValueError: it is not a state file of this version) and were set aside") {
		t.Errorf("note %q", st.Note)
	}
	if ws.asides != 1 || string(ws.MemWorkspace.aside) != "S2" || string(ws.MemWorkspace.state) != "S3" {
		t.Errorf("asides %d, aside %q, state %q", ws.asides, ws.MemWorkspace.aside, ws.MemWorkspace.state)
	}

	// The restore stopped the run (a value that hangs, dies or overflows
	// while restored): set aside, the model is told, the new state kept.
	saved = &sandbox.StateResult{Data: []byte("S3b"), RestoreFailed: "restoring them took longer than 15 s"}
	if st = call(); !strings.Contains(st.Note, "were set aside: restoring them took longer than 15 s") || !strings.Contains(st.Note, "this call ran without them") {
		t.Errorf("note %q", st.Note)
	}
	if ws.asides != 2 || string(ws.MemWorkspace.aside) != "S3" || string(ws.MemWorkspace.state) != "S3b" {
		t.Errorf("asides %d, aside %q, state %q", ws.asides, ws.MemWorkspace.aside, ws.MemWorkspace.state)
	}

	// Too large: set aside unread; the run starts empty.
	ws.MemWorkspace.PutState(t.Context(), make([]byte, 101))
	saved = &sandbox.StateResult{Data: []byte("S4")}
	st = call()
	if req := r.reqs[len(r.reqs)-1]; !req.KeepState || req.State != nil {
		t.Errorf("after a state too large, the run started from %d bytes", len(req.State))
	}
	if !strings.Contains(st.Note, "set aside unread (the saved state cannot be used: it holds 101 bytes, more than its limit of 100 bytes)") {
		t.Errorf("note %q", st.Note)
	}

	// The store fails: no state this run, and the stored one stays.
	ws.readErr = errors.New("redis: connection refused")
	puts := ws.puts
	st = call()
	if req := r.reqs[len(r.reqs)-1]; req.KeepState || ws.puts != puts {
		t.Errorf("with the store failing: keep %v, %d puts", req.KeepState, ws.puts-puts)
	}
	if !strings.Contains(st.Note, "could not be read (redis: connection refused; not a problem with the code)") {
		t.Errorf("note %q", st.Note)
	}
	ws.readErr = nil
	ws.putErr = errors.New("disk full")
	saved = &sandbox.StateResult{Data: []byte("S5"), Kept: []string{"x"}, KeptCount: 1}
	if st = call(); len(st.Kept) != 0 || !strings.Contains(st.Note, "could not be kept (disk full; not a problem with the code)") {
		t.Errorf("state %+v", st)
	}

	// Switched off.
	ws.putErr, ws.off = nil, true
	if st = call(); st == nil || st.Note != stateOff || r.reqs[len(r.reqs)-1].KeepState {
		t.Errorf("off: state %+v, keep %v", st, r.reqs[len(r.reqs)-1].KeepState)
	}
}

// TestExecuteCodeNoState: without KeepState nothing of the state is
// asked for or shown.
func TestExecuteCodeNoState(t *testing.T) {
	r := &fakeRunner{fn: func(context.Context, sandbox.Request) (*sandbox.Result, error) { return &sandbox.Result{}, nil }}
	tool := NewExecuteCode(r, ExecuteCodeOptions{})
	ws := &stateWorkspace{MemWorkspace: NewMemWorkspace(nil, 0)}
	out, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code":"x = 1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ws.gets != 0 || r.reqs[0].KeepState || strings.Contains(out.Content, `"state"`) {
		t.Errorf("gets %d, keep %v, result %s", ws.gets, r.reqs[0].KeepState, out.Content)
	}
	if desc := tool.Spec().Description; !strings.Contains(desc, "no variables or imports carry over between calls") {
		t.Errorf("description:\n%s", desc)
	}
}

// switchWorkspace is a workspace whose conversation keeps state or not.
type switchWorkspace struct {
	*MemWorkspace
	keeps bool
}

func (w switchWorkspace) KeepsState() bool { return w.keeps }

// TestStateDescribedPerConversation: the model is told one thing about
// variables between calls: the system prompt defers to the tool, and the
// tool says they are kept only where the conversation keeps them.
func TestStateDescribedPerConversation(t *testing.T) {
	if strings.Contains(DefaultInstructions, "see, and import and define everything in each call") {
		t.Error("the system prompt tells the model to define everything in each call, whatever the tool keeps")
	}
	tool := NewExecuteCode(&fakeRunner{}, ExecuteCodeOptions{KeepState: true})
	for _, tc := range []struct {
		name string
		ws   Workspace
		kept bool
	}{
		{"state on", switchWorkspace{NewMemWorkspace(nil, 0), true}, true},
		{"a workspace without the switch", NewMemWorkspace(nil, 0), true},
		{"state off in this conversation", switchWorkspace{NewMemWorkspace(nil, 0), false}, false},
		{"no workspace", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &scriptedModel{turns: []turn{{deltas: []string{"hi"}}}}
			a := &Agent{Model: m, Tools: []Tool{tool}}
			if _, err := a.Run(t.Context(), []Message{{Role: RoleUser, Text: "q"}}, RunOptions{Workspace: tc.ws}); err != nil {
				t.Fatal(err)
			}
			desc := m.requests[0].Tools[0].Description
			kept := strings.Contains(desc, "are kept for the later calls of this conversation")
			none := strings.Contains(desc, "no variables or imports carry over between calls")
			if kept != tc.kept || none == tc.kept {
				t.Errorf("description says kept %v, none %v; want kept %v:\n%s", kept, none, tc.kept, desc)
			}
		})
	}
}

// streamWorkspace gives its state as a stream, and counts the streams
// closed.
type streamWorkspace struct {
	*MemWorkspace
	closed int
}

type countClose struct {
	io.Reader
	w *streamWorkspace
}

func (c countClose) Close() error { c.w.closed++; return nil }

func (w *streamWorkspace) OpenState(ctx context.Context, max int64) (io.ReadCloser, int64, error) {
	data, err := w.MemWorkspace.State(ctx, max)
	if data == nil || err != nil {
		return nil, 0, err
	}
	return countClose{bytes.NewReader(data), w}, int64(len(data)), nil
}

// TestExecuteCodeStateStreamed: a workspace that streams its state gives
// it to the sandbox as a stream (the tool holds no copy), closed after the
// run; a state too large is refused unread as with State.
func TestExecuteCodeStateStreamed(t *testing.T) {
	var got []string
	r := &fakeRunner{fn: func(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
		s := "none"
		if req.StateFrom != nil {
			b, _ := io.ReadAll(req.StateFrom)
			s = fmt.Sprintf("%s/%d", b, req.StateLen)
		}
		got = append(got, fmt.Sprintf("%s %v", s, req.State == nil))
		return &sandbox.Result{State: &sandbox.StateResult{Data: []byte("saved")}}, nil
	}}
	tool := NewExecuteCode(r, ExecuteCodeOptions{KeepState: true, Limits: sandbox.Limits{StateSize: 100}})
	ws := &streamWorkspace{MemWorkspace: NewMemWorkspace(nil, 0)}
	for range 2 {
		if _, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code":"x = 1"}`)); err != nil {
			t.Fatal(err)
		}
	}
	ws.MemWorkspace.PutState(t.Context(), make([]byte, 101))
	out, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code":"x = 1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"none true", "saved/5 true", "none true"}; strings.Join(got, ",") != strings.Join(want, ",") || ws.closed != 1 {
		t.Errorf("runs got %q, %d streams closed; want %q, 1", got, ws.closed, want)
	}
	if st := stateOf(t, out.Content); !strings.Contains(st.Note, "set aside unread") {
		t.Errorf("note %q", st.Note)
	}
}
