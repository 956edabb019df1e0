package answer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/stream"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// workingReaction marks a question the bot is working on.
const workingReaction = "eyes"

// Agent answers a question given its thread's conversation, running
// code in the workspace and telling the observer it is given;
// [*agent.Agent] implements it. It returns a non-nil Outcome.
type Agent interface {
	Run(ctx context.Context, history []agent.Message, opts agent.RunOptions) (*agent.Outcome, error)
}

// react adds the working reaction to the question, or removes it. A
// call that finds its work done is a success: the reaction already there
// (a replica that took the question over from one that reacted and died)
// or already gone (someone removed it).
func (a *Answerer) react(ctx context.Context, ref slack.ItemRef, add bool, log *slog.Logger) {
	method, call, done := "reactions.add", a.api.AddReactionContext, "already_reacted"
	if !add {
		method, call, done = "reactions.remove", a.api.RemoveReactionContext, "no_reaction"
	}
	err := call(ctx, workingReaction, ref)
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); err == nil || ok && se.Err == done || ctx.Err() != nil {
		return // done, or not to be done: the bot is shutting down
	}
	log.Warn(method+" failed", "err", slackapi.Explain(err))
	a.metrics.errors.WithLabelValues("slack").Inc()
}

// answer answers m in its thread. A follow-up (a reply without a mention)
// is answered only in threads the bot has taken part in.
func (a *Answerer) answer(ctx context.Context, m Question, isFollowUp bool) {
	start := time.Now()
	log := a.log.With("channel", m.Channel, "thread", m.ThreadTS, "user", m.User)
	done := m.Done
	if done == nil {
		done = func(Info, error) {}
	}

	history, foreign, ours, err := a.memory.History(ctx, m.Channel, m.ThreadTS, m.TS, !isFollowUp)
	if err != nil {
		if isFollowUp {
			log.Warn("could not read thread; follow-up ignored", "err", err)
			return
		}
		log.Warn("could not read thread history; answering without it", "err", err)
	}
	if isFollowUp && !ours {
		return // a conversation among humans
	}
	a.metrics.questions.Inc()
	if strings.TrimSpace(m.Text) == "" {
		if len(m.Files) == 0 {
			a.Notice(ctx, m, "I didn't find a question in your message. Ask me something like _what is the 20th Fibonacci number?_")
			done(Info{}, errors.New("no question"))
			return
		}
		m.Text = thread.FilesOnlyQuestion
	}
	if a.title != nil {
		a.title(m, history)
	}

	settings := a.settings.Get(m.Channel)
	debug := settings.Debug
	ref := slack.NewRefToMessage(m.Channel, m.TS)
	a.react(ctx, ref, true, log)
	status := a.keepStatus(ctx, m)
	a.session(ctx, m, slack.AgentSessionStatusProcessing) // Slack's own stop control

	actx, cancel := context.WithTimeout(ctx, a.lim.Answer)
	actx, stopped := a.running.start(actx, m) // the Stop button's
	if len(m.Files) > 0 {
		status.set("is reading your files…")
	}
	files := a.workspaces.ForAnswer(m.Channel, m.ThreadTS, m.TS, log)
	defer files.Close()
	if settings.StateOff {
		files.KeepNoState()
	}
	inputs := a.gatherFiles(actx, m, history, foreign, files, log)
	if len(inputs.refused) > 0 {
		a.Notice(ctx, m, refusedText(inputs.refused, inputs.refusedEarlier))
	}
	msgs, filesDesc, caps := thread.Messages(actx, thread.Trim(history), m.Text, inputs.files, inputs.notes)
	for _, c := range caps {
		a.metrics.caps.WithLabelValues(string(c)).Inc()
		log.Warn("a cap fired while preparing the question", "cap", c)
	}
	p := &cardPoster{a: a, m: m, debug: debug, log: log, status: status, files: files,
		stop: Key{Channel: m.Channel, ThreadTS: m.ThreadTS, QuestionTS: m.TS}.StopValue(m.User)}
	stream := a.stream.Start(stream.Target{Channel: m.Channel, ThreadTS: m.ThreadTS, QuestionTS: m.TS, User: m.User, IM: m.IM}, log, p) // the model's text, then p's cards
	opts := agent.RunOptions{Workspace: files, Observer: stream, User: m.User, Channel: m.Channel}
	if a.sources != nil {
		opts.Sources, opts.Instructions = a.sources(m, settings)
	}
	out, err := a.agent.Run(actx, msgs, opts)
	by := stopped()
	if out == nil {
		out = &agent.Outcome{}
	}
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	status.stop()

	// Post even when ctx was cancelled (shutdown): the user is owed a word.
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), slackapi.CallTimeout)
	defer pcancel()
	p.finishOpen(pctx, by)
	a.session(pctx, m, slack.AgentSessionStatusActive)

	a.react(pctx, ref, false, log)
	turn := thread.Turn{User: m.User, TS: m.TS, Question: m.Text, Runs: p.runs, Files: m.Files, Outputs: p.outputs}
	text := answerText(out)
	answered := err == nil && by == "" && strings.TrimSpace(text) != ""
	if answered {
		turn.Answer = text
	}
	// Remember the turn before posting: a follow-up can come as soon as
	// the answer shows.
	a.memory.Record(m.Channel, m.ThreadTS, turn)
	switch {
	case answered:
		var footer string
		if debug {
			footer = fmt.Sprintf(":lady_beetle: model %s · %d steps · %s tokens in, %s out · %s total",
				render.Escape(safetext.Line(cmp.Or(out.Model, "unknown"))), out.Steps, render.Thousands(out.Usage.InputTokens), render.Thousands(out.Usage.OutputTokens), render.Duration(time.Since(start)))
		}
		info := Info{
			Channel: m.Channel, ThreadTS: m.ThreadTS, QuestionTS: m.TS, Asker: m.User, Team: a.team,
			Question: m.Text, Answer: text, Model: out.Model, Debug: debug,
			Runs: p.shown, Queries: p.queries, Files: filesDesc, Notes: inputs.notes, Earlier: history,
			extra: m.Footer,
		}
		shown, cut := stream.Deliver(pctx, text, footer, func(ts string) []slack.Block {
			info := info
			info.TS = ts
			return a.answerFooter(pctx, info)
		})
		switch {
		case !shown:
			a.postAnswer(pctx, m, text, footer, info)
		case cut:
			a.upload(pctx, m, render.Attachment{Name: "answer.md", Title: "Full answer", Content: text})
		}
		a.metrics.answerSeconds.Observe(time.Since(start).Seconds())
		done(info, nil)
	case by != "":
		stream.Abandon(pctx)
		a.Notice(pctx, m, stopNotice(by))
		done(Info{}, fmt.Errorf("stopped by %s", by))
	default:
		stream.Abandon(pctx)
		kind, text := failureText(ctx, err, timedOut, out, a.lim.Answer)
		a.metrics.errors.WithLabelValues(kind).Inc()
		log.Warn("no answer", "kind", kind, "err", err, "steps", out.Steps)
		why := "the model gave none"
		if err != nil {
			why = userError(err)
		}
		done(Info{}, fmt.Errorf("no answer (%s): %s", kind, why))
		if text == "" {
			break // handed on: another replica answers
		}
		if debug && err != nil {
			text += "\n:lady_beetle: `" + render.Escape(render.Truncate(err.Error(), 500)) + "`"
		}
		a.Notice(pctx, m, text)
	}
}

