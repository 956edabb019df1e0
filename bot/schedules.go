package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Scheduled reports (package schedule): "repeat every monday 9:00" in an
// answer's thread sets one up for the thread's last question; the
// scheduler of every replica fires it (once across them) through
// scheduleFirer, which posts a new message in the channel and answers the
// question afresh in its thread, ending with what changed since the last
// time; "schedules" lists a channel's and pauses, resumes or deletes one.

// maxQuestionChars bounds a scheduled question as it is quoted in
// messages.
const maxQuestionChars = 300

// repeatCommand sets up a schedule for the thread's last question.
func (b *Bot) repeatCommand(ctx context.Context, c commandCall) (string, bool) {
	if b.schedules == nil {
		return "Scheduled reports are turned off here (the operator set `SANDPIPER_SCHEDULES=off`).", true
	}
	if c.threadTS == "" || c.threadTS == c.ts {
		return "Use `repeat` in the thread of an answer, e.g. `@sandpiper repeat every monday 9:00`: I answer that thread's question again at those times, as a new message in this channel, and say what changed.", true
	}
	question, err := b.lastQuestion(ctx, c.channel, c.threadTS, c.ts)
	if err != nil {
		return ":warning: I couldn't read this thread (" + render.Escape(slackapi.Explain(err).Error()) + "), so nothing was set up.", true
	}
	if question == "" {
		return "I found no answered question in this thread to repeat. Ask it first, then `repeat every monday 9:00` here.", true
	}
	if len(c.args) == 0 {
		// The form, through a button (a mention brings no trigger_id).
		_, err := b.api.PostEphemeralContext(ctx, c.channel, c.user, slack.MsgOptionTS(c.threadTS),
			slack.MsgOptionText("Repeat this report", false), slack.MsgOptionBlocks(repeatButton(question, c.threadTS)...))
		if err == nil {
			return "", true
		}
		b.log.Warn("schedules: posting the form's button failed", "err", slackapi.Explain(err))
		return "Say when, e.g. `repeat every monday 9:00`, `repeat weekdays 8:30` or `repeat cron 0 9 * * 1`.", true
	}
	every, err := schedule.ParseWhen(c.args)
	if err != nil {
		return err.Error(), true
	}
	tz := b.userTZ(ctx, c.user)
	sc, err := b.addSchedule(ctx, c.channel, c.user, c.threadTS, question, every, tz)
	if err != nil {
		return err.Error(), true
	}
	return fmt.Sprintf(":repeat: I'll answer _%s_ again %s (%s) as a new message in this channel, and say what changed since the time before. The first is %s. `/sandpiper schedules` lists this channel's.",
		quote(sc.Question), schedule.Describe(sc.Spec), sc.TZ, when(sc.Next(b.now()), sc.TZ)), false
}

// lastQuestion returns the last question the bot answered in a thread,
// before the message before ("" for all), or "" when there is none.
func (b *Bot) lastQuestion(ctx context.Context, channel, threadTS, before string) (string, error) {
	turns, _, _, err := b.memory.History(ctx, channel, threadTS, before, false)
	if err != nil {
		return "", err
	}
	for i := len(turns) - 1; i >= 0; i-- {
		if t := turns[i]; !t.Ignored && strings.TrimSpace(t.Question) != "" && t.Answer != "" {
			return t.Question, nil
		}
	}
	return "", nil
}

