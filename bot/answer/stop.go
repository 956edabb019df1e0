package answer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/render"
)

// Key names an answer to stop. An answer is its question's message
// (Channel, QuestionTS) in a thread; a key without QuestionTS names
// whichever answer runs in the thread (Slack's own Stop names only the
// thread). It is what a stop carries from a click or an event to the
// process running the answer: see [Answerer.Stop].
type Key struct {
	Channel    string
	ThreadTS   string
	QuestionTS string
}

// StopValue is the key as a Stop button's value, with the asker, so that
// any process receiving the click can tell who may stop the answer:
// "C0MATH 1700000000.000100 1700000000.000200 U0ALICE". Slack sends the
// value back as the message holds it; users cannot change it.
func (k Key) StopValue(asker string) string {
	return strings.Join([]string{k.Channel, k.ThreadTS, k.QuestionTS, asker}, " ")
}

// ParseStopValue is the inverse of [Key.StopValue].
func ParseStopValue(v string) (k Key, asker string, ok bool) {
	f := strings.Fields(v)
	if len(f) != 4 || !render.IsSlackID(f[0]) || !render.IsSlackID(f[3]) {
		return Key{}, "", false
	}
	return Key{Channel: f[0], ThreadTS: f[1], QuestionTS: f[2]}, f[3], true
}

// stoppedError is the cause of an answer's context ending because
// someone stopped it; [stoppedBy] finds it.
type stoppedError struct{ By string }

func (e *stoppedError) Error() string { return "answer stopped by " + e.By }

// stoppedBy returns who stopped the answer whose context is ctx, or "".
func stoppedBy(ctx context.Context) string {
	if e, ok := errors.AsType[*stoppedError](context.Cause(ctx)); ok {
		return e.By
	}
	if e, ok := errors.AsType[*replica.StopError](context.Cause(ctx)); ok {
		return e.By // stopped through another replica
	}
	return ""
}

// runningAnswers are the answers this process is running, by question,
// so that they can be stopped. The pool runs one answer per thread at a
// time, so a thread names at most one.
type runningAnswers struct {
	mu      sync.Mutex
	answers map[Key]*runningAnswer // by Channel, ThreadTS, QuestionTS
}

type runningAnswer struct {
	asker  string
	cancel context.CancelCauseFunc
}

// start registers the answer to m and returns its context, which a stop
// cancels with a *[stoppedError], and done, which unregisters it (a stop
// after done is a no-op) and returns who stopped it, or "".
func (r *runningAnswers) start(ctx context.Context, m Question) (context.Context, func() (by string)) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := Key{Channel: m.Channel, ThreadTS: m.ThreadTS, QuestionTS: m.TS}
	r.mu.Lock()
	if r.answers == nil {
		r.answers = map[Key]*runningAnswer{}
	}
	r.answers[k] = &runningAnswer{asker: m.User, cancel: cancel}
	r.mu.Unlock()
	return ctx, func() string {
		r.mu.Lock()
		delete(r.answers, k)
		r.mu.Unlock()
		by := stoppedBy(ctx)
		cancel(nil)
		return by
	}
}

// find returns the running answer k names and its full key.
func (r *runningAnswers) find(k Key) (Key, *runningAnswer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k.QuestionTS != "" {
		a, ok := r.answers[k]
		return k, a, ok
	}
	for key, a := range r.answers {
		if key.Channel == k.Channel && key.ThreadTS == k.ThreadTS {
			return key, a, true
		}
	}
	return Key{}, nil, false
}

// Running returns the answer k names, if this process is answering it:
// its full key (k may name only the thread) and who asked.
func (a *Answerer) Running(k Key) (full Key, asker string, ok bool) {
	full, r, ok := a.running.find(k)
	if !ok {
		return Key{}, "", false
	}
	return full, r.asker, true
}

// Stop stops the answer k names, on behalf of the user by, and reports
// whether it was running in this process. Its run's context ends at once
// with a *[stoppedError]: the sandbox kills the run, the agent makes no
// further model call, and the answer's goroutine marks the card and
// tells the thread. Both ways to stop (the Stop button and Slack's
// agent_session_stopped) end here, after the bot has checked who may; an
// answer another replica runs is stopped through Redis instead (the
// context ends with a *[replica.StopError], which [stoppedBy] also reads).
func (a *Answerer) Stop(k Key, by string) bool {
	_, r, ok := a.running.find(k)
	if !ok {
		return false
	}
	r.cancel(&stoppedError{By: by})
	a.log.Info("answer stopped", "channel", k.Channel, "thread", k.ThreadTS, "question", k.QuestionTS, "by", by)
	return true
}

// stopNotice is the thread's word on a stopped answer.
func stopNotice(by string) string {
	return fmt.Sprintf(":octagonal_sign: %s stopped this answer. Nothing more was run or asked of the model; ask again when you are ready.", render.UserMention(by))
}