// answerText is the answer to post for a run: the model's last text, with
// a word when its output limit cut it or when it declined to answer; ""
// when the step limit stopped it.
func answerText(out *agent.Outcome) string {
	text := out.Answer
	switch out.Stop {
	case agent.StopStepLimit:
		return ""
	case agent.StopLength:
		if text != "" {
			text += "\n\n_(The answer was cut off by the model's output limit.)_"
		}
	case agent.StopRefused:
		if strings.TrimSpace(text) == "" {
			text = "_The model declined to answer this question._"
		}
	}
	return text
}

// failureText says in one line what went wrong, for the thread.
func failureText(ctx context.Context, err error, timedOut bool, out *agent.Outcome, limit time.Duration) (kind, text string) {
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx)
	case timedOut:
		return "timeout", fmt.Sprintf(":stopwatch: I gave up after %s without an answer. Try a simpler question, or split it into steps.", render.Duration(limit))
	case out.Stop == agent.StopStepLimit:
		return "step_limit", fmt.Sprintf(":warning: I stopped after %d steps without reaching an answer. Try a narrower question, or tell me what to try next.", out.Steps)
	case err == nil:
		return "empty", ":warning: The model finished without an answer. Please try rephrasing the question."
	default:
		return "model", ":warning: I couldn't get an answer from the language model (" + render.Escape(render.Truncate(userError(err), 400)) + "). Please try again in a moment."
	}
}

// interrupted says why an answer's context ended, for its thread: a user
// stopped it (through any replica), or the bot is shutting down. The text
// is empty when nothing should be posted: the question was handed back,
// or taken over, and another replica answers it.
func interrupted(ctx context.Context) (kind, text string) {
	cause := context.Cause(ctx)
	var stop *replica.StopError
	switch {
	case errors.As(cause, &stop):
		if stop.By != "" {
			return "stopped", fmt.Sprintf(":octagonal_sign: Stopped by <@%s>.", stop.By)
		}
		return "stopped", ":octagonal_sign: Stopped."
	case errors.Is(cause, replica.ErrShutdown):
		return "shutdown", ""
	case errors.Is(cause, replica.ErrLost):
		return "lost", ""
	}
	return "shutdown", ":warning: I was restarted before I could finish this answer. Please ask again."
}

