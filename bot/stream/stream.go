package stream

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Streamer is what the bot's answers share to stream their text: the
// client for the stream methods (which retries no 429 itself, so that the
// budgets see each one), the rate budgets, and whether Slack refused
// streaming for the workspace or for a channel.
type Streamer struct {
	web     *slack.Client // the bot's client: posts, updates, deletes
	api     *slack.Client
	budgets *streamBudgets
	log     *slog.Logger
	teamID  string

	off      atomic.Bool // never stream: configured, or refused for the workspace
	tasksOff atomic.Bool // stream without tasks: Slack refused them
	offIn    sync.Map    // channel → true: refused there (channel_type_not_supported)
	warnOnce sync.Once
}

// Config configures [New].
type Config struct {
	// Web is the bot's Web API client, for the messages an answer posts,
	// updates and deletes besides its streams.
	Web *slack.Client
	// BotToken and APIURL make the client of the stream methods.
	BotToken, APIURL string
	// TeamID is the workspace, the streams' recipient team in channels.
	TeamID string
	// AppendsPerMinute is the chat.appendStream budget of all answers
	// together (default [DefaultStreamAppendsPerMinute]).
	AppendsPerMinute int
	// Off posts every answer whole.
	Off    bool
	Logger *slog.Logger
}

// New returns what a bot's answers share to stream their text.
func New(cfg Config) *Streamer {
	st := &Streamer{
		web: cfg.Web,
		api: slack.New(cfg.BotToken,
			slack.OptionAPIURL(cfg.APIURL),
			slack.OptionHTTPClient(&http.Client{Timeout: slackapi.CallTimeout}),
		),
		budgets: newStreamBudgets(cmp.Or(cfg.AppendsPerMinute, DefaultAppendsPerMinute)),
		log:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		teamID:  cfg.TeamID,
	}
	st.off.Store(cfg.Off)
	return st
}

// Target is the thread an answer streams into.
type Target struct {
	Channel  string
	ThreadTS string
	// QuestionTS is the question answered; User its asker, the stream's
	// recipient in channels.
	QuestionTS string
	User       string
	IM         bool // a direct message
}

// refused notes that Slack refused to start a stream in channel: for
// good when the error says the workspace or token cannot stream, for the
// channel when its type cannot.
func (st *Streamer) refused(channel string, err error) {
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	if !ok {
		return // a network failure: try again next time
	}
	switch se.Err {
	case "unknown_method", "not_allowed_token_type", "missing_scope", "method_deprecated", "not_allowed", "invalid_auth":
		st.off.Store(true)
		st.warnOnce.Do(func() {
			st.log.Warn("slack refused chat.startStream; answers are posted whole from now on", "err", slackapi.Explain(err))
		})
	case "channel_type_not_supported", "not_in_channel", "is_archived":
		st.offIn.Store(channel, true)
		st.log.Info("slack refused to stream in this channel; answers there are posted whole", "channel", channel, "err", slackapi.Explain(err))
	}
}

// enabled reports whether answers in channel are streamed.
func (st *Streamer) enabled(channel string) bool {
	if st.off.Load() {
		return false
	}
	_, no := st.offIn.Load(channel)
	return !no
}

// call makes a chat.startStream or stopStream call within budget r: it
// waits its turn, and when Slack answers 429 it pauses r for every answer
// (Retry-After, or a second without one) and tries the same call again.
func (st *Streamer) call(ctx context.Context, r *rateBudget, f func() error) error {
	for try := 0; ; try++ {
		if err := r.wait(ctx, 0, nil); err != nil {
			return err
		}
		err := f()
		wait, limited := rateLimited(err)
		if !limited || try >= streamRateRetries {
			return err
		}
		st.log.Debug("slack rate-limited a streaming call; pausing every answer's", "retry_after", wait)
		r.pause(wait)
	}
}