// addSchedule checks and stores a new schedule. Its errors are for the
// user (a *schedule.FieldError names the form's field).
func (b *Bot) addSchedule(ctx context.Context, channel, owner, threadTS, question string, every schedule.Every, tz string) (*schedule.Schedule, error) {
	spec, err := every.Spec()
	if err != nil {
		return nil, err
	}
	plan, err := schedule.NewPlan(spec, tz)
	if err != nil {
		return nil, err
	}
	if err := plan.Validate(b.now(), b.cfg.Schedules.WithDefaults().MinInterval); err != nil {
		var fe *schedule.FieldError
		if errors.As(err, &fe) && every.Kind != schedule.Cron {
			fe.Field = "kind"
		}
		return nil, err
	}
	list, err := b.scheduleStore.List(ctx)
	if err != nil {
		b.log.Error("schedules: reading", "err", err)
		return nil, errors.New(":warning: I couldn't read the schedules, so nothing was set up. The operator should check the data directory or Redis.")
	}
	if err := schedule.Allow(list, channel, owner, b.cfg.Schedules); err != nil {
		return nil, errors.New("Sorry, " + err.Error() + ".")
	}
	sc := schedule.Schedule{ID: schedule.NewID(), Channel: channel, Owner: owner, Thread: threadTS, Question: question, Spec: spec, TZ: plan.Loc.String(), Created: b.now()}
	if err := b.scheduleStore.Put(ctx, sc); err != nil {
		b.log.Error("schedules: saving", "err", err)
		return nil, errors.New(":warning: I couldn't save the schedule, so nothing was set up. The operator should check the data directory or Redis.")
	}
	b.log.Info("schedule added", "schedule", sc.ID, "channel", channel, "owner", owner, "spec", spec, "tz", sc.TZ)
	b.schedules.Kick()
	return &sc, nil
}

// userTZ returns a user's time zone from Slack, or UTC.
func (b *Bot) userTZ(ctx context.Context, user string) string {
	u, err := b.api.GetUserInfoContext(ctx, user)
	if err != nil || u.TZ == "" {
		return "UTC"
	}
	if _, err := time.LoadLocation(u.TZ); err != nil {
		return "UTC"
	}
	return u.TZ
}

// schedulesCommand lists a channel's schedules, or pauses, resumes or
// deletes one: "schedules [pause|resume|delete ID]".
func (b *Bot) schedulesCommand(ctx context.Context, c commandCall) (string, bool) {
	if b.schedules == nil {
		return "Scheduled reports are turned off here (the operator set `SANDPIPER_SCHEDULES=off`).", true
	}
	if len(c.args) >= 2 {
		return b.changeSchedule(ctx, c, strings.ToLower(c.args[0]), c.args[1]), true
	}
	if len(c.args) == 1 {
		return "Usage: `schedules` lists this channel's; `schedules pause ID`, `schedules resume ID` or `schedules delete ID` changes one (its owner or an admin).", true
	}
	text, blocks, err := b.scheduleList(ctx, c.channel)
	if err != nil {
		b.log.Error("schedules: reading", "err", err)
		return ":warning: I couldn't read the schedules. The operator should check the data directory or Redis.", true
	}
	if blocks == nil {
		return text, true
	}
	// The list with its buttons, to the user alone.
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}
	var perr error
	if c.responseURL != "" {
		_, _, perr = b.api.PostMessageContext(ctx, c.channel, append(opts, slack.MsgOptionResponseURL(c.responseURL, slack.ResponseTypeEphemeral))...)
	} else {
		_, perr = b.api.PostEphemeralContext(ctx, c.channel, c.user, append(opts, slack.MsgOptionTS(c.threadTS))...)
	}
	if perr != nil {
		b.log.Warn("schedules: posting the list failed; sending it as text", "err", slackapi.Explain(perr))
		return text, true
	}
	return "", true
}

// The list's buttons: Pause or Resume, and Delete (two action_ids: they
// share a block); their value is "verb:ID".
const (
	scheduleToggleID = "sandpiper_schedule_toggle"
	scheduleDeleteID = "sandpiper_schedule_delete"
)