// userError is an error's text without anything that could be a secret:
// only its outermost message's first line, neutralised
// ([safetext.Line]). For a model API's error, what to do about it comes
// before the server's own (often long) explanation, which is cut.
func userError(err error) string {
	s := err.Error()
	var ae *agent.APIError
	if errors.As(err, &ae) {
		s = ae.Provider
		if ae.StatusCode != 0 {
			s += " " + strings.TrimSpace(fmt.Sprintf("answered %d %s", ae.StatusCode, http.StatusText(ae.StatusCode)))
		}
		if ae.Retries > 0 {
			s += fmt.Sprintf(" after %d retries", ae.Retries)
		}
		if ae.Hint != "" {
			s += ". " + ae.Hint
		}
		if ae.Message != "" {
			s += " (" + render.Truncate(ae.Message, 120) + ")"
		}
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "sk-") || strings.HasPrefix(w, "xox") || strings.HasPrefix(w, "xapp-") {
			s = strings.ReplaceAll(s, w, "[redacted]")
		}
	}
	return safetext.Line(s)
}

// postAnswer posts the answer (Markdown) in the thread, in parts if
// long, ending with footer (mrkdwn) when it is not empty and the blocks
// of [Answerer.answerFooter]. The answer is neutralised first
// ([safetext.Text]): a model can be led by a file or a program's output
// to write escape sequences or bidi overrides.
func (a *Answerer) postAnswer(ctx context.Context, m Question, answer, footer string, info Info) {
	answer = safetext.Text(answer)
	text := render.Mrkdwn(answer)
	parts := render.SplitMrkdwn(text, render.AnswerMessageChars)
	var rest []string
	if len(parts) > render.AnswerMaxParts {
		parts, rest = parts[:render.AnswerMaxParts], parts[render.AnswerMaxParts:]
	}
	for i, part := range parts {
		var blocks []slack.Block
		for _, s := range render.SplitMrkdwn(part, render.SectionChars) {
			blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, s, false, false), nil, nil))
		}
		last := i == len(parts)-1
		if last && len(rest) > 0 {
			blocks = append(blocks, render.ContextBlock(":scissors: The answer is too long for Slack; the whole answer is attached as `answer.md`."))
		}
		if last && footer != "" {
			blocks = append(blocks, render.ContextBlock(footer))
		}
		if last {
			extra := a.answerFooter(ctx, info)
			blocks = append(blocks, extra[:max(0, min(len(extra), render.MaxBlocks-len(blocks)))]...)
		}
		opts := []slack.MsgOption{
			slack.MsgOptionTS(m.ThreadTS),
			slack.MsgOptionText(render.Truncate(part, render.FallbackTextChars), false),
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionDisableLinkUnfurl(),
		}
		if i == 0 {
			opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaAnswer, EventPayload: map[string]any{
				"answer":      render.Truncate(answer, render.MetadataTextChars),
				"question_ts": m.TS,
			}}))
		}
		if _, _, err := a.api.PostMessageContext(ctx, m.Channel, opts...); err != nil {
			a.log.Error("posting answer failed", "channel", m.Channel, "thread", m.ThreadTS, "err", slackapi.Explain(err))
			a.metrics.errors.WithLabelValues("slack").Inc()
			if slackapi.Refused(err) {
				// Slack refused the blocks: the answer still reaches the
				// user, as a file, with a word on why.
				a.Notice(ctx, m, fmt.Sprintf(":warning: Slack refused to show my answer (%s); it is attached as `answer.md`.", render.Escape(render.Truncate(safetext.Line(slackapi.Explain(err).Error()), 200))))
				a.upload(ctx, m, render.Attachment{Name: "answer.md", Title: "Answer", Content: answer})
			}
			return
		}
	}
	if len(rest) > 0 {
		a.upload(ctx, m, render.Attachment{Name: "answer.md", Title: "Full answer", Content: answer})
	}
}

// Notice posts a short message from the bot in m's thread: a word on
// m's answer, or a reply to a command. Its text is neutralised
// ([safetext.Text]) as a last guard: notices name files and quote errors.
func (a *Answerer) Notice(ctx context.Context, m Question, text string) {
	text = safetext.Text(text)
	_, _, err := a.api.PostMessageContext(ctx, m.Channel,
		slack.MsgOptionTS(m.ThreadTS),
		slack.MsgOptionText(text, false),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaNotice, EventPayload: map[string]any{"question_ts": m.TS}}),
	)
	if err != nil {
		a.log.Error("posting to thread failed", "channel", m.Channel, "thread", m.ThreadTS, "err", slackapi.Explain(err))
	}
}

// upload attaches a text file to the thread: code, output or an answer
// that did not fit in a message. Its name, title and text are neutralised
// ([safetext]) as a last guard, since Slack shows a text file's content.
func (a *Answerer) upload(ctx context.Context, m Question, f render.Attachment) {
	f.Name, f.Title, f.Content = safetext.Line(f.Name), safetext.Line(f.Title), safetext.Text(f.Content)
	_, err := a.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: f.Name, Title: f.Title, Content: f.Content, FileSize: len(f.Content),
		Channel: m.Channel, ThreadTimestamp: m.ThreadTS,
	})
	if err != nil {
		a.log.Error("uploading file failed", "file", f.Name, "err", slackapi.Explain(err))
		a.metrics.errors.WithLabelValues("slack").Inc()
		a.Notice(ctx, m, fmt.Sprintf(":warning: I couldn't attach `%s` to this thread (%s).", render.Escape(f.Name), render.Escape(safetext.Line(slackapi.Explain(err).Error()))))
	}
}
