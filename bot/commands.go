package bot

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/schedule"
	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/slack-go/slack"
)

var reAdminID = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)

// A botCommand is one of the bot's commands: typed after a mention (or
// in a DM), or after /sandpiper. The table of them, [commands], makes
// the routing of mentions and slash commands, the help text and
// manifest.yaml's usage_hint (TestManifestMatchesCode checks it), so
// adding a command is adding a row (and the manifest's hint).
type botCommand struct {
	name string // the first word, lower case
	args string // its arguments in help and the usage hint: "on|off|status"; "" for none
	help string // what it does, in the help after "name args: "
	// slashOnly makes it a slash command alone: as a mention it is a
	// question for the model.
	slashOnly bool
	// takes reports whether args (the words after the name, lower case,
	// without trailing punctuation) make a mention this command and not
	// a question: "help me integrate x²" is a question. nil: only the
	// name alone.
	takes func(args []string) bool
	// run answers the command; private: its reply is for the user who
	// typed it alone (a slash command's reply always is).
	run func(ctx context.Context, b *Bot, c commandCall) (reply string, private bool)
}

// commandCall is one use of a command.
type commandCall struct {
	channel, user string
	args          []string // the words after the command's name, as typed
	im            bool     // typed in a direct message with the bot
	// ts and threadTS are the command's message and its thread, for a
	// mention ("" for a slash command); responseURL is a slash command's.
	ts, threadTS, responseURL string
}

// usage is the command with its arguments: "debug on|off|status".
func (c *botCommand) usage() string { return strings.TrimSpace(c.name + " " + c.args) }

// commands are the bot's commands, in the order help lists them. They
// are set in init: help, one of them, lists them all.
var commands []botCommand

func init() {
	commands = []botCommand{
		{name: "help", help: "this message",
			run: func(_ context.Context, b *Bot, _ commandCall) (string, bool) {
				return helpText("<@" + b.userID + ">"), false
			}},
		settingCommand(debugSetting, "show extra detail in this channel (exit codes, stderr, limits, model and token use). Only admins can change it."),
		settingCommand(stateSetting, "whether a thread's runs keep the variables earlier runs defined (on unless switched off). Only admins can change it."),
		sourcesCommand,
		{name: "repeat", args: "every monday 9:00", help: "in an answer's thread: answer its question again at those times (daily, weekdays, a day of the week, monthly, or `cron 0 9 * * 1`), as a new message here that says what changed.",
			takes: func(args []string) bool {
				if len(args) == 0 {
					return true
				}
				_, err := schedule.ParseWhen(args)
				return err == nil || slices.Contains([]string{"every", "daily", "weekdays", "weekly", "monthly", "cron"}, args[0])
			},
			run: func(ctx context.Context, b *Bot, c commandCall) (string, bool) { return b.repeatCommand(ctx, c) }},
		{name: "schedules", args: "[pause|resume|delete ID]", help: "this channel's scheduled reports with their next times; their owner or an admin can pause, resume or delete one.",
			takes: func(args []string) bool {
				return len(args) == 0 || len(args) == 2 && slices.Contains([]string{"pause", "resume", "delete"}, args[0])
			},
			run: func(ctx context.Context, b *Bot, c commandCall) (string, bool) { return b.schedulesCommand(ctx, c) }},
		{name: "feedback", slashOnly: true, help: "how people rated my answers in this channel with the buttons under each answer (admins only).",
			run: func(ctx context.Context, b *Bot, c commandCall) (string, bool) {
				return b.feedbackCommand(ctx, c.channel, c.user), true
			}},
	}
}

// settingCommand is the command "<setting> on|off|status".
func settingCommand(s channelSetting, help string) botCommand {
	return botCommand{
		name: s.name, args: "on|off|status", help: help,
		takes: func(args []string) bool {
			return len(args) == 0 || len(args) == 1 && slices.Contains([]string{"on", "off", "status"}, args[0])
		},
		run: func(ctx context.Context, b *Bot, c commandCall) (string, bool) {
			return b.setting(ctx, s, c.channel, c.user, c.args)
		},
	}
}