// scheduleList returns a channel's schedules as text and as blocks with a
// Pause (or Resume) and a Delete button each; blocks is nil when the
// channel has none.
func (b *Bot) scheduleList(ctx context.Context, channel string) (string, []slack.Block, error) {
	list, err := b.scheduleStore.List(ctx)
	if err != nil {
		return "", nil, err
	}
	const head = "*Scheduled reports in this channel*"
	const foot = "Their owner or an admin can pause, resume or delete one (or `/sandpiper schedules pause ID`, `resume ID`, `delete ID`)."
	plain := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	lines := []string{head}
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, head, false, false), nil, nil)}
	for _, sc := range list {
		if sc.Channel != channel {
			continue
		}
		line := fmt.Sprintf("• `%s` _%s_ %s (%s), set up by <@%s>", sc.ID, quote(sc.Question), schedule.Describe(sc.Spec), sc.TZ, sc.Owner)
		toggle := slack.NewButtonBlockElement(scheduleToggleID, "pause:"+sc.ID, plain("Pause"))
		switch {
		case sc.Paused != "":
			line += " · :double_vertical_bar: paused: " + render.Escape(safetext.Line(sc.Paused))
			toggle = slack.NewButtonBlockElement(scheduleToggleID, "resume:"+sc.ID, plain("Resume"))
		default:
			line += " · next " + when(sc.Next(b.now()), sc.TZ)
		}
		if l := sc.Last; l != nil {
			switch {
			case l.Skipped && l.Missed > 0:
				line += " · last time skipped (I was not running)"
			case l.Err != "":
				line += " · last time failed: " + render.Escape(render.Truncate(safetext.Line(l.Err), 200))
			}
		}
		del := slack.NewButtonBlockElement(scheduleDeleteID, "delete:"+sc.ID, plain("Delete")).WithStyle(slack.StyleDanger)
		del.Confirm = slack.NewConfirmationBlockObject(plain("Delete this report?"), slack.NewTextBlockObject(slack.PlainTextType, "It will not be posted again.", false, false), plain("Delete"), plain("Keep it"))
		lines = append(lines, line)
		blocks = append(blocks,
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, line, false, false), nil, nil),
			slack.NewActionBlock("sandpiper_schedule_"+sc.ID, toggle, del))
	}
	if len(lines) == 1 {
		return "This channel has no scheduled reports. Under an answer, click Repeat… or say `@sandpiper repeat every monday 9:00` in its thread to have its question answered again at those times.", nil, nil
	}
	lines = append(lines, "", foot)
	blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, foot, false, false)))
	return strings.Join(lines, "\n"), blocks, nil
}

// onScheduleClick pauses, resumes or deletes the schedule of a list's
// button, for its owner or an admin, and says what became of it.
func (b *Bot) onScheduleClick(ctx context.Context, a action) {
	verb, id, _ := strings.Cut(a.Value, ":")
	reply := b.changeSchedule(ctx, commandCall{channel: a.Channel, user: a.User}, verb, id)
	if a.ResponseURL != "" {
		// Replace the list the click came from with the news.
		if _, _, err := b.api.PostMessageContext(ctx, a.Channel, slack.MsgOptionText(reply, false),
			slack.MsgOptionResponseURL(a.ResponseURL, slack.ResponseTypeEphemeral), slack.MsgOptionReplaceOriginal(a.ResponseURL)); err == nil {
			return
		}
	}
	b.ephemeral(ctx, a.Channel, a.User, a.ThreadTS, reply)
}

