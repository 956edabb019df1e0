package bot

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// FeedbackStore keeps the clicks on answers' feedback buttons. The bot's
// own writes SANDPIPER_DATA_DIR/feedback.jsonl; a store shared by
// replicas (bot/internal/replica has AddFeedback and FeedbackTally of
// this shape) can replace it.
type FeedbackStore interface {
	// AddFeedback records one click.
	AddFeedback(ctx context.Context, f store.Feedback) error
	// FeedbackTally counts a channel's clicks by rating, over the
	// records the store keeps.
	FeedbackTally(ctx context.Context, channel string) (map[string]int64, error)
}

// The ratings a click records, and the metric's labels.
const (
	ratingPositive = "positive"
	ratingNegative = "negative"
)

var feedbackRatings = []string{ratingPositive, ratingNegative}

// feedbackActionID is the action_id of the feedback buttons.
const feedbackActionID = "sandpiper_feedback"

// feedbackFooter is the [answer.Footer] ending each answer with
// Slack's feedback buttons. Each button's value is its rating and the
// answer's model ("positive:openai/gpt-5"), so that a click on any answer,
// however old, is recorded whole without the bot remembering it.
func feedbackFooter(_ context.Context, ans answer.Info) []slack.Block {
	model := render.Truncate(safetext.Line(ans.Model), feedbackModelChars)
	button := func(text, label, rating string) *slack.FeedbackButton {
		value := rating
		if model != "" {
			value += ":" + model
		}
		return &slack.FeedbackButton{
			Text:               slack.NewTextBlockObject(slack.PlainTextType, text, false, false),
			Value:              value,
			AccessibilityLabel: label,
		}
	}
	el := slack.NewFeedbackButtonsBlockElement(feedbackActionID,
		button("Helpful", "Mark this answer as helpful", ratingPositive),
		button("Not helpful", "Mark this answer as not helpful", ratingNegative))
	return []slack.Block{slack.NewContextActionsBlock("sandpiper_feedback", el)}
}

// onFeedback records a click on an answer's feedback buttons and thanks
// the clicker, in the thread, alone. A click on an old answer counts too:
// everything recorded comes with the click.
func (b *Bot) onFeedback(ctx context.Context, a action) {
	rating, model, _ := strings.Cut(a.Value, ":")
	if rating != ratingPositive && rating != ratingNegative {
		b.log.Warn("feedback click with an unknown value ignored", "value", render.Truncate(safetext.Line(a.Value), 100), "user", a.User)
		b.ephemeral(ctx, a.Channel, a.User, cmp.Or(a.ThreadTS, a.MessageTS), "Sorry, I couldn't read that click, so it was not recorded.")
		return
	}
	f := store.Feedback{
		Channel: a.Channel, ThreadTS: cmp.Or(a.ThreadTS, a.MessageTS), MessageTS: a.MessageTS,
		User: a.User, Rating: rating, Model: render.Truncate(safetext.Line(model), feedbackModelChars), Time: b.now().UTC(),
	}
	b.metrics.feedback.WithLabelValues(rating).Inc()
	thanks := "Thanks for the feedback! :+1:"
	if rating == ratingNegative {
		thanks = "Thanks for the feedback. If you tell me in this thread what was wrong or missing, I'll try again."
	}
	if err := b.feedback.AddFeedback(ctx, f); err != nil {
		b.log.Error("recording feedback failed", "channel", f.Channel, "user", f.User, "rating", rating, "err", err)
		b.metrics.errors.WithLabelValues("feedback").Inc()
		thanks = "Thanks for the feedback. (I couldn't save it, though: the operator has been told in the log.)"
	}
	b.log.Info("feedback", "channel", f.Channel, "thread", f.ThreadTS, "user", f.User, "rating", rating)
	b.ephemeral(ctx, a.Channel, a.User, f.ThreadTS, thanks)
}

// feedbackCommand answers "feedback" (/sandpiper feedback) for user in
// channel: the channel's tally, for admins.
func (b *Bot) feedbackCommand(ctx context.Context, channel, user string) string {
	ok, err := b.admins.IsAdmin(ctx, user)
	if err != nil {
		b.log.Warn("admin check failed", "user", user, "err", err)
		return ":warning: I couldn't check whether you are an admin (Slack said: " + render.Escape(slackapi.Explain(err).Error()) + ")."
	}
	if !ok {
		return "Sorry, only workspace admins and the admins listed in sandpiper's configuration can read the feedback on my answers."
	}
	t, err := b.feedback.FeedbackTally(ctx, channel)
	if err != nil {
		b.log.Error("reading the feedback tally failed", "channel", channel, "err", err)
		return ":warning: I couldn't read the feedback records. The operator should check the log."
	}
	return tallyText(t)
}

// tallyText says what a channel's tally holds.
func tallyText(t map[string]int64) string {
	pos, neg := t[ratingPositive], t[ratingNegative]
	if pos+neg == 0 {
		return "No feedback on my answers in this channel yet (among the clicks kept)."
	}
	clicks := func(n int64) string {
		if n == 1 {
			return "1 click"
		}
		return render.Thousands(n) + " clicks"
	}
	return fmt.Sprintf("Feedback on my answers in this channel: :+1: helpful %s, :-1: not helpful %s (%d%% helpful), among the clicks kept.",
		clicks(pos), clicks(neg), (pos*100+(pos+neg)/2)/(pos+neg))
}
