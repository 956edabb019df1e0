package bot

import (
	"context"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
)

// The Stop button on running tool cards, and Slack's own Stop in the agent
// view, both come here: the bot checks who may stop the answer and stops
// it, in this process ([answer.Answerer.Stop]) or through the replica
// running it ([Bot.stopElsewhere]).

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

// onStopClick handles a click on a card's Stop button.
func (b *Bot) onStopClick(ctx context.Context, a action) {
	k, asker, ok := answer.ParseStopValue(a.Value)
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
	k, asker, ok := b.answers.Running(answer.Key{Channel: channel, ThreadTS: threadTS})
	if !ok {
		if b.stopElsewhere(ctx, answer.Key{Channel: channel, ThreadTS: threadTS}, "", user, threadTS) {
			return
		}
		b.ephemeral(ctx, channel, user, threadTS, stopFinishedText)
		return
	}
	b.requestStop(ctx, k, asker, user, threadTS)
}

// requestStop stops the answer k names if user may, and tells user when
// nothing happens and why.
func (b *Bot) requestStop(ctx context.Context, k answer.Key, asker, user, threadTS string) {
	if _, _, running := b.answers.Running(k); !running {
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
	if !b.answers.Stop(k, user) {
		b.ephemeral(ctx, k.Channel, user, threadTS, stopFinishedText) // it finished meanwhile
	}
}