// changeSchedule pauses, resumes or deletes the schedule id for c.user,
// its owner or an admin.
func (b *Bot) changeSchedule(ctx context.Context, c commandCall, verb, id string) string {
	if verb != "pause" && verb != "resume" && verb != "delete" {
		return "Usage: `schedules pause ID`, `schedules resume ID` or `schedules delete ID`."
	}
	list, err := b.scheduleStore.List(ctx)
	if err != nil {
		return ":warning: I couldn't read the schedules. The operator should check the data directory or Redis."
	}
	var sc *schedule.Schedule
	for i := range list {
		if list[i].ID == id && list[i].Channel == c.channel {
			sc = &list[i]
		}
	}
	if sc == nil {
		return fmt.Sprintf("This channel has no schedule `%s`; `/sandpiper schedules` lists its schedules.", render.Escape(safetext.Line(id)))
	}
	if sc.Owner != c.user {
		ok, err := b.admins.IsAdmin(ctx, c.user)
		if err != nil {
			return ":warning: I couldn't check whether you are an admin (Slack said: " + render.Escape(slackapi.Explain(err).Error()) + "). Nothing was changed."
		}
		if !ok {
			return fmt.Sprintf("Sorry, only <@%s>, who set it up, or an admin can change this schedule. Nothing was changed.", sc.Owner)
		}
	}
	_, err = b.scheduleStore.Update(ctx, id, func(s *schedule.Schedule) *schedule.Schedule {
		switch verb {
		case "delete":
			return nil
		case "pause":
			s.Paused, s.PausedBy = "paused by <@"+c.user+">", c.user
		case "resume":
			s.Paused, s.PausedBy = "", ""
			// Resume from now: the times missed while paused are not
			// made up.
			s.Last = &schedule.Fire{At: b.now(), Skipped: true}
		}
		return s
	})
	if errors.Is(err, schedule.ErrNotFound) {
		return fmt.Sprintf("The schedule `%s` is gone already.", id)
	}
	if err != nil {
		b.log.Error("schedules: saving", "err", err)
		return ":warning: I couldn't save the change, so nothing was changed. The operator should check the data directory or Redis."
	}
	b.log.Info("schedule changed", "schedule", id, "change", verb, "by", c.user)
	b.schedules.Kick()
	switch verb {
	case "delete":
		return fmt.Sprintf("Deleted the schedule `%s` (_%s_).", id, quote(sc.Question))
	case "pause":
		return fmt.Sprintf("Paused the schedule `%s`; `/sandpiper schedules resume %s` starts it again.", id, id)
	}
	return fmt.Sprintf("Resumed the schedule `%s`; the next is %s.", id, when(sc.Next(b.now()), sc.TZ))
}

// quote is a question as a schedule's messages quote it: one line,
// bounded, escaped.
func quote(q string) string {
	return render.Escape(render.Truncate(strings.Join(strings.Fields(safetext.Line(q)), " "), maxQuestionChars))
}

// when writes a time in the schedule's zone: "Mon 14 Dec at 9:00".
func when(t time.Time, tz string) string {
	if t.IsZero() {
		return "never"
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	}
	return fmt.Sprintf("%s at %d:%02d", t.Format("Mon 2 Jan"), t.Hour(), t.Minute())
}

// scheduleFirer answers scheduled questions for the scheduler.
type scheduleFirer struct{ b *Bot }

// Fire posts the report's first message in the channel and answers the
// question in its thread, comparing its figures with the last good fire.
func (f scheduleFirer) Fire(ctx context.Context, sc schedule.Schedule, at time.Time) (schedule.Fire, error) {
	b := f.b
	if err := f.check(ctx, sc); err != nil {
		return schedule.Fire{}, err
	}
	head := fmt.Sprintf(":repeat: *Scheduled report* · %s (%s) · set up by <@%s>\n>%s", schedule.Describe(sc.Spec), sc.TZ, sc.Owner, quote(sc.Question))
	_, ts, err := b.api.PostMessageContext(ctx, sc.Channel, slack.MsgOptionText(head, false))
	if err != nil {
		if pe := pauseFor(err); pe != nil {
			return schedule.Fire{}, pe
		}
		return schedule.Fire{}, fmt.Errorf("posting the report: %w", slackapi.Explain(err))
	}
	var (
		info answer.Info
		ferr = errors.New("the answer ended without a word")
	)
	b.answers.Answer(ctx, answer.Question{
		Channel: sc.Channel, User: sc.Owner, TS: ts, ThreadTS: ts, Text: sc.Question,
		Footer: changesFooter(sc.Good, sc.TZ),
		Done:   func(i answer.Info, err error) { info, ferr = i, err },
	})
	if ferr != nil {
		return schedule.Fire{Message: ts}, ferr
	}
	return schedule.Fire{Message: ts, Figures: schedule.FiguresOf(info.Figures())}, nil
}

// check pauses a schedule whose channel is archived or whose owner left.
func (f scheduleFirer) check(ctx context.Context, sc schedule.Schedule) error {
	ch, err := f.b.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: sc.Channel})
	if err != nil {
		if pe := pauseFor(err); pe != nil {
			return pe
		}
	} else if ch.IsArchived {
		return &schedule.PauseError{Reason: "the channel was archived"}
	}
	u, err := f.b.api.GetUserInfoContext(ctx, sc.Owner)
	switch {
	case err != nil && strings.Contains(err.Error(), "user_not_found"):
		return &schedule.PauseError{Reason: "its owner is no longer in the workspace"}
	case err == nil && u.Deleted:
		return &schedule.PauseError{Reason: "its owner left the workspace"}
	}
	return nil
}

