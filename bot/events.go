package bot

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// handleEvent takes one event from the socket. It acks envelopes first,
// before any other work, and never blocks on Slack or the model: the work
// goes to the pool.
func (b *Bot) handleEvent(evt socketmode.Event) {
	start := time.Now()
	if evt.Request != nil && evt.Request.EnvelopeID != "" {
		b.ack(evt.Request.EnvelopeID)
		b.metrics.ackSeconds.observe(time.Since(start).Seconds())
	}
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		b.connected.Store(false)
		b.log.Debug("connecting to slack")
	case socketmode.EventTypeConnected:
		b.log.Info("connected to slack")
	case socketmode.EventTypeHello:
		b.connected.Store(true)
		b.metrics.connects.inc()
	case socketmode.EventTypeConnectionError:
		b.connected.Store(false)
		if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
			b.log.Warn("slack connection failed; retrying", "attempt", e.Attempt, "backoff", e.Backoff, "err", e.ErrorObj)
		}
	case socketmode.EventTypeInvalidAuth:
		b.log.Error("slack rejected the app token (invalid_auth)")
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		b.log.Warn("socket mode error", "type", evt.Type, "data", evt.Data)
	case socketmode.EventTypeErrorBadMessage:
		// slack-go could not parse the envelope and did not ack it; ack it
		// ourselves so Slack does not redeliver it forever.
		if e, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
			var env struct {
				EnvelopeID string `json:"envelope_id"`
				Type       string `json:"type"`
			}
			if json.Unmarshal(e.Message, &env) == nil && env.EnvelopeID != "" {
				b.ack(env.EnvelopeID)
			}
			b.log.Warn("unparseable envelope acked and dropped", "type", env.Type, "err", e.Cause)
		}
	case socketmode.EventTypeEventsAPI:
		if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
			b.onEventsAPI(ev)
		}
	case socketmode.EventTypeSlashCommand:
		if cmd, ok := evt.Data.(slack.SlashCommand); ok {
			b.onSlashCommand(cmd)
		}
	}
}

func (b *Bot) ack(envelopeID string) {
	// AckCtx only queues the response for the socket's writer.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.sm.AckCtx(ctx, envelopeID, nil); err != nil {
		b.log.Warn("ack failed", "envelope", envelopeID, "err", err)
	}
}

// incoming is a message event, reduced to what routing needs.
type incoming struct {
	Mention     bool // an app_mention event
	Channel     string
	ChannelType string
	User        string
	BotID       string
	SubType     string
	Text        string
	TS          string
	ThreadTS    string
	Edited      bool
	Files       []slack.File
}

// route says what to do with a message.
type route int

const (
	ignore   route = iota
	answer         // a question for the bot
	command        // help, debug …
	followUp       // a reply in a thread; answered if the bot is in it
)

var reBotCommand = func(text string) bool {
	f := strings.Fields(strings.ToLower(text))
	if len(f) == 0 {
		return true // a bare mention: say hello
	}
	switch strings.Trim(f[0], "!/.:,?") {
	case "help", "debug":
		return len(f) <= 3
	}
	return false
}

// classify routes a message; botUser is the bot's own user id.
func classify(in incoming, botUser string) route {
	if in.BotID != "" || in.User == "" || in.User == botUser || in.Edited {
		return ignore // our own messages, other bots, and edits
	}
	switch in.SubType {
	case "", slack.MsgSubTypeThreadBroadcast, slack.MsgSubTypeFileShare:
	default:
		return ignore // message_changed, message_deleted, joins …
	}
	mentioned := strings.Contains(in.Text, "<@"+botUser+">") || strings.Contains(in.Text, "<@"+botUser+"|")
	text := cleanQuestion(in.Text, botUser)
	kind := answer
	if reBotCommand(text) && (text != "" || len(in.Files) == 0) {
		kind = command // a bare mention with files is a question about them
	}
	switch {
	case in.Mention, in.ChannelType == slackevents.ChannelTypeIM:
		return kind
	case mentioned:
		return kind // the channel copy of an app_mention; deduplicated by ts
	case in.ThreadTS != "" && in.ThreadTS != in.TS:
		if reMention.MatchString(in.Text) {
			return ignore // a reply addressed to someone else
		}
		return followUp
	}
	return ignore
}

func (b *Bot) onEventsAPI(ev slackevents.EventsAPIEvent) {
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" {
		if b.seen.Add("event:"+cb.EventID, true, 0) != nil {
			b.metrics.duplicates.inc()
			b.log.Debug("duplicate event dropped", "event_id", cb.EventID)
			return
		}
	}
	var in incoming
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		in = incoming{Mention: true, Channel: e.Channel, User: e.User, BotID: e.BotID, Text: e.Text, TS: e.TimeStamp, ThreadTS: e.ThreadTimeStamp, Edited: e.Edited != nil, Files: e.Files}
	case *slackevents.MessageEvent:
		in = incoming{Channel: e.Channel, ChannelType: e.ChannelType, User: e.User, BotID: e.BotID, SubType: e.SubType, Text: e.Text, TS: e.TimeStamp, ThreadTS: e.ThreadTimeStamp}
		if e.Message != nil {
			in.Edited = e.Message.Edited != nil
			in.Files = e.Message.Files
		}
	default:
		return
	}
	r := classify(in, b.userID)
	if r == ignore {
		return
	}
	// A mention arrives twice (app_mention and message.channels); and a
	// redelivered event may carry a new event id. Handle a message once.
	if b.seen.Add("msg:"+in.Channel+"/"+in.TS, true, 0) != nil {
		b.metrics.duplicates.inc()
		return
	}
	threadTS := in.ThreadTS
	if threadTS == "" {
		threadTS = in.TS
	}
	m := message{Channel: in.Channel, User: in.User, TS: in.TS, ThreadTS: threadTS, Text: cleanQuestion(in.Text, b.userID), IM: in.ChannelType == slackevents.ChannelTypeIM, Files: refsOf(in.Files)}
	key := threadKey(in.Channel, threadTS)
	var job func(context.Context)
	switch r {
	case command:
		job = func(ctx context.Context) { b.runCommand(ctx, m) }
	case answer:
		job = func(ctx context.Context) { b.answer(ctx, m, false) }
	case followUp:
		job = func(ctx context.Context) { b.answer(ctx, m, true) }
	}
	if !b.pool.submit(key, job) {
		b.metrics.errors.inc("busy")
		go b.notice(context.Background(), m, ":hourglass: I'm answering too many questions right now. Please ask again in a minute.")
	}
}

// message is a human's message the bot acts on.
type message struct {
	Channel  string
	User     string
	TS       string
	ThreadTS string // the thread to answer in
	Text     string // cleaned: no bot mention
	IM       bool
	Files    []fileRef // attached to the message
}
