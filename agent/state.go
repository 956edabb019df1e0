package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Budgets of the state's part of the executeCode result, in bytes of
// JSON, within MaxToolResult.
const (
	resultRestoredBytes = 1 << 10 // the names the run started with
	resultKeptBytes     = 2 << 10 // the names kept for the next run
	resultLostBytes     = 1 << 10 // each list of names not restored, and not kept, with why
)

// stateNotes is what the model is told of the state around one run,
// besides the lists the sandbox returns.
type stateNotes struct {
	off   bool      // the conversation keeps no state
	notes []string  // what became of the state, when anything did
	from  io.Closer // the stream the run's state is read from, to close after it
}

// done closes the stream the run's state was read from.
func (n *stateNotes) done() {
	if n.from != nil {
		n.from.Close()
		n.from = nil
	}
}

func (n *stateNotes) add(s string) { n.notes = append(n.notes, s) }

// stateJSON is the result's "state" field.
type stateJSON struct {
	Restored    []string `json:"restored,omitempty"`
	NotRestored []string `json:"notRestored,omitempty"`
	Kept        []string `json:"kept,omitempty"`
	Dropped     []string `json:"dropped,omitempty"`
	Note        string   `json:"note,omitempty"`
}

// stateOff is the state's note in a conversation that keeps none.
const stateOff = "off in this conversation: no variables are kept between calls, so every call must import and define all it uses"

// loadState makes req start from the state ws keeps. An unusable state
// (too large) is set aside unread, and the run starts without one; a state
// that cannot be read (the store failed) makes the run keep none, so that
// the stored state is not replaced.
func (t *ExecuteCode) loadState(ctx context.Context, ws Workspace, req *sandbox.Request) (n stateNotes) {
	var (
		data []byte
		from io.ReadCloser
		size int64
		err  error
	)
	if ss, ok := ws.(StateStreamer); ok {
		from, size, err = ss.OpenState(ctx, t.limits.StateSize)
	} else {
		data, err = ws.State(ctx, t.limits.StateSize)
	}
	switch {
	case errors.Is(err, ErrNoState):
		n.off = true
		return n
	case errors.Is(err, ErrStateUnusable):
		if aerr := ws.SetStateAside(ctx); aerr != nil {
			t.log.ErrorContext(ctx, "executeCode: setting the state aside failed", "err", aerr)
		}
		n.add(fmt.Sprintf("the variables earlier calls saved were set aside unread (%v); this call started without them", err))
		data, from = nil, nil
	case err != nil:
		t.log.ErrorContext(ctx, "executeCode: reading the state failed", "err", err)
		n.add(fmt.Sprintf("the variables earlier calls saved could not be read (%v; not a problem with the code): this call started without them, and what it defined is not kept", err))
		return n
	}
	req.KeepState, req.State = true, data
	if from != nil {
		req.StateFrom, req.StateLen, n.from = from, size, from
	}
	return n
}

// keepState keeps the state the run saved in ws, and sets aside the one
// it started from when the sandbox could not read it.
func (t *ExecuteCode) keepState(ctx context.Context, ws Workspace, res *sandbox.Result, n stateNotes) stateNotes {
	s := res.State
	if s == nil {
		s = &sandbox.StateResult{Unsaved: "the sandbox said nothing of it"}
		res.State = s
	}
	switch {
	case s.RestoreFailed != "":
		n.add("the variables earlier calls saved were set aside: " + s.RestoreFailed + " (a value in them is not data a restore can build); this call ran without them")
	case s.Unreadable != "":
		n.add("the variables earlier calls saved could not be read (" + s.Unreadable + ") and were set aside; this call started without them")
	}
	if s.RestoreFailed != "" || s.Unreadable != "" {
		if err := ws.SetStateAside(ctx); err != nil {
			t.log.ErrorContext(ctx, "executeCode: setting a state aside failed", "err", err)
		}
	}
	switch {
	case s.Data == nil && (s.Unreadable != "" || s.RestoreFailed != ""):
		n.add("nothing was saved (" + s.Unsaved + "): the next call starts with no variables")
	case s.Data == nil:
		n.add("nothing was saved (" + s.Unsaved + "): the next call starts with the variables this call started with")
	default:
		if err := ws.PutState(ctx, s.Data); err != nil {
			t.log.ErrorContext(ctx, "executeCode: keeping the state failed", "err", err)
			s.Data, s.Kept, s.KeptCount, s.Dropped, s.DroppedCount = nil, nil, 0, nil, 0
			n.add(fmt.Sprintf("the variables could not be kept (%v; not a problem with the code): the next call starts with the variables this call started with", err))
		}
	}
	return n
}

// stateResult is the model's view of the state around res, with every
// budget divided by scale, and whether it cut a list.
func stateResult(res *sandbox.Result, n stateNotes, scale int) (*stateJSON, bool) {
	if n.off {
		return &stateJSON{Note: stateOff}, false
	}
	s := res.State
	if s == nil && len(n.notes) == 0 {
		return nil, false
	}
	j := &stateJSON{Note: strings.Join(n.notes, "; ")}
	if j.Note != "" {
		j.Note, _ = cutLine(j.Note, 4*resultNameChars)
	}
	if s == nil {
		return j, false
	}
	var c1, c2, c3, c4 bool
	j.Restored, c1 = stateList(s.Restored, s.RestoredCount, resultRestoredBytes/scale)
	j.NotRestored, c2 = stateList(s.NotRestored, s.NotRestoredCount, resultLostBytes/scale)
	j.Kept, c3 = stateList(s.Kept, s.KeptCount, resultKeptBytes/scale)
	j.Dropped, c4 = stateList(s.Dropped, s.DroppedCount, resultLostBytes/scale)
	if j.Note == "" && j.Restored == nil && j.NotRestored == nil && j.Kept == nil && j.Dropped == nil {
		return nil, false // nothing to say: no names before or after
	}
	return j, c1 || c2 || c3 || c4
}

// stateList lists names within n bytes of JSON, as nameList does, saying
// how many more there are of count in all; it reports whether it left
// any out.
func stateList(names []string, count, n int) ([]string, bool) {
	out, listed, _ := nameList(names, n)
	if listed >= count {
		return out, false
	}
	more := fmt.Sprintf("… and %s more", commas(count-listed))
	if listed < len(names) {
		out[len(out)-1] = more
		return out, true
	}
	return append(out, more), false // the sandbox's cap, not ours
}

// stateCost is the bytes of JSON the state's field takes.
func stateCost(j *stateJSON) int {
	if j == nil {
		return 0
	}
	b, _ := json.Marshal(j)
	return len(b) + len(`,"state":`)
}
