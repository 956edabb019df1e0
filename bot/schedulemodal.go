package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// The "Repeat…" form: a button (under `repeat` with no times, in an
// answer's thread) opens a modal asking how often, when, in which time
// zone and channel; its submission is checked, and a mistake is answered
// with field errors in the form (the view_submission's ack), which stays
// open.

const (
	repeatActionID   = "sandpiper_repeat"
	repeatCallbackID = "sandpiper_repeat"
	// maxMetadataQuestion bounds the question carried in the modal's
	// private_metadata (3,000 characters in all).
	maxMetadataQuestion = 2000
)

// repeatMeta is the modal's private_metadata.
type repeatMeta struct {
	Channel  string `json:"c"`
	Thread   string `json:"t"`
	Question string `json:"q"`
}

// repeatButton is the reply to a bare "repeat" in an answer's thread:
// what it does and the button that opens the form.
func repeatButton(question, threadTS string) []slack.Block {
	text := "I can answer _" + quote(question) + "_ again at set times, as a new message in this channel that says what changed. Set the times in the form, or say `repeat every monday 9:00` here."
	btn := slack.NewButtonBlockElement(repeatActionID, threadTS, slack.NewTextBlockObject(slack.PlainTextType, "Repeat…", false, false))
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock("sandpiper_repeat", btn),
	}
}

// repeatFooter is the [answer.Footer] of an answer in a channel: the
// "Repeat…" button that opens the form for its question.
func repeatFooter(_ context.Context, ans answer.Info) []slack.Block {
	if strings.HasPrefix(ans.Channel, "D") {
		return nil // a DM: reports go to channels
	}
	btn := slack.NewButtonBlockElement(repeatActionID, ans.ThreadTS, slack.NewTextBlockObject(slack.PlainTextType, "Repeat…", false, false))
	return []slack.Block{slack.NewActionBlock("sandpiper_repeat", btn)}
}

// onRepeatClick opens the form for the thread's last answered question.
func (b *Bot) onRepeatClick(ctx context.Context, a action) {
	thread := cmp.Or(a.Value, a.ThreadTS)
	question, err := b.lastQuestion(ctx, a.Channel, thread, "")
	if err != nil || question == "" {
		b.ephemeral(ctx, a.Channel, a.User, thread, "I found no answered question in this thread to repeat.")
		return
	}
	meta, _ := json.Marshal(repeatMeta{Channel: a.Channel, Thread: thread, Question: render.Truncate(question, maxMetadataQuestion)})
	view := repeatView(question, a.Channel, b.userTZ(ctx, a.User), string(meta))
	if _, err := b.api.OpenViewContext(ctx, a.TriggerID, view); err != nil {
		b.log.Warn("schedules: opening the form failed", "err", slackapi.Explain(err))
		b.ephemeral(ctx, a.Channel, a.User, thread, "I couldn't open the form ("+render.Escape(slackapi.Explain(err).Error())+"). Say `repeat every monday 9:00` in the thread instead.")
	}
}

// repeatView is the form.
func repeatView(question, channel, tz, meta string) slack.ModalViewRequest {
	plain := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	opt := func(value, text string) *slack.OptionBlockObject {
		return slack.NewOptionBlockObject(value, plain(text), nil)
	}
	kinds := []*slack.OptionBlockObject{opt(schedule.Daily, "Every day"), opt(schedule.Weekdays, "Weekdays (Monday to Friday)"),
		opt(schedule.Weekly, "Once a week"), opt(schedule.Monthly, "Once a month"), opt(schedule.Cron, "A cron line")}
	kind := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("How often"), "kind", kinds...).WithInitialOption(kinds[2])
	var days []*slack.OptionBlockObject
	for i := 1; i <= 7; i++ { // Monday first, Sunday (0) last
		d := time.Weekday(i % 7)
		days = append(days, opt(strconv.Itoa(int(d)), d.String()))
	}
	weekday := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Day"), "weekday", days...).WithInitialOption(days[0])
	clock := slack.NewTimePickerBlockElement("clock")
	clock.InitialTime = "09:00"
	day := slack.NewPlainTextInputBlockElement(plain("1"), "day")
	cron := slack.NewPlainTextInputBlockElement(plain("0 9 * * 1"), "cron")
	zone := slack.NewPlainTextInputBlockElement(plain("Europe/Paris"), "tz")
	zone.InitialValue = tz
	where := slack.NewOptionsSelectBlockElement(slack.OptTypeConversations, plain("Channel"), "channel")
	where.InitialConversation = channel
	optional := func(ib *slack.InputBlock) *slack.InputBlock { ib.Optional = true; return ib }
	return slack.ModalViewRequest{
		Type: slack.VTModal, CallbackID: repeatCallbackID, PrivateMetadata: meta,
		Title: plain("Repeat this report"), Submit: plain("Schedule"), Close: plain("Cancel"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "I'll answer _"+quote(question)+"_ again at these times, as a new message in the channel, and say what changed since the time before.", false, false), nil, nil),
			slack.NewInputBlock("kind", plain("How often"), nil, kind),
			slack.NewInputBlock("weekday", plain("Day of the week"), plain("For once a week."), weekday),
			optional(slack.NewInputBlock("day", plain("Day of the month"), plain("For once a month: 1 to 28."), day)),
			slack.NewInputBlock("clock", plain("Time"), nil, clock),
			optional(slack.NewInputBlock("cron", plain("Cron line"), plain("For a cron line: minute hour day month weekday."), cron)),
			slack.NewInputBlock("tz", plain("Time zone"), plain("An IANA name; yours in Slack to begin with."), zone),
			slack.NewInputBlock("channel", plain("Post in"), nil, where),
		}},
	}
}

