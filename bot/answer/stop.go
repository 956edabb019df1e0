package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
)

// stopKey names an answer to stop. An answer is its question's message
// (Channel, QuestionTS) in a thread; a key without QuestionTS names
// whichever answer runs in the thread (Slack's own Stop names only the
// thread). It is what a stop carries from a click or an event to the
// process running the answer, which may be another replica's one day:
// see [Bot.stop].
type stopKey struct {
	Channel    string
	ThreadTS   string
	QuestionTS string
}

// value is the key as a Stop button's value, with the asker, so that any
// process receiving the click can tell who may stop the answer:
// "C0MATH 1700000000.000100 1700000000.000200 U0ALICE". Slack sends the
// value back as the message holds it; users cannot change it.
func (k stopKey) value(asker string) string {
	return strings.Join([]string{k.Channel, k.ThreadTS, k.QuestionTS, asker}, " ")
}

// parseStopValue is the inverse of [stopKey.value].
func parseStopValue(v string) (k stopKey, asker string, ok bool) {
	f := strings.Fields(v)
	if len(f) != 4 || !render.IsSlackID(f[0]) || !render.IsSlackID(f[3]) {
		return stopKey{}, "", false
	}
	return stopKey{Channel: f[0], ThreadTS: f[1], QuestionTS: f[2]}, f[3], true
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
	answers map[stopKey]*runningAnswer // by Channel, ThreadTS, QuestionTS
}

type runningAnswer struct {
	asker  string
	cancel context.CancelCauseFunc
}

// start registers the answer to m and returns its context, which a stop
// cancels with a *[stoppedError], and done, which unregisters it (a stop
// after done is a no-op) and returns who stopped it, or "".
func (r *runningAnswers) start(ctx context.Context, m message) (context.Context, func() (by string)) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := stopKey{Channel: m.Channel, ThreadTS: m.ThreadTS, QuestionTS: m.TS}
	r.mu.Lock()
	if r.answers == nil {
		r.answers = map[stopKey]*runningAnswer{}
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
func (r *runningAnswers) find(k stopKey) (stopKey, *runningAnswer, bool) {
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
	return stopKey{}, nil, false
}

// stop stops the answer k names, on behalf of the user by, and reports
// whether it was running. Its run's context ends at once with a
// *[stoppedError]: the sandbox kills the run, the agent makes no further
// model call, and the answer's goroutine marks the card and tells the
// thread. Both ways to stop (the Stop button and Slack's
// agent_session_stopped) end here, after checking who may; with several
// replicas this is where a stop would be published for the replica
// running the answer (bot/internal/replica's PublishStop carries the same
// key), the subscriber calling stop in its own process.
func (b *Bot) stop(k stopKey, by string) bool {
	_, a, ok := b.running.find(k)
	if !ok {
		return false
	}
	a.cancel(&stoppedError{By: by})
	b.log.Info("answer stopped", "channel", k.Channel, "thread", k.ThreadTS, "question", k.QuestionTS, "by", by)
	return true
}

// mayStop reports whether user may stop an answer asked by asker: the
// asker and admins may.
func (b *Bot) mayStop(ctx context.Context, user, asker string) bool {
	if user == asker {
		return true
	}
	ok, err := b.admins.IsAdmin(ctx, user)
	if err != nil {
		b.log.Warn("could not tell whether a user is an admin; not stopping", "user", user, "err", slackapi.Explain(err))
	}
	return ok
}

// Texts a stop shows.
const (
	stopFinishedText = "This answer has already finished; there is nothing to stop."
	stopDeniedText   = "Only the asker or an admin can stop this answer."
)

// stopNotice is the thread's word on a stopped answer.
func stopNotice(by string) string {
	return fmt.Sprintf(":octagonal_sign: %s stopped this answer. Nothing more was run or asked of the model; ask again when you are ready.", render.UserMention(by))
}

// onStopClick handles a click on a card's Stop button.
func (b *Bot) onStopClick(ctx context.Context, a action) {
	k, asker, ok := parseStopValue(a.Value)
	if !ok {
		b.log.Warn("stop button with an unreadable value", "value", a.Value, "user", a.User)
		b.ephemeral(ctx, a.Channel, a.User, a.ThreadTS, stopFinishedText)
		return
	}
	b.requestStop(ctx, k, asker, a.User, a.ThreadTS)
}

// onAgentSessionStopped handles Slack's own Stop (agent_session_stopped),
// shown on a streaming message: it names the thread only. Slack has
// already halted the stream.
func (b *Bot) onAgentSessionStopped(ctx context.Context, channel, threadTS, user string) {
	k, a, ok := b.running.find(stopKey{Channel: channel, ThreadTS: threadTS})
	if !ok {
		if b.stopElsewhere(ctx, stopKey{Channel: channel, ThreadTS: threadTS}, "", user, threadTS) {
			return
		}
		b.ephemeral(ctx, channel, user, threadTS, stopFinishedText)
		return
	}
	b.requestStop(ctx, k, a.asker, user, threadTS)
}

// requestStop stops the answer k names if user may, and tells user when
// nothing happens and why.
func (b *Bot) requestStop(ctx context.Context, k stopKey, asker, user, threadTS string) {
	if _, _, running := b.running.find(k); !running {
		if b.stopElsewhere(ctx, k, asker, user, threadTS) {
			return
		}
		b.ephemeral(ctx, k.Channel, user, threadTS, stopFinishedText)
		return
	}
	if !b.mayStop(ctx, user, asker) {
		b.ephemeral(ctx, k.Channel, user, threadTS, stopDeniedText)
		return
	}
	if !b.stop(k, user) {
		b.ephemeral(ctx, k.Channel, user, threadTS, stopFinishedText) // it finished meanwhile
	}
}
