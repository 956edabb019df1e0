package bot

import (
	"context"
	"errors"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Answerer answers one question, given the thread's earlier turns. It
// reports each executeCode run to progress as it starts and ends, in
// order, from the goroutine that called Answer.
type Answerer interface {
	Answer(ctx context.Context, q Question, progress Progress) (Answer, error)
}

// Question is what the bot asks an [Answerer].
type Question struct {
	Channel  string
	ThreadTS string
	User     string
	Text     string // the question, the bot's mention removed
	History  []Turn // earlier turns of the thread, oldest first
	// Files go in every run's working directory (/mnt/data): the files
	// attached to the question and earlier in the thread, and those the
	// thread's earlier runs wrote. FileNotes say which files were left
	// out, and why, for the model.
	Files     []File
	FileNotes []string
	// FilesSize bounds the files carried from run to run within the
	// answer (0: no bound).
	FilesSize int64
}

// Progress receives an answer's executeCode runs.
type Progress interface {
	// RunStarted is called before the sandbox runs code; id identifies the
	// run in RunFinished.
	RunStarted(ctx context.Context, id, code string)
	// RunFinished is called when the run ended: res is the sandbox's
	// result, or err the sandbox machinery's failure.
	RunFinished(ctx context.Context, id string, res *sandbox.Result, err error, d time.Duration)
}

// CapReporter is implemented by a [Progress] that counts caps firing
// outside a run, such as a file preview cut to its budget while the
// question is put together ([sandbox.CapPreview]). The bot's Progress
// implements it: each cap is counted in sandpiper_caps_total and logged
// with the thread. Caps that fire in a run come in its [sandbox.Result].
type CapReporter interface {
	CapFired(c sandbox.Cap)
}

// Answer is an Answerer's final answer and what it cost.
type Answer struct {
	Text         string // Markdown
	Model        string
	Steps        int
	InputTokens  int64
	OutputTokens int64
	// Incomplete says why the answer is not a complete one (e.g. the
	// step limit was reached); empty when the model finished.
	Incomplete string
}

// ErrStepLimit is returned (wrapped) by an Answerer that gave up after its
// step limit without an answer.
var ErrStepLimit = errors.New("step limit reached")
