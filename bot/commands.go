package bot

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/slack-go/slack"
)

var reAdminID = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)

// helpText is the answer to "help". %s is the bot's mention.
const helpText = `:wave: *I'm sandpiper.* I answer math and data questions by writing Python and running it in a fresh, isolated sandbox. Every piece of code I run is shown in the thread with its output, then my answer.

*How to ask*
• Mention me in a channel: %[1]s _what is the probability of at least two sixes in ten rolls of a die?_
• Or send me a direct message.
• Follow up in the same thread without mentioning me again: _now plot it for 1 to 20 rolls_ or _what if the die has 8 sides?_

*Good questions*
• _%[1]s compound interest on $10,000 at 4.5%% for 12 years, monthly_
• _%[1]s is 2^61 − 1 prime?_
• _%[1]s fit a line to (1, 2.1), (2, 3.9), (3, 6.2), (4, 7.8) and give R²_

*Commands*
• %[1]s help (or ` + "`/sandpiper help`" + `): this message
• %[1]s debug on|off|status (or ` + "`/sandpiper debug …`" + `): show extra detail in this channel (exit codes, stderr, limits, model and token use). Only admins can change it.
• %[1]s state on|off|status (or ` + "`/sandpiper state …`" + `): whether a thread's runs keep the variables earlier runs defined (on unless switched off). Only admins can change it.
• ` + "`/sandpiper feedback`" + `: how people rated my answers in this channel with the buttons under each answer (admins only).

Each run starts in a fresh sandbox with no network. Files attached in the thread, and files earlier runs wrote, are in its working directory ` + "`/mnt/data`" + `; the variables, functions and imports earlier runs in the thread defined are there too.`

// runCommand handles help, debug and state sent as a mention or a DM.
func (b *Bot) runCommand(ctx context.Context, m message) {
	f := strings.Fields(strings.ToLower(m.Text))
	if len(f) == 0 || strings.Trim(f[0], "!/.:,?") == "help" {
		b.notice(ctx, m, fmt.Sprintf(helpText, "<@"+b.userID+">"))
		return
	}
	setting := debugSetting
	if strings.Trim(f[0], "!/.:,?") == "state" {
		setting = stateSetting
	}
	reply, private := b.settingCommand(ctx, setting, m.Channel, m.User, f[1:])
	if private && !m.IM {
		_, err := b.api.PostEphemeralContext(ctx, m.Channel, m.User, slack.MsgOptionTS(m.ThreadTS), slack.MsgOptionText(reply, false))
		if err == nil {
			return
		}
		b.log.Warn("ephemeral reply failed; replying in thread", "err", err)
	}
	b.notice(ctx, m, reply)
}

// onSlashCommand answers /sandpiper through the command's response URL,
// visible only to the user who typed it.
func (b *Bot) onSlashCommand(cmd slack.SlashCommand) {
	f := strings.Fields(strings.ToLower(cmd.Text))
	job := func(ctx context.Context) {
		var reply string
		switch {
		case len(f) == 0 || f[0] == "help":
			reply = fmt.Sprintf(helpText, "<@"+b.userID+">")
		case f[0] == "debug":
			reply, _ = b.settingCommand(ctx, debugSetting, cmd.ChannelID, cmd.UserID, f[1:])
		case f[0] == "state":
			reply, _ = b.settingCommand(ctx, stateSetting, cmd.ChannelID, cmd.UserID, f[1:])
		case f[0] == "feedback":
			reply = b.feedbackCommand(ctx, cmd.ChannelID, cmd.UserID)
		default:
			reply = fmt.Sprintf("To ask a question, mention me: <@%s> %s\nType `/sandpiper help` for examples.", b.userID, render.Escape(cmd.Text))
		}
		_, _, err := b.api.PostMessageContext(ctx, cmd.ChannelID,
			slack.MsgOptionResponseURL(cmd.ResponseURL, slack.ResponseTypeEphemeral),
			slack.MsgOptionText(reply, false))
		if err != nil {
			b.log.Error("slash command reply failed", "err", slackapi.Explain(err))
		}
	}
	if !b.pool.submit("slash/"+cmd.TriggerID, job) {
		b.metrics.errors.WithLabelValues("busy").Inc()
		go func() { // tell the user, off the event loop
			ctx, cancel := context.WithTimeout(context.Background(), slackapi.CallTimeout)
			defer cancel()
			if _, _, err := b.api.PostMessageContext(ctx, cmd.ChannelID,
				slack.MsgOptionResponseURL(cmd.ResponseURL, slack.ResponseTypeEphemeral),
				slack.MsgOptionText(":hourglass: I'm answering too many questions right now. Please try again in a minute.", false)); err != nil {
				b.log.Error("slash command reply failed", "err", slackapi.Explain(err))
			}
		}()
	}
}

