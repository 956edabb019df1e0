package bot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// agentTitleChars bounds an agent thread's title (Slack's limit is not
// documented; the client shows about this much).
const agentTitleChars = 60

// agentPromptsTitle and agentPrompts are what a new agent thread
// suggests: a math question, a data question and a file question.
const agentPromptsTitle = "What can I work out for you?"

var agentPrompts = []slack.AssistantThreadsPrompt{
	{Title: "Solve a math problem", Message: "What is the 50th Fibonacci number, and how close is the ratio of consecutive terms to the golden ratio?"},
	{Title: "Simulate some data", Message: "Roll two dice 100,000 times and chart how often each total comes up, next to the exact probabilities."},
	{Title: "Analyse a CSV I attach", Message: "I'm attaching a CSV: describe its columns, spot anything unusual, and chart the most interesting one."},
	{Title: "Check a calculation", Message: "Is 2^61 - 1 prime? Show how you checked."},
}

// agentView is the state of the agent view's extras: off once Slack
// says the token may not use them (the scope is missing), after one
// warning.
type agentView struct {
	off atomic.Bool
}

// checkScopes turns the agent view's extras off when the token's scopes
// (auth.test's X-OAuth-Scopes; "" when Slack did not list them) lack
// assistant:write.
func (v *agentView) checkScopes(scopes string, log *slog.Logger) {
	if scopes == "" {
		return
	}
	for _, s := range strings.Split(scopes, ",") {
		if strings.TrimSpace(s) == slackapi.AgentViewScope {
			return
		}
	}
	v.disable(log, "the bot token lacks the "+slackapi.AgentViewScope+" scope")
}

// disable turns the extras off, warning once.
func (v *agentView) disable(log *slog.Logger, why string) {
	if v.off.CompareAndSwap(false, true) {
		log.Warn("agent view: no suggested prompts or thread titles: "+why+"; add the scope (manifest.yaml has it) and reinstall the app", "scope", slackapi.AgentViewScope)
	}
}

// refused reports whether err says the token may not use the agent
// view's methods, and turns them off if so.
func (v *agentView) refused(err error, log *slog.Logger) bool {
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	if !ok {
		return false
	}
	switch se.Err {
	case "missing_scope", "not_allowed", "not_allowed_token_type", "no_permission":
		v.disable(log, "Slack refused with "+slackapi.Explain(err).Error())
		return true
	}
	return false
}

// onAgentEvent handles the agent view's events (already deduplicated):
// a new agent thread, the app's messages tab opened, and Slack's Stop.
// The work is done off the event loop.
func (b *Bot) onAgentEvent(kind string, frame []byte) {
	var env struct {
		Payload struct {
			Event json.RawMessage `json:"event"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		b.log.Warn("unparseable event acked and dropped", "type", kind, "err", err)
		return
	}
	var job func(ctx context.Context)
	switch kind {
	case string(slackevents.AssistantThreadStarted):
		var e slackevents.AssistantThreadStartedEvent
		if json.Unmarshal(env.Payload.Event, &e) != nil || e.AssistantThread.ChannelID == "" {
			return
		}
		// The assistant view's thread: prompts are set on it.
		job = func(ctx context.Context) {
			b.suggestPrompts(ctx, e.AssistantThread.ChannelID, e.AssistantThread.ThreadTimeStamp)
		}
	case string(slackevents.AppHomeOpened):
		var e slackevents.AppHomeOpenedEvent
		if json.Unmarshal(env.Payload.Event, &e) != nil || e.Tab != "messages" || e.Channel == "" {
			return
		}
		// The agent view has no thread yet: Slack puts prompts set
		// without thread_ts under the DM's latest message.
		job = func(ctx context.Context) { b.suggestPrompts(ctx, e.Channel, "") }
	case string(slackevents.AgentSessionStopped):
		var e slackevents.AgentSessionStoppedEvent
		if json.Unmarshal(env.Payload.Event, &e) != nil || e.Channel == "" || e.ThreadTimestamp == "" || e.User == "" {
			return
		}
		job = func(ctx context.Context) { b.onAgentSessionStopped(ctx, e.Channel, e.ThreadTimestamp, e.User) }
	default:
		return
	}
	b.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), slackapi.CallTimeout)
		defer cancel()
		job(ctx)
	})
}

// suggestPrompts shows the suggested prompts in an agent thread (or,
// with threadTS "", in the agent DM).
func (b *Bot) suggestPrompts(ctx context.Context, channel, threadTS string) {
	if b.agentView.off.Load() {
		return
	}
	err := b.api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{
		ChannelID: channel, ThreadTS: threadTS, Title: agentPromptsTitle, Prompts: agentPrompts,
	})
	if err != nil && !b.agentView.refused(err, b.log) {
		b.log.Warn("setting suggested prompts failed", "channel", channel, "thread", threadTS, "err", slackapi.Explain(err))
	}
}

// titleThread names an agent thread after its first question, in the
// background. Only DMs have agent threads; earlier are the thread's turns
// before m.
func (b *Bot) titleThread(m message, earlier []thread.Turn) {
	if !m.IM || b.agentView.off.Load() {
		return
	}
	for _, t := range earlier {
		if !t.Ignored && t.Question != "" && t.TS != m.TS {
			return // named after its first question already
		}
	}
	title := threadTitle(m)
	if title == "" {
		return
	}
	b.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), slackapi.CallTimeout)
		defer cancel()
		err := b.api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{
			ChannelID: m.Channel, ThreadTS: m.ThreadTS, Title: title,
		})
		if err != nil && !b.agentView.refused(err, b.log) {
			// A DM outside the agent view has no title to set.
			b.log.Debug("setting the thread's title failed", "channel", m.Channel, "thread", m.ThreadTS, "err", slackapi.Explain(err))
		}
	})
}

// threadTitle is a thread's title for its first question: the question's
// first line, neutralised and cut, or the first file's name for a
// question that is only files.
func threadTitle(m message) string {
	text := m.Text
	if text == thread.FilesOnlyQuestion || strings.TrimSpace(text) == "" {
		if len(m.Files) == 0 {
			return ""
		}
		text = "About " + m.Files[0].Name
	}
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return render.Truncate(safetext.Line(strings.Join(strings.Fields(line), " ")), agentTitleChars)
}
