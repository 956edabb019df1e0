package bot

import (
	"context"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
)

// Action is a clicked element as handlers get it, for tests.
type Action = action

// HandleAction registers a handler for actionID, as the bot's own
// features do.
func (b *Bot) HandleAction(actionID string, h func(ctx context.Context, a Action)) {
	b.actions.handle(actionID, h)
}

// Ephemeral is [Bot.ephemeral], for tests.
func (b *Bot) Ephemeral(ctx context.Context, channel, user, threadTS, text string) {
	b.ephemeral(ctx, channel, user, threadTS, text)
}

// AnswerInfo is what a footer gets, for tests.
type AnswerInfo = answer.Info

// AddFooter adds a function whose blocks end each answer, as the bot's
// own features do.
func (b *Bot) AddFooter(f func(ctx context.Context, ans AnswerInfo) []slack.Block) {
	b.answers.AddFooter(f)
}

// TickSchedules fires the schedules due at now, as the scheduler would
// at that time, and waits for the fires.
func (b *Bot) TickSchedules(ctx context.Context, now time.Time) {
	b.schedules.Tick(ctx, now)
	b.schedules.Wait()
}