// Answer shows an answer's text in its thread as the model writes
// it: each step's text streams into a message of its own (in parts if it
// is long). Text a step writes before a tool call is closed into its own
// message before the call's card is posted; the last step's text is the
// answer, closed by [Answer.Deliver] with its footer. It is the
// run's [agent.Observer]: it tells next (the card poster) each event
// after handling it, so the thread reads in the order things happened.
//
// When Slack refuses to stream (or streaming is off), text goes the old
// way: commentary is posted whole when its tool call starts, the answer
// by the bot ([Answer.Deliver] says so); either way it lands once.
type Answer struct {
	st   *Streamer
	t    Target
	log  *slog.Logger
	next agent.Observer

	fallback bool            // the old way from now on
	raw      strings.Builder // the current step's text, as the model wrote it
	guard    *render.Guard
	lead     string   // guarded blank text waiting for the first visible text
	msg      *message // the current step's message; nil until text or a task shows
	texted   bool     // visible text of the step is in msg
}

var _ agent.Observer = (*Answer)(nil)

// Start starts showing the text of an answer in t; next is told each
// event after it is handled.
func (st *Streamer) Start(t Target, log *slog.Logger, next agent.Observer) *Answer {
	return &Answer{st: st, t: t, log: log, next: next, fallback: !st.enabled(t.Channel), guard: render.NewGuard()}
}

// StepStarted begins a step's text. A step the agent tries again after
// its answer broke off has its message removed: its text comes again.
func (s *Answer) StepStarted(ctx context.Context, e agent.StepEvent) {
	if e.Retry > 0 {
		s.discard(ctx)
	} else {
		s.endStep(ctx) // and the last run's task
	}
	s.next.StepStarted(ctx, e)
}

// AnswerDelta streams a piece of the model's text.
func (s *Answer) AnswerDelta(ctx context.Context, e agent.DeltaEvent) {
	s.raw.WriteString(e.Text)
	if !s.fallback {
		s.push(ctx, s.guard.Write(e.Text))
	}
	s.next.AnswerDelta(ctx, e)
}

// ToolCallStarted closes the text written before the call, so that the
// call's card comes after it.
func (s *Answer) ToolCallStarted(ctx context.Context, e agent.ToolCallEvent) {
	s.endStep(ctx)
	s.next.ToolCallStarted(ctx, e)
	s.openTask(ctx, e) // below the card
}

// ToolCallFinished passes the event on.
func (s *Answer) ToolCallFinished(ctx context.Context, e agent.ToolResultEvent) {
	s.finishTask(e) // first: the task shows done while the card is updated
	s.next.ToolCallFinished(ctx, e)
}

// Finished passes the event on.
func (s *Answer) Finished(ctx context.Context, e agent.FinishEvent) {
	s.next.Finished(ctx, e)
}

// push sends guarded text to the step's message, opening it at the first
// visible text.
func (s *Answer) push(ctx context.Context, text string) {
	if !s.texted {
		if strings.TrimSpace(s.lead+text) == "" {
			s.lead += text
			return
		}
		text, s.lead, s.texted = strings.TrimLeft(s.lead+text, " \t\n"), "", true
		if s.msg == nil { // a task may have opened it
			s.msg = s.openMsg(ctx)
		}
	}
	s.msg.add(text)
}

// resetStep forgets the step's text.
func (s *Answer) resetStep() {
	s.raw.Reset()
	s.guard, s.lead, s.msg, s.texted = render.NewGuard(), "", nil, false
}

// endStep closes the step's text as commentary (text before a tool call).
func (s *Answer) endStep(ctx context.Context) {
	text := s.raw.String()
	if strings.TrimSpace(text) == "" && s.msg == nil {
		s.resetStep()
		return
	}
	meta := slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaCommentary, EventPayload: map[string]any{"question_ts": s.t.QuestionTS}})
	if s.deliverStep(ctx, []slack.MsgOption{meta}) {
		s.resetStep()
		return
	}
	if strings.TrimSpace(text) != "" {
		s.postCommentary(ctx, text)
	}
	s.resetStep()
}

// deliverStep ends the step's message with opts; it reports false when
// the text is still to be shown the old way (nothing or part of it was
// streamed; the part is removed).
func (s *Answer) deliverStep(ctx context.Context, opts []slack.MsgOption) bool {
	if s.msg == nil {
		return strings.TrimSpace(s.raw.String()) == ""
	}
	s.msg.add(s.guard.Flush())
	switch res := s.msg.close(ctx, opts); res {
	case streamClosed, streamStoppedByUser:
		return true
	default:
		s.fallbackNow(ctx, res)
		return false
	}
}

