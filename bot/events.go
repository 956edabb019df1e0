package bot

import (
	"encoding/json"
	"strings"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/socket"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// handleEvent takes one event from the socket, which has already acked
// it. It never blocks on Slack or the model: the work goes to the pool.
func (b *Bot) handleEvent(evt socket.Event) {
	switch evt.Kind {
	case socket.Connecting:
		// Readiness holds while an old connection still serves.
		b.log.Debug("connecting to slack", "attempt", evt.Attempt)
	case socket.Disconnected:
		b.connected.Store(false)
	case socket.Connected:
		b.log.Info("connected to slack")
	case socket.ConnectionError:
		b.connected.Store(false)
		b.log.Warn("slack connection failed; retrying", "attempt", evt.Attempt, "backoff", evt.Backoff, "err", evt.Err)
	case socket.BadFrame:
		b.log.Warn("unreadable socket frame dropped", "err", evt.Err)
	case socket.Request:
		switch evt.Type {
		case "hello":
			b.connected.Store(true)
			b.metrics.connects.Inc()
		case "events_api":
			b.onEventsAPI(evt.Frame)
		case "slash_commands":
			var env struct {
				Payload slack.SlashCommand `json:"payload"`
			}
			if err := json.Unmarshal(evt.Frame, &env); err != nil {
				b.log.Warn("unparseable slash command acked and dropped", "envelope", evt.EnvelopeID, "err", err)
				return
			}
			b.onSlashCommand(env.Payload)
		case "interactive":
			if evt.Respond != nil {
				b.background.Go(func() { b.onViewSubmission(evt.Frame, evt.Respond) })
				return
			}
			b.onInteractive(evt.Frame)
		default:
			b.log.Debug("socket request ignored", "type", evt.Type, "envelope", evt.EnvelopeID)
		}
	}
}

// eventEnvelope is an events_api frame, decoded in one pass into the
// fields the bot uses. Unlike slackevents.ParseEvent it does not reject an
// event for a field the bot does not read, and costs a fraction of the
// time.
type eventEnvelope struct {
	Payload struct {
		EventID string       `json:"event_id"`
		Event   messageEvent `json:"event"`
	} `json:"payload"`
}

// messageEvent is an app_mention or message event.
type messageEvent struct {
	Type        string       `json:"type"`
	Channel     idString     `json:"channel"` // an object in channel_* events
	ChannelType string       `json:"channel_type"`
	User        idString     `json:"user"` // an object in user_change
	BotID       string       `json:"bot_id"`
	SubType     string       `json:"subtype"`
	Text        string       `json:"text"`
	TS          string       `json:"ts"`
	ThreadTS    string       `json:"thread_ts"`
	Edited      *struct{}    `json:"edited"`
	Files       []slack.File `json:"files"`
	// Message is the changed message of a message_changed event.
	Message *struct {
		Edited *struct{}    `json:"edited"`
		Files  []slack.File `json:"files"`
	} `json:"message"`
}

// idString is a user or channel id; in events the bot does not handle the
// same field can be an object, which decodes as "".
type idString string

func (s *idString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = idString(v)
	}
	return nil
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
	question       // a question for the bot
	command        // help, debug, state …
	followUp       // a reply in a thread; answered if the bot is in it
)

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
	text := thread.CleanQuestion(in.Text, botUser)
	kind := question
	if isCommand(text) && (text != "" || len(in.Files) == 0) {
		kind = command // a bare mention with files is a question about them
	}
	switch {
	case in.Mention, in.ChannelType == "im":
		return kind
	case mentioned:
		return kind // the channel copy of an app_mention; deduplicated by ts
	case in.ThreadTS != "" && in.ThreadTS != in.TS:
		if thread.HasMention(in.Text) {
			return ignore // a reply addressed to someone else
		}
		return followUp
	}
	return ignore
}

func (b *Bot) onEventsAPI(frame []byte) {
	var env eventEnvelope
	if err := json.Unmarshal(frame, &env); err != nil {
		b.log.Warn("unparseable event acked and dropped", "err", err)
		return
	}
	if id := env.Payload.EventID; id != "" {
		if b.seen.Add("event:"+id, true, 0) != nil {
			b.metrics.duplicates.Inc()
			b.log.Debug("duplicate event dropped", "event_id", id)
			return
		}
	}
	e := &env.Payload.Event
	in := incoming{Channel: string(e.Channel), ChannelType: e.ChannelType, User: string(e.User), BotID: e.BotID, SubType: e.SubType, Text: e.Text, TS: e.TS, ThreadTS: e.ThreadTS, Edited: e.Edited != nil, Files: e.Files}
	switch e.Type {
	case "app_mention":
		// slackevents has no subtype for mentions; neither does routing.
		in.Mention, in.SubType = true, ""
	case "message":
		if e.Message != nil {
			in.Edited, in.Files = e.Message.Edited != nil, e.Message.Files
		}
	case "assistant_thread_started", "app_home_opened", "agent_session_stopped":
		b.onAgentEvent(e.Type, frame)
		return
	default:
		return
	}
	r := classify(in, b.userID)
	if r == ignore {
		// Files posted in the bot's thread in a reply to someone else are
		// still the thread's: the next question can use them.
		if len(in.Files) > 0 && in.ThreadTS != "" && in.ThreadTS != in.TS && in.User != "" && in.User != b.userID && in.BotID == "" && !in.Edited {
			b.memory.NoteFiles(in.Channel, in.ThreadTS, thread.Turn{User: in.User, TS: in.TS, Files: thread.RefsOf(in.Files)})
			b.intake.changed(in.Channel, in.ThreadTS)
		}
		return
	}
	// A mention arrives twice (app_mention and message.channels); and a
	// redelivered event may carry a new event id. Handle a message once.
	if b.seen.Add("msg:"+in.Channel+"/"+in.TS, true, 0) != nil {
		b.metrics.duplicates.Inc()
		return
	}
	threadTS := in.ThreadTS
	if threadTS == "" {
		threadTS = in.TS
	}
	m := message{Channel: in.Channel, User: in.User, TS: in.TS, ThreadTS: threadTS, Text: thread.CleanQuestion(in.Text, b.userID), IM: in.ChannelType == "im", Files: thread.RefsOf(in.Files)}
	b.intake.submit(task{Route: r, Message: m, EventID: env.Payload.EventID})
}

// message is a human's message the bot acts on: a question, a follow-up
// or a command, with the fields of a question.
type message = answer.Question
