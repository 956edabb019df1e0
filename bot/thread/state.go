package thread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// A thread's Python state (the names its runs leave, see
// [sandbox.Request.KeepState]) is bytes only a sandbox reads. Alone, the
// bot keeps it in the thread's workspace directory, as stateFile beside
// the index, so it goes with the workspace and survives a restart; with
// replicas, in a [StateStore] every replica reads (Redis).

// The state's files in a thread's directory: the state, and the last one
// set aside.
const (
	stateFile  = "state.pickle"
	stateAside = "state-aside.pickle"
)

// StateStore keeps threads' states where every replica can read them.
// thread is [Key]'s.
type StateStore interface {
	// State returns the thread's state, nil when it has none, or an
	// error wrapping agent.ErrStateUnusable when it holds more than max
	// bytes or is incomplete.
	State(ctx context.Context, thread string, max int64) ([]byte, error)
	// PutState replaces the thread's state.
	PutState(ctx context.Context, thread string, state []byte) error
	// SetStateAside moves the thread's state aside, replacing the one
	// set aside before.
	SetStateAside(ctx context.Context, thread string) error
}

// KeepNoState makes the answer's runs keep no state: State returns
// agent.ErrNoState (the channel switched state off).
func (t *Workspace) KeepNoState() { t.noState = true }

// KeepsState reports whether the answer's runs keep state
// ([agent.StateSwitch]): the model is told what holds.
func (t *Workspace) KeepsState() bool { return !t.noState }

// State returns the thread's state.
func (t *Workspace) State(ctx context.Context, max int64) ([]byte, error) {
	if t.noState {
		return nil, agent.ErrNoState
	}
	if s := t.ws.States; s != nil {
		return s.State(ctx, Key(t.channel, t.threadTS), max)
	}
	if t.root == nil && !t.ws.Exists(t.channel, t.threadTS) {
		return nil, nil
	}
	if err := t.Open(); err != nil {
		return nil, err
	}
	fi, err := t.root.Stat(stateFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("workspace: %w", err)
	case fi.Size() > max:
		return nil, fmt.Errorf("%w: it holds %s, more than its limit of %s", agent.ErrStateUnusable, sandbox.FormatSize(fi.Size()), sandbox.FormatSize(max))
	}
	data, err := t.root.ReadFile(stateFile)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if int64(len(data)) > max { // it grew since
		return nil, fmt.Errorf("%w: it holds more than its limit of %s", agent.ErrStateUnusable, sandbox.FormatSize(max))
	}
	return data, nil
}

// OpenState returns the thread's state as a stream
// ([agent.StateStreamer]): the state file itself, alone, so that a run
// does not hold the state in the bot's memory; with a [StateStore], the
// state it returns.
func (t *Workspace) OpenState(ctx context.Context, max int64) (io.ReadCloser, int64, error) {
	if t.noState || t.ws.States != nil {
		data, err := t.State(ctx, max)
		if data == nil || err != nil {
			return nil, 0, err
		}
		return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
	if t.root == nil && !t.ws.Exists(t.channel, t.threadTS) {
		return nil, 0, nil
	}
	if err := t.Open(); err != nil {
		return nil, 0, err
	}
	f, err := t.root.Open(stateFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("workspace: %w", err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, 0, fmt.Errorf("workspace: %w", err)
	case fi.Size() > max:
		f.Close()
		return nil, 0, fmt.Errorf("%w: it holds %s, more than its limit of %s", agent.ErrStateUnusable, sandbox.FormatSize(fi.Size()), sandbox.FormatSize(max))
	case fi.Size() == 0:
		f.Close()
		return nil, 0, nil
	}
	// The file is replaced by rename, never written in place: the open
	// one keeps its size.
	return f, fi.Size(), nil
}

// PutState replaces the thread's state, atomically.
func (t *Workspace) PutState(ctx context.Context, state []byte) error {
	if t.noState {
		return agent.ErrNoState
	}
	if s := t.ws.States; s != nil {
		return s.PutState(ctx, Key(t.channel, t.threadTS), state)
	}
	if err := t.Open(); err != nil {
		return err
	}
	tmp := stateFile + ".tmp"
	if err := t.root.WriteFile(tmp, state, 0o640); err != nil {
		t.root.Remove(tmp)
		return fmt.Errorf("workspace: %w", err)
	}
	if err := t.root.Rename(tmp, stateFile); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// SetStateAside renames the thread's state, replacing the one set aside
// before: it is kept, with the thread, for whoever wants to look at it.
func (t *Workspace) SetStateAside(ctx context.Context) error {
	if s := t.ws.States; s != nil {
		return s.SetStateAside(ctx, Key(t.channel, t.threadTS))
	}
	if t.root == nil && !t.ws.Exists(t.channel, t.threadTS) {
		return nil
	}
	if err := t.Open(); err != nil {
		return err
	}
	if err := t.root.Rename(stateFile, stateAside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