// A channel setting admins switch on and off: debug (extra detail) and
// state (the Python variables a thread's runs keep).
type channelSetting struct {
	name    string // the command
	what    string // what it is, after "<name> is on": "in this channel"
	get     func(store.ChannelSettings) bool
	set     func(on bool) func(*store.ChannelSettings)
	on, off string // what it now does, after "<Name> is now *on* in this channel (set by @u)."
}

var (
	debugSetting = channelSetting{
		name: "debug", get: func(c store.ChannelSettings) bool { return c.Debug }, set: store.SetDebug,
		on: "Tool cards show stderr, exit codes, durations and limits; answers show the model, steps, tokens and time.",
	}
	stateSetting = channelSetting{
		name: "state", get: func(c store.ChannelSettings) bool { return !c.StateOff }, set: store.SetState,
		on:  "Each thread's runs keep the variables, functions and imports earlier runs of the thread left (each run is still a fresh sandbox).",
		off: "Each run starts with no variables; the files in a thread are still kept. The variables threads kept until now stay, unused, until their threads expire.",
	}
)

// settingCommand runs "<setting> on|off|status" for user in channel and
// returns the reply and whether it should be private.
func (b *Bot) settingCommand(ctx context.Context, setting channelSetting, channel, user string, args []string) (reply string, private bool) {
	cur := b.settings.Get(channel)
	state := func(on bool) string {
		if on {
			return "*on*"
		}
		return "*off*"
	}
	name := strings.ToUpper(setting.name[:1]) + setting.name[1:]
	if len(args) == 0 || args[0] == "status" {
		s := name + " is " + state(setting.get(cur)) + " in this channel."
		if cur.UpdatedBy != "" {
			s += fmt.Sprintf(" Last changed by <@%s> on %s.", cur.UpdatedBy, cur.UpdatedAt.Format("2 Jan 2006 15:04 MST"))
		}
		return s, true
	}
	var on bool
	switch args[0] {
	case "on", "true", "enable":
		on = true
	case "off", "false", "disable":
	default:
		return fmt.Sprintf("Usage: `%[1]s on`, `%[1]s off` or `%[1]s status`.", setting.name), true
	}
	ok, err := b.admins.IsAdmin(ctx, user)
	if err != nil {
		b.log.Warn("admin check failed", "user", user, "err", err)
		return ":warning: I couldn't check whether you are an admin (Slack said: " + render.Escape(slackapi.Explain(err).Error()) + "). Nothing was changed.", true
	}
	if !ok {
		return fmt.Sprintf("Sorry, only workspace admins and the admins listed in sandpiper's configuration can change %s settings. %s is %s in this channel; nothing was changed.", setting.name, name, state(setting.get(cur))), true
	}
	if err := b.settings.Set(channel, setting.set(on), user, b.now()); err != nil {
		b.log.Error("saving settings failed", "err", err)
		return ":warning: I couldn't save the setting, so nothing was changed. The operator should check the data directory.", true
	}
	b.log.Info("channel setting changed", "channel", channel, "setting", setting.name, "on", on, "by", user)
	s := fmt.Sprintf("%s is now %s in this channel (set by <@%s>).", name, state(on), user)
	if what := map[bool]string{true: setting.on, false: setting.off}[on]; what != "" {
		s += " " + what
	}
	return s, false
}