// fallbackNow switches the answer to the old way after its stream failed,
// removing what the failed message showed.
func (s *Answer) fallbackNow(ctx context.Context, res streamResult) {
	if res == streamBroken {
		s.remove(ctx, s.msg)
	}
	if !s.fallback {
		s.fallback = true
		s.log.Warn("streaming failed; this answer goes on the old way", "err", s.msg.err)
	}
}

// discard removes the step's message: the step runs again.
func (s *Answer) discard(ctx context.Context) {
	if s.msg != nil {
		s.msg.close(ctx, nil)
		s.remove(ctx, s.msg)
	}
	s.resetStep()
}

// remove takes a closed message's parts out of the thread (chat.delete),
// or, where Slack will not delete one, replaces its text with a note.
func (s *Answer) remove(ctx context.Context, g *message) {
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	for _, ts := range g.parts {
		_, _, err := s.st.web.DeleteMessageContext(ctx, s.t.Channel, ts)
		if err == nil {
			continue
		}
		const note = "_(This text broke off; it is written again below.)_"
		_, _, _, err = s.st.web.UpdateMessageContext(ctx, s.t.Channel, ts,
			slack.MsgOptionText(note, false),
			slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, note, false, false), nil, nil)),
			slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaCommentary, EventPayload: map[string]any{"question_ts": s.t.QuestionTS}}))
		if err != nil {
			s.log.Error("could not remove a broken-off streamed message", "ts", ts, "err", slackapi.Explain(err))
		}
	}
}

// postCommentary posts text written before a tool call the old way.
func (s *Answer) postCommentary(ctx context.Context, text string) {
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	parts := render.SplitMrkdwn(render.Mrkdwn(safetext.Text(text)), render.AnswerMessageChars)
	if len(parts) == 0 {
		return
	}
	var blocks []slack.Block
	for _, p := range render.SplitMrkdwn(parts[0], render.SectionChars) {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, p, false, false), nil, nil))
	}
	_, _, err := s.st.web.PostMessageContext(ctx, s.t.Channel,
		slack.MsgOptionTS(s.t.ThreadTS),
		slack.MsgOptionText(render.Truncate(parts[0], render.FallbackTextChars), false),
		slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaCommentary, EventPayload: map[string]any{"question_ts": s.t.QuestionTS}}),
	)
	if err != nil {
		s.log.Error("posting the model's commentary failed", "err", slackapi.Explain(err))
	}
}

// Deliver ends the answer: the last step's streamed text is closed with
// the footer under it (the debug line, then the blocks of footer, built
// once the message's ts is known) and the answer's metadata. text is the
// answer as the bot made it (the model's text, perhaps with a note after
// it). It reports whether the answer was shown, and whether it was cut
// (too long for its parts: the caller attaches it whole); when it was not
// shown (nothing was streamed, or the stream failed) the caller posts it
// the old way.
func (s *Answer) Deliver(ctx context.Context, text, debug string, footer func(ts string) []slack.Block) (shown, cut bool) {
	if s.fallback || s.msg == nil {
		return false, false
	}
	if rest, ok := strings.CutPrefix(text, s.raw.String()); ok && rest != "" {
		s.msg.add(s.guard.Write(rest))
	}
	g := s.msg
	g.footer = func(ts string) []slack.Block {
		var blocks []slack.Block
		if debug != "" {
			blocks = append(blocks, render.ContextBlock(debug))
		}
		return append(blocks, footer(ts)...)
	}
	opts := []slack.MsgOption{slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaAnswer, EventPayload: map[string]any{
		"answer":      render.Truncate(safetext.Text(text), render.MetadataTextChars),
		"question_ts": s.t.QuestionTS,
	}})}
	if !s.deliverStep(ctx, opts) {
		return false, false
	}
	return true, g.cut
}

// Abandon closes the answer's open text when the run ended without an
// answer (an error, the time limit): what was shown stays, as commentary.
func (s *Answer) Abandon(ctx context.Context) {
	if s.msg != nil && !s.fallback {
		s.deliverStep(ctx, []slack.MsgOption{slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaCommentary, EventPayload: map[string]any{"question_ts": s.t.QuestionTS}})})
	}
	s.resetStep()
}