// viewSubmission is the part of a view_submission payload the form reads.
type viewSubmission struct {
	Payload struct {
		Type string `json:"type"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
		View struct {
			CallbackID      string `json:"callback_id"`
			PrivateMetadata string `json:"private_metadata"`
			State           struct {
				Values map[string]map[string]struct {
					Value                string `json:"value"`
					SelectedTime         string `json:"selected_time"`
					SelectedConversation string `json:"selected_conversation"`
					SelectedOption       *struct {
						Value string `json:"value"`
					} `json:"selected_option"`
				} `json:"values"`
			} `json:"state"`
		} `json:"view"`
	} `json:"payload"`
}

// onViewSubmission answers the form's submission through respond (the
// ack): field errors keep the form open; on success it closes and the
// thread is told.
func (b *Bot) onViewSubmission(frame []byte, respond func(any) error) {
	var env viewSubmission
	if err := json.Unmarshal(frame, &env); err != nil || env.Payload.View.CallbackID != repeatCallbackID {
		respond(nil)
		if err != nil {
			b.log.Warn("unparseable view submission dropped", "err", err)
		}
		return
	}
	v := &env.Payload.View
	var meta repeatMeta
	if err := json.Unmarshal([]byte(v.PrivateMetadata), &meta); err != nil || meta.Question == "" {
		respond(nil)
		b.log.Warn("a view submission without its metadata dropped", "err", err)
		return
	}
	get := func(block string) string {
		st := v.State.Values[block][block]
		switch {
		case st.SelectedOption != nil:
			return st.SelectedOption.Value
		case st.SelectedTime != "":
			return st.SelectedTime
		case st.SelectedConversation != "":
			return st.SelectedConversation
		}
		return strings.TrimSpace(st.Value)
	}
	every := schedule.Every{Kind: get("kind"), Clock: get("clock"), Line: get("cron")}
	if wd, err := strconv.Atoi(get("weekday")); err == nil {
		every.Weekday = time.Weekday(wd)
	}
	if every.Kind == schedule.Monthly {
		d, err := strconv.Atoi(get("day"))
		if err != nil {
			respond(fieldErrors("day", "Write the day of the month, from 1 to 28."))
			return
		}
		every.Day = d
	}
	channel := cmp.Or(get("channel"), meta.Channel)
	user := env.Payload.User.ID
	ctx, cancel := context.WithTimeout(context.Background(), socketRespondTimeout)
	defer cancel()
	sc, err := b.addSchedule(ctx, channel, user, meta.Thread, meta.Question, every, get("tz"))
	if err != nil {
		var fe *schedule.FieldError
		field := "kind"
		if errors.As(err, &fe) {
			field = fe.Field
			if field == "kind" && every.Kind == schedule.Cron {
				field = "cron"
			}
		} else if strings.Contains(err.Error(), "this channel") {
			field = "channel"
		}
		respond(fieldErrors(field, err.Error()))
		return
	}
	respond(nil)
	b.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), slackapi.CallTimeout)
		defer cancel()
		text := ":repeat: <@" + user + "> scheduled _" + quote(sc.Question) + "_ " + schedule.Describe(sc.Spec) + " (" + render.Escape(safetext.Line(sc.TZ)) + ") in <#" + sc.Channel + ">. The first is " + when(sc.Next(b.now()), sc.TZ) + "."
		if _, _, err := b.api.PostMessageContext(ctx, meta.Channel, slack.MsgOptionTS(meta.Thread), slack.MsgOptionText(text, false)); err != nil {
			b.log.Warn("schedules: confirming in the thread failed", "err", slackapi.Explain(err))
		}
	})
}

// socketRespondTimeout bounds the work before a view submission's
// response, within the socket's ViewAckTimeout.
const socketRespondTimeout = 2 * time.Second

// fieldErrors is a view_submission response showing msg under the field.
func fieldErrors(field, msg string) map[string]any {
	// Slack shows plain text there: no code quotes.
	msg = strings.ReplaceAll(msg, "`", "")
	return map[string]any{"response_action": "errors", "errors": map[string]string{field: render.Truncate(msg, 150)}}
}