// pauseFor returns the pause a Slack error calls for, or nil.
func pauseFor(err error) *schedule.PauseError {
	var se slack.SlackErrorResponse
	code := err.Error()
	if errors.As(err, &se) {
		code = se.Err
	}
	switch code {
	case "is_archived", "channel_not_found":
		return &schedule.PauseError{Reason: "the channel was archived or deleted"}
	case "not_in_channel":
		return &schedule.PauseError{Reason: "I was removed from the channel"}
	}
	return nil
}

// changesFooter ends a scheduled report with what changed since the last
// good fire: the figures found in both, by label, with both values.
func changesFooter(prev *schedule.Fire, tz string) answer.Footer {
	return func(_ context.Context, ans answer.Info) []slack.Block {
		if prev == nil {
			return []slack.Block{slack.NewContextBlock("sandpiper_changes", slack.NewTextBlockObject(slack.MarkdownType,
				":repeat: The first report of this schedule: from the next, I'll say what changed.", false, false))}
		}
		since := "since the last report (" + when(prev.At, tz) + ")"
		changes := schedule.Changes(prev.Figures, schedule.FiguresOf(ans.Figures()))
		if len(changes) == 0 {
			return []slack.Block{slack.NewContextBlock("sandpiper_changes", slack.NewTextBlockObject(slack.MarkdownType,
				":repeat: No change in the reported figures "+since+".", false, false))}
		}
		const maxLines = 10
		var b strings.Builder
		b.WriteString("*Changed " + since + "*")
		for i, c := range changes {
			if i == maxLines {
				fmt.Fprintf(&b, "\n…and %d more", len(changes)-i)
				break
			}
			b.WriteString("\n• " + render.Escape(safetext.Line(c.String())))
		}
		return []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, b.String(), false, false), nil, nil, slack.SectionBlockOptionBlockID("sandpiper_changes"))}
	}
}

// Tell tells the owner of a failed or skipped fire, and the admins (or
// the owner, when none is configured) of a schedule the bot paused.
func (f scheduleFirer) Tell(ctx context.Context, sc schedule.Schedule, n schedule.Notice) {
	b := f.b
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slackapi.CallTimeout)
	defer cancel()
	what := fmt.Sprintf("the scheduled report _%s_ in <#%s> (`%s`)", quote(sc.Question), sc.Channel, sc.ID)
	var text string
	to := []string{sc.Owner}
	switch n.Kind {
	case schedule.Failed:
		text = fmt.Sprintf(":warning: I couldn't post %s due %s, after %d tries: %s. I'll try again at its next time, %s.",
			what, when(n.At, sc.TZ), b.cfg.Schedules.WithDefaults().Retries+1, render.Escape(render.Truncate(safetext.Line(n.Err.Error()), 300)), when(sc.Next(b.now()), sc.TZ))
	case schedule.Skipped:
		text = fmt.Sprintf(":information_source: I was not running %s, so %s was skipped (%d time(s) missed). The next is %s.",
			when(n.At, sc.TZ), what, n.Missed, when(sc.Next(b.now()), sc.TZ))
	case schedule.Paused:
		text = fmt.Sprintf(":double_vertical_bar: I paused %s: %s. Its owner or an admin can resume or delete it with `/sandpiper schedules` in that channel.",
			what, render.Escape(safetext.Line(n.Err.Error())))
		if len(b.cfg.Admins) > 0 {
			to = append(to, b.cfg.Admins...)
		}
	}
	slices.Sort(to)
	for _, user := range slices.Compact(to) {
		if _, _, err := b.api.PostMessageContext(ctx, user, slack.MsgOptionText(text, false)); err != nil {
			b.log.Warn("schedules: telling a user failed", "user", user, "err", slackapi.Explain(err))
		}
	}
}