// findCommand returns the command named name, or nil.
func findCommand(name string) *botCommand {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// mentionCommand returns the command a mention's words (the bot's
// mention removed) make, or nil when they make a question. No words at
// all (a bare mention) make help.
func mentionCommand(words []string) *botCommand {
	if len(words) == 0 {
		return findCommand("help")
	}
	c := findCommand(strings.Trim(strings.ToLower(words[0]), "!/.:,?"))
	if c == nil || c.slashOnly {
		return nil
	}
	args := make([]string, len(words)-1)
	for i, w := range words[1:] {
		args[i] = strings.Trim(strings.ToLower(w), "!.:,?")
	}
	if c.takes == nil && len(args) > 0 || c.takes != nil && !c.takes(args) {
		return nil
	}
	return c
}

// isCommand reports whether a message's text (the bot's mention removed)
// is one of the bot's commands, or nothing at all (a bare mention).
func isCommand(text string) bool { return mentionCommand(strings.Fields(text)) != nil }

// usageHint is the slash command's usage hint in manifest.yaml: "help |
// debug on|off|status | …".
func usageHint() string {
	var parts []string
	for _, c := range commands {
		parts = append(parts, c.usage())
	}
	return strings.Join(parts, " | ")
}

// helpText is the answer to "help"; mention is the bot's mention.
func helpText(mention string) string {
	var b strings.Builder
	fmt.Fprintf(&b, helpIntro, mention)
	b.WriteString("\n\n*Commands*")
	for _, c := range commands {
		if c.slashOnly {
			fmt.Fprintf(&b, "\n• `/sandpiper %s`: %s", c.usage(), c.help)
			continue
		}
		slash := "`/sandpiper " + c.name + "`"
		if c.args != "" {
			slash = "`/sandpiper " + c.name + " …`"
		}
		fmt.Fprintf(&b, "\n• %s %s (or %s): %s", mention, c.usage(), slash, c.help)
	}
	b.WriteString("\n\n" + helpOutro)
	return b.String()
}

// helpIntro and helpOutro frame the commands in the help. %[1]s is the
// bot's mention.
const (
	helpIntro = `:wave: *I'm sandpiper.* I answer math and data questions by writing Python and running it in a fresh, isolated sandbox. Every piece of code I run is shown in the thread with its output, then my answer.

*How to ask*
• Mention me in a channel: %[1]s _what is the probability of at least two sixes in ten rolls of a die?_
• Or send me a direct message.
• Follow up in the same thread without mentioning me again: _now plot it for 1 to 20 rolls_ or _what if the die has 8 sides?_

*Good questions*
• _%[1]s compound interest on $10,000 at 4.5%% for 12 years, monthly_
• _%[1]s is 2^61 − 1 prime?_
• _%[1]s fit a line to (1, 2.1), (2, 3.9), (3, 6.2), (4, 7.8) and give R²_`
	helpOutro = "Each run starts in a fresh sandbox with no network. Files attached in the thread, and files earlier runs wrote, are in its working directory `/mnt/data`; the variables, functions and imports earlier runs in the thread defined are there too."
)

// runCommand answers a command sent as a mention or a DM.
func (b *Bot) runCommand(ctx context.Context, m message) {
	words := strings.Fields(m.Text)
	c := mentionCommand(words)
	if c == nil {
		c, words = findCommand("help"), nil
	}
	var args []string
	if len(words) > 1 {
		args = words[1:]
	}
	reply, private := c.run(ctx, b, commandCall{channel: m.Channel, user: m.User, args: args, im: m.IM, ts: m.TS, threadTS: m.ThreadTS})
	if reply == "" {
		return // the command replied itself
	}
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
	words := strings.Fields(cmd.Text)
	job := func(ctx context.Context) {
		var reply string
		c := findCommand("help")
		if len(words) > 0 {
			c = findCommand(strings.ToLower(words[0]))
		}
		if c != nil {
			var args []string
			if len(words) > 1 {
				args = words[1:]
			}
			im := cmd.ChannelName == "directmessage" || strings.HasPrefix(cmd.ChannelID, "D")
			reply, _ = c.run(ctx, b, commandCall{channel: cmd.ChannelID, user: cmd.UserID, args: args, im: im, responseURL: cmd.ResponseURL})
			if reply == "" {
				return // the command replied itself
			}
		} else {
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

// checkAdmin reports whether user may change channel settings; when
// that could not be checked, why is the reply saying so.
func (b *Bot) checkAdmin(ctx context.Context, user string) (ok bool, why string) {
	ok, err := b.admins.IsAdmin(ctx, user)
	if err != nil {
		b.log.Warn("admin check failed", "user", user, "err", err)
		return false, ":warning: I couldn't check whether you are an admin (Slack said: " + render.Escape(slackapi.Explain(err).Error()) + "). Nothing was changed."
	}
	return ok, ""
}

// setting runs "<setting> on|off|status" for user in channel and
// returns the reply and whether it should be private.
func (b *Bot) setting(ctx context.Context, setting channelSetting, channel, user string, args []string) (reply string, private bool) {
	cur := b.settings.Get(channel)
	state := func(on bool) string {
		if on {
			return "*on*"
		}
		return "*off*"
	}
	name := strings.ToUpper(setting.name[:1]) + setting.name[1:]
	arg := ""
	if len(args) > 0 {
		arg = strings.Trim(strings.ToLower(args[0]), "!.:,?")
	}
	if arg == "" || arg == "status" {
		s := name + " is " + state(setting.get(cur)) + " in this channel."
		if cur.UpdatedBy != "" {
			s += fmt.Sprintf(" Last changed by <@%s> on %s.", cur.UpdatedBy, cur.UpdatedAt.Format("2 Jan 2006 15:04 MST"))
		}
		return s, true
	}
	var on bool
	switch arg {
	case "on", "true", "enable":
		on = true
	case "off", "false", "disable":
	default:
		return fmt.Sprintf("Usage: `%[1]s on`, `%[1]s off` or `%[1]s status`.", setting.name), true
	}
	if ok, why := b.checkAdmin(ctx, user); !ok {
		if why != "" {
			return why, true
		}
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
