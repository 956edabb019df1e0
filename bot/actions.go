package bot

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// action is one element of a block_actions payload, with where it was
// clicked and by whom: what a handler needs to act and to reply.
type action struct {
	ActionID string
	BlockID  string
	Type     string // "button", "feedback_buttons" …
	Value    string // the clicked element's value
	User     string // who clicked
	Team     string // the clicker's workspace
	Channel  string
	// MessageTS is the message holding the element; ThreadTS its thread
	// ("" when the message is not in a thread).
	MessageTS   string
	ThreadTS    string
	ResponseURL string
	TriggerID   string
}

// actionHandler handles one action. It runs off the event loop, with a
// context bounded by slackCallTimeout; it may call Slack, and reply to the
// clicker with [Bot.ephemeral].
type actionHandler func(ctx context.Context, a action)

// actionRegistry maps action_ids to their handlers. Handlers are
// registered when the bot is built; lookups happen on the event loop.
type actionRegistry struct {
	mu       sync.RWMutex
	handlers map[string]actionHandler
}

func newActionRegistry() *actionRegistry {
	return &actionRegistry{handlers: map[string]actionHandler{}}
}

// handle registers h for actionID, replacing any handler before it.
func (r *actionRegistry) handle(actionID string, h actionHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[actionID] = h
}

func (r *actionRegistry) lookup(actionID string) (actionHandler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[actionID]
	return h, ok
}

// interactiveEnvelope is an interactive frame, decoded into the fields
// the bot uses (slack.InteractionCallback rejects payloads with fields it
// decodes strictly).
type interactiveEnvelope struct {
	Payload struct {
		Type string `json:"type"`
		User struct {
			ID     string `json:"id"`
			TeamID string `json:"team_id"`
		} `json:"user"`
		Team struct {
			ID string `json:"id"`
		} `json:"team"`
		Channel struct {
			ID string `json:"id"`
		} `json:"channel"`
		Container struct {
			Type      string `json:"type"`
			MessageTS string `json:"message_ts"`
			ThreadTS  string `json:"thread_ts"`
			ChannelID string `json:"channel_id"`
		} `json:"container"`
		Message struct {
			TS       string `json:"ts"`
			ThreadTS string `json:"thread_ts"`
		} `json:"message"`
		ResponseURL string `json:"response_url"`
		TriggerID   string `json:"trigger_id"`
		Actions     []struct {
			ActionID string `json:"action_id"`
			BlockID  string `json:"block_id"`
			Type     string `json:"type"`
			Value    string `json:"value"`
		} `json:"actions"`
	} `json:"payload"`
}

// onInteractive routes an interactive frame (already acked): each action
// of a block_actions payload goes to the handler registered for its
// action_id, in a goroutine of its own, so that a click is handled at
// once even while every worker is busy with answers.
func (b *Bot) onInteractive(frame []byte) {
	var env interactiveEnvelope
	if err := json.Unmarshal(frame, &env); err != nil {
		b.log.Warn("unparseable interactive payload acked and dropped", "err", err)
		return
	}
	p := &env.Payload
	if p.Type != string(slack.InteractionTypeBlockActions) {
		b.log.Debug("interaction ignored", "type", p.Type)
		return
	}
	for _, a := range p.Actions {
		h, ok := b.actions.lookup(a.ActionID)
		if !ok {
			b.log.Warn("no handler for action", "action_id", a.ActionID, "user", p.User.ID)
			continue
		}
		act := action{
			ActionID: a.ActionID, BlockID: a.BlockID, Type: a.Type, Value: a.Value,
			User: p.User.ID, Team: p.Team.ID, Channel: p.Container.ChannelID,
			MessageTS: p.Container.MessageTS, ThreadTS: p.Container.ThreadTS,
			ResponseURL: p.ResponseURL, TriggerID: p.TriggerID,
		}
		if act.Team == "" {
			act.Team = p.User.TeamID
		}
		if act.Channel == "" {
			act.Channel = p.Channel.ID
		}
		if act.MessageTS == "" {
			act.MessageTS = p.Message.TS
		}
		if act.ThreadTS == "" {
			act.ThreadTS = p.Message.ThreadTS
		}
		b.background.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), slackapi.CallTimeout)
			defer cancel()
			h(ctx, act)
		})
	}
}

// ephemeral shows text (mrkdwn) to user alone, in channel and, when
// threadTS is set, in that thread. The text is neutralised
// ([safetext.Text]) as a last guard.
func (b *Bot) ephemeral(ctx context.Context, channel, user, threadTS, text string) {
	text = safetext.Text(text)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if _, err := b.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		b.log.Warn("ephemeral reply failed", "channel", channel, "user", user, "err", slackapi.Explain(err))
	}
}
