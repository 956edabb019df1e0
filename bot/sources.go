package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// DataSources are the data sources the operator configured, which admins
// grant to channels; [*datasource.Set] implements it.
type DataSources interface {
	Names() []string
	// Check connects to every source and says whether it can be used.
	Check(ctx context.Context) []datasource.Check
}

// sourcesCheckTimeout bounds checking the sources' health for `sources
// status`.
const sourcesCheckTimeout = 10 * time.Second

// sourcesCommand is "sources allow NAME | deny NAME | status".
var sourcesCommand = botCommand{
	name: "sources", args: "allow NAME|deny NAME|status",
	help: "which of the team's databases questions in this channel may query (read-only, every query shown). Only admins can allow or deny one.",
	takes: func(args []string) bool {
		switch {
		case len(args) == 0:
			return true
		case len(args) == 1:
			return args[0] == "status"
		case len(args) == 2:
			return args[0] == "allow" || args[0] == "deny"
		}
		return false
	},
	run: func(ctx context.Context, b *Bot, c commandCall) (string, bool) {
		return b.sources(ctx, c)
	},
}

// sourceNames are the configured sources' names, sorted.
func (b *Bot) sourceNames() []string {
	if b.cfg.Sources == nil {
		return nil
	}
	return b.cfg.Sources.Names()
}

// runSources says which data sources a question's run may query: in a
// channel those an admin granted to it, in a direct message those the
// operator allows there (SANDPIPER_SOURCES_DM). When other sources exist,
// the model is told which and who can grant them, so that a user who asks
// for their data is told how to get it.
func (b *Bot) runSources(q answer.Question, s store.ChannelSettings) (granted []string, note string) {
	all := b.sourceNames()
	if q.IM {
		for _, n := range all {
			if slices.Contains(b.cfg.SourcesDM, n) {
				granted = append(granted, n)
			}
		}
	} else {
		granted = s.Granted(all)
	}
	var others []string
	for _, n := range all {
		if !slices.Contains(granted, n) {
			others = append(others, n)
		}
	}
	if len(others) == 0 {
		return granted, ""
	}
	return granted, notGrantedNote(others, len(granted) > 0, q.IM)
}

// notGrantedNote tells the model of the sources its conversation may not
// query, and what to tell a user who asks for their data.
func notGrantedNote(others []string, some, im bool) string {
	var b strings.Builder
	where := "this channel"
	if im {
		where = "direct messages"
	}
	fmt.Fprintf(&b, "Data sources not granted here: the team also has the databases %s, which %s may not query", strings.Join(others, ", "), where)
	if some {
		b.WriteString(" (query only the sources listed above)")
	}
	b.WriteString(". If the user asks for data that may be in them, do not guess or invent numbers: tell them that this conversation cannot read that data yet, and how to get it: ")
	example := "`@sandpiper sources allow " + others[0] + "`"
	if im {
		fmt.Fprintf(&b, "the operator chooses which sources direct messages may query (the setting SANDPIPER_SOURCES_DM); or they can ask in a channel where a Slack admin has typed %s (or `/sandpiper sources allow %s`).", example, others[0])
	} else {
		fmt.Fprintf(&b, "a Slack admin can grant a source to this channel by typing %s here (or `/sandpiper sources allow %s`), with the source's name; `@sandpiper sources status` lists them.", example, others[0])
	}
	return b.String()
}

// sources runs "sources allow NAME | deny NAME | status" for c.user in
// c.channel and returns the reply and whether it should be private.
func (b *Bot) sources(ctx context.Context, c commandCall) (reply string, private bool) {
	all := b.sourceNames()
	if len(all) == 0 {
		return "No data sources are configured, so there is nothing to allow. The operator adds one with `" + render.Escape("SANDPIPER_SOURCE_<NAME>=<URL>") + "` (see the README's _Your data_).", true
	}
	verb := "status"
	if len(c.args) > 0 {
		verb = strings.Trim(strings.ToLower(c.args[0]), "!.:,?")
	}
	usage := "Usage: `sources allow NAME`, `sources deny NAME` or `sources status`. " + configured(all)
	switch verb {
	case "status":
		return b.sourcesStatus(ctx, c, all), true
	case "allow", "deny":
	default:
		return usage, true
	}
	if len(c.args) != 2 {
		return usage, true
	}
	name := strings.Trim(strings.ToLower(c.args[1]), "`!.:,?")
	if !slices.Contains(all, name) {
		return fmt.Sprintf("There is no data source named `%s`. %s", render.Escape(render.Truncate(name, 60)), configured(all)), true
	}
	if c.im {
		return "In direct messages the operator chooses which sources may be queried (`SANDPIPER_SOURCES_DM`); nothing was changed. Type `sources status` to see them.", true
	}
	allow := verb == "allow"
	cur := b.settings.Get(c.channel)
	if ok, why := b.checkAdmin(ctx, c.user); !ok {
		if why != "" {
			return why, true
		}
		return fmt.Sprintf("Sorry, only workspace admins and the admins listed in sandpiper's configuration can allow or deny data sources. `%s` is %s in this channel; nothing was changed.", name, grantState(cur, name)), true
	}
	if err := b.settings.Set(c.channel, store.SetGrant(name, allow, c.user, b.now()), c.user, b.now()); err != nil {
		b.log.Error("saving settings failed", "err", err)
		return ":warning: I couldn't save the change, so nothing was changed. The operator should check the data directory.", true
	}
	b.log.Info("data source granted", "channel", c.channel, "source", name, "allowed", allow, "by", c.user)
	if allow {
		return fmt.Sprintf("Data source `%s` is now *allowed* in this channel (by <@%s>). Questions here may query it, read-only; every query is shown in its thread.", name, c.user), false
	}
	return fmt.Sprintf("Data source `%s` is now *denied* in this channel (by <@%s>). Questions here can no longer query it.", name, c.user), false
}

// sourcesStatus lists the configured sources: whether the conversation
// may query each (granted here, or allowed in direct messages) and
// whether it can be reached.
func (b *Bot) sourcesStatus(ctx context.Context, c commandCall, all []string) string {
	ctx, cancel := context.WithTimeout(ctx, sourcesCheckTimeout)
	defer cancel()
	health := map[string]datasource.Check{}
	for _, ch := range b.cfg.Sources.Check(ctx) {
		health[ch.Name] = ch
	}
	cur := b.settings.Get(c.channel)
	var s strings.Builder
	if c.im {
		s.WriteString("*Data sources* (in direct messages the operator chooses them, with `SANDPIPER_SOURCES_DM`)")
	} else {
		s.WriteString("*Data sources* in this channel")
	}
	for _, name := range all {
		state := grantState(cur, name)
		if c.im {
			state = "*not allowed* in direct messages"
			if slices.Contains(b.cfg.SourcesDM, name) {
				state = "*allowed* in direct messages"
			}
		} else if g, ok := cur.GrantOf(name); ok {
			state += fmt.Sprintf(" by %s on %s", render.UserMention(g.By), g.At.Format("2 Jan 2006"))
		}
		h := health[name]
		mark := ":white_check_mark:"
		switch {
		case !h.OK:
			mark = ":warning: unavailable:"
		case h.Warn:
			mark = ":warning:"
		}
		fmt.Fprintf(&s, "\n• `%s`: %s · %s %s", name, state, mark, render.Escape(render.Truncate(safetext.Line(h.Detail), 300)))
	}
	if !c.im {
		s.WriteString("\nAdmins change this with `sources allow NAME` or `sources deny NAME`.")
	}
	return s.String()
}

// grantState says whether source is granted in the channel: "*allowed*"
// or "*not allowed*".
func grantState(cur store.ChannelSettings, source string) string {
	if _, ok := cur.GrantOf(source); ok {
		return "*allowed*"
	}
	return "*not allowed*"
}

// configured names the configured sources for a reply.
func configured(all []string) string {
	names := make([]string, len(all))
	for i, n := range all {
		names[i] = "`" + n + "`"
	}
	return "The configured sources are: " + strings.Join(names, ", ") + "."
}
