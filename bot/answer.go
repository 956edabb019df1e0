package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// workingReaction marks a question the bot is working on.
const workingReaction = "eyes"

// answer answers m in its thread. A follow-up (a reply without a mention)
// is answered only in threads the bot has taken part in.
func (b *Bot) answer(ctx context.Context, m message, isFollowUp bool) {
	start := time.Now()
	log := b.log.With("channel", m.Channel, "thread", m.ThreadTS, "user", m.User)

	history, threadFiles, ours, err := b.memory.history(ctx, m.Channel, m.ThreadTS, m.TS, !isFollowUp)
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
	b.metrics.questions.inc()
	if strings.TrimSpace(m.Text) == "" {
		if len(m.Files) == 0 {
			b.notice(ctx, m, "I didn't find a question in your message. Ask me something like _what is the 20th Fibonacci number?_")
			return
		}
		m.Text = filesOnlyQuestion
	}

	debug := b.settings.get(m.Channel).Debug
	ref := slack.NewRefToMessage(m.Channel, m.TS)
	if err := b.api.AddReactionContext(ctx, workingReaction, ref); err != nil {
		log.Debug("reactions.add failed", "err", err)
	}
	status := b.keepStatus(ctx, m)

	actx, cancel := context.WithTimeout(ctx, b.cfg.AnswerTimeout)
	if len(m.Files) > 0 {
		status.set("is reading your files…")
	}
	inputs := b.gatherFiles(actx, m, history, threadFiles, log)
	if len(inputs.refused) > 0 {
		b.notice(ctx, m, refusedText(inputs.refused, inputs.refusedEarlier))
	}
	p := &cardPoster{b: b, m: m, debug: debug, log: log, status: status, tf: inputs.tf}
	defer func() {
		if p.tf != nil {
			p.tf.close()
		}
	}()
	ans, err := b.cfg.Answerer.Answer(actx, Question{
		Channel: m.Channel, ThreadTS: m.ThreadTS, User: m.User, Text: m.Text, History: historyBudgeted(history),
		Files: inputs.files, FileNotes: inputs.notes, FilesSize: b.cfg.Files.RunSize + b.cfg.SandboxLimits.WithDefaults().DiskSize,
	}, p)
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	status.stop()

	// Post even when ctx was cancelled (shutdown): the user is owed a word.
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), slackCallTimeout)
	defer pcancel()
	p.finishOpen(pctx)

	if err := b.api.RemoveReactionContext(pctx, workingReaction, ref); err != nil {
		log.Debug("reactions.remove failed", "err", err)
	}
	turn := Turn{User: m.User, TS: m.TS, Question: m.Text, Runs: p.runs, Files: m.Files, Outputs: p.outputs}
	answered := err == nil && strings.TrimSpace(ans.Text) != ""
	if answered {
		turn.Answer = ans.Text
	}
	// Remember the turn before posting: a follow-up can come as soon as
	// the answer shows.
	b.memory.record(m.Channel, m.ThreadTS, turn)
	switch {
	case answered:
		b.postAnswer(pctx, m, ans, debug, time.Since(start))
		b.metrics.answerSeconds.observe(time.Since(start).Seconds())
	default:
		kind, text := failureText(ctx, err, timedOut, ans, b.cfg.AnswerTimeout)
		b.metrics.errors.inc(kind)
		log.Warn("no answer", "kind", kind, "err", err, "steps", ans.Steps)
		if debug && err != nil {
			text += "\n:lady_beetle: `" + escape(truncate(err.Error(), 500)) + "`"
		}
		b.notice(pctx, m, text)
	}
}

// failureText says in one line what went wrong, for the thread.
func failureText(ctx context.Context, err error, timedOut bool, ans Answer, limit time.Duration) (kind, text string) {
	switch {
	case ctx.Err() != nil:
		return "shutdown", ":warning: I was restarted before I could finish this answer. Please ask again."
	case timedOut:
		return "timeout", fmt.Sprintf(":stopwatch: I gave up after %s without an answer. Try a simpler question, or split it into steps.", formatDuration(limit))
	case errors.Is(err, ErrStepLimit) || (err == nil && ans.Incomplete != ""):
		return "step_limit", fmt.Sprintf(":warning: I stopped after %d steps without reaching an answer. Try a narrower question, or tell me what to try next.", ans.Steps)
	case err == nil:
		return "empty", ":warning: The model finished without an answer. Please try rephrasing the question."
	default:
		return "model", ":warning: I couldn't get an answer from the language model (" + escape(truncate(userError(err), 400)) + "). Please try again in a moment."
	}
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
			s += " (" + truncate(ae.Message, 120) + ")"
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

// postAnswer posts the answer in the thread, in parts if long, with a
// debug footer when the channel has debug on. The answer is neutralised
// first ([safetext.Text]): a model can be led by a file or a program's
// output to write escape sequences or bidi overrides.
func (b *Bot) postAnswer(ctx context.Context, m message, ans Answer, debug bool, took time.Duration) {
	ans.Text = safetext.Text(ans.Text)
	text := markdownToMrkdwn(ans.Text)
	parts := splitMrkdwn(text, answerMessageChars)
	var rest []string
	if len(parts) > answerMaxParts {
		parts, rest = parts[:answerMaxParts], parts[answerMaxParts:]
	}
	for i, part := range parts {
		var blocks []slack.Block
		for _, s := range splitMrkdwn(part, slackSectionChars) {
			blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, s, false, false), nil, nil))
		}
		last := i == len(parts)-1
		if last && len(rest) > 0 {
			blocks = append(blocks, contextBlock(":scissors: The answer is too long for Slack; the whole answer is attached as `answer.md`."))
		}
		if last && debug {
			blocks = append(blocks, contextBlock(fmt.Sprintf(":lady_beetle: model %s · %d steps · %s tokens in, %s out · %s total",
				escape(safetext.Line(cmp(ans.Model, "unknown"))), ans.Steps, thousands(ans.InputTokens), thousands(ans.OutputTokens), formatDuration(took))))
		}
		opts := []slack.MsgOption{
			slack.MsgOptionTS(m.ThreadTS),
			slack.MsgOptionText(truncate(part, fallbackTextChars), false),
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionDisableLinkUnfurl(),
		}
		if i == 0 {
			opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: metaAnswer, EventPayload: map[string]any{
				"answer":      truncate(ans.Text, metadataTextChars),
				"question_ts": m.TS,
			}}))
		}
		if _, _, err := b.api.PostMessageContext(ctx, m.Channel, opts...); err != nil {
			b.log.Error("posting answer failed", "channel", m.Channel, "thread", m.ThreadTS, "err", explain(err))
			b.metrics.errors.inc("slack")
			if _, refused := errors.AsType[slack.SlackErrorResponse](err); refused {
				// Slack refused the blocks: the answer still reaches the
				// user, as a file, with a word on why.
				b.notice(ctx, m, fmt.Sprintf(":warning: Slack refused to show my answer (%s); it is attached as `answer.md`.", escape(truncate(safetext.Line(explain(err).Error()), 200))))
				b.upload(ctx, m, attachment{Name: "answer.md", Title: "Answer", Content: ans.Text})
			}
			return
		}
	}
	if len(rest) > 0 {
		b.upload(ctx, m, attachment{Name: "answer.md", Title: "Full answer", Content: ans.Text})
	}
}

func contextBlock(text string) slack.Block {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, text, false, false))
}

// notice posts a short message from the bot in the thread. Its text is
// neutralised ([safetext.Text]) as a last guard: notices name files and
// quote errors.
func (b *Bot) notice(ctx context.Context, m message, text string) {
	text = safetext.Text(text)
	_, _, err := b.api.PostMessageContext(ctx, m.Channel,
		slack.MsgOptionTS(m.ThreadTS),
		slack.MsgOptionText(text, false),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: metaNotice, EventPayload: map[string]any{"question_ts": m.TS}}),
	)
	if err != nil {
		b.log.Error("posting to thread failed", "channel", m.Channel, "thread", m.ThreadTS, "err", explain(err))
	}
}

// upload attaches a text file to the thread: code, output or an answer
// that did not fit in a message. Its name, title and text are neutralised
// ([safetext]) as a last guard, since Slack shows a text file's content.
func (b *Bot) upload(ctx context.Context, m message, a attachment) {
	a.Name, a.Title, a.Content = safetext.Line(a.Name), safetext.Line(a.Title), safetext.Text(a.Content)
	_, err := b.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: a.Name, Title: a.Title, Content: a.Content, FileSize: len(a.Content),
		Channel: m.Channel, ThreadTimestamp: m.ThreadTS,
	})
	if err != nil {
		b.log.Error("uploading file failed", "file", a.Name, "err", explain(err))
		b.metrics.errors.inc("slack")
		b.notice(ctx, m, fmt.Sprintf(":warning: I couldn't attach `%s` to this thread (%s).", escape(a.Name), escape(safetext.Line(explain(err).Error()))))
	}
}

// cardPoster posts and updates the tool cards of one answer.
type cardPoster struct {
	b      *Bot
	m      message
	debug  bool
	log    *slog.Logger
	status *statusKeeper
	// tf is the thread's workspace, opened when the thread first has
	// files; tfFailed says it could not be.
	tf       *threadFiles
	tfFailed bool

	uploads int       // files posted so far
	outputs []fileRef // the files posted, for the thread's memory

	mu    sync.Mutex
	n     int
	cards map[string]*postedCard
	order []string
	runs  []Run
}

type postedCard struct {
	card
	ts string
}

func (p *cardPoster) RunStarted(ctx context.Context, id, code string) {
	p.mu.Lock()
	p.n++
	if p.cards == nil {
		p.cards = map[string]*postedCard{}
	}
	c := &postedCard{card: card{N: p.n, QuestionTS: p.m.TS, Code: code, Running: true, Debug: p.debug, Limits: p.b.cfg.SandboxLimits}}
	p.cards[id] = c
	p.order = append(p.order, id)
	p.mu.Unlock()
	p.status.set("is running Python…")

	ctx, cancel := slackContext(ctx)
	defer cancel()
	blocks, _ := c.render()
	_, ts, err := p.b.api.PostMessageContext(ctx, p.m.Channel,
		slack.MsgOptionTS(p.m.ThreadTS),
		slack.MsgOptionText(c.fallback(), false),
		slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionMetadata(c.metadata()),
	)
	if err != nil {
		p.log.Error("posting tool card failed", "err", explain(err))
		p.b.metrics.errors.inc("slack")
		return
	}
	p.mu.Lock()
	c.ts = ts
	p.mu.Unlock()
}

func (p *cardPoster) RunFinished(ctx context.Context, id string, res *sandbox.Result, runErr error, d time.Duration) {
	p.mu.Lock()
	c, ok := p.cards[id]
	if !ok { // a run we never saw start
		p.n++
		c = &postedCard{card: card{N: p.n, QuestionTS: p.m.TS, Debug: p.debug, Limits: p.b.cfg.SandboxLimits}}
		p.cards[id] = c
	}
	p.runs = append(p.runs, Run{Code: c.Code, Output: truncate(runOutput(res, runErr, c.Limits), runOutputHistoryChars)})
	p.mu.Unlock()

	var files []producedFile
	if res != nil && len(res.Files)+len(res.FilesOmitted) > 0 {
		p.status.set("is posting files…")
		files = p.deliver(ctx, c.N, res) // with its own timeout for the transfers
	}
	p.status.set("is thinking…")
	p.mu.Lock()
	c.Running, c.Result, c.Err, c.Duration, c.Files = false, res, runErr, d, files
	p.mu.Unlock()

	b := p.b
	b.metrics.toolRuns.inc(runResult(res, runErr))
	b.metrics.runSeconds.observe(d.Seconds())
	if caps := firedCaps(res); len(caps) > 0 {
		for _, c := range caps {
			b.metrics.caps.inc(string(c))
		}
		p.log.Warn("caps fired during a run", "run", c.N, "caps", caps)
	}
	if p.debug {
		p.log.Info("execution", "run", c.N, "code", c.Code, "output", runOutput(res, runErr, c.Limits), "duration", d)
	}
	ctx, cancel := slackContext(ctx)
	defer cancel()
	p.post(ctx, c)
}

// post posts or updates a card and attaches what did not fit.
func (p *cardPoster) post(ctx context.Context, c *postedCard) {
	b := p.b
	blocks, files := c.render()
	send := func(blocks []slack.Block) error {
		opts := []slack.MsgOption{
			slack.MsgOptionText(c.fallback(), false),
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionMetadata(c.metadata()),
		}
		var err error
		if c.ts != "" {
			_, _, _, err = b.api.UpdateMessageContext(ctx, p.m.Channel, c.ts, opts...)
		} else {
			_, c.ts, err = b.api.PostMessageContext(ctx, p.m.Channel, append(opts, slack.MsgOptionTS(p.m.ThreadTS))...)
		}
		return err
	}
	err := send(blocks)
	if _, refused := errors.AsType[slack.SlackErrorResponse](err); refused {
		// Slack refused these blocks (invalid_blocks, msg_too_long …):
		// show the run's state anyway, with its text in files.
		p.log.Warn("slack refused a tool card; posting it plain", "err", explain(err))
		blocks, files = c.plain(explain(err).Error())
		err = send(blocks)
	}
	if err != nil {
		p.log.Error("updating tool card failed", "err", explain(err))
		b.metrics.errors.inc("slack")
	}
	for _, f := range files {
		b.upload(ctx, p.m, f)
	}
}

// finishOpen marks cards still "running" (the answer was cut short) as
// stopped, so no card is left spinning.
func (p *cardPoster) finishOpen(ctx context.Context) {
	p.mu.Lock()
	var open []*postedCard
	for _, id := range p.order {
		if c := p.cards[id]; c.Running {
			c.Running = false
			c.Err = errors.New("stopped before the run finished")
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		p.post(ctx, c)
	}
}

// slackContext returns a context for Slack calls made for an answer: it
// outlives the answer's deadline (a card must show that its run ended)
// but not a stuck Slack.
func slackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), slackCallTimeout)
}

// CapFired counts a cap that fired for the answer outside its runs (a
// file preview cut to its budget while the question was put together),
// and logs it with the thread. It makes a cardPoster a [CapReporter].
func (p *cardPoster) CapFired(c sandbox.Cap) {
	p.b.metrics.caps.inc(string(c))
	p.log.Warn("a cap fired while preparing the question", "cap", c)
}

// firedCaps lists the caps and limits that fired during a run, each once:
// the sandbox's [sandbox.Result.Caps], "output" when the sandbox cut
// stdout or stderr (also from a backend that does not report it in Caps),
// "memory" when the run ran out of memory, and the [sandbox.Limit] that
// ended the run or was hit during it ("timeout", "cpu", "processes",
// "disk").
func firedCaps(res *sandbox.Result) []sandbox.Cap {
	if res == nil {
		return nil
	}
	caps := slices.Clone(res.Caps)
	add := func(c sandbox.Cap) {
		if !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	if res.Truncated() {
		add(sandbox.CapOutput)
	}
	if res.OutOfMemory {
		add(sandbox.CapMemory)
	}
	if res.Limit != sandbox.LimitNone {
		add(sandbox.Cap(res.Limit)) // "memory" is both a limit and a cap
	}
	return caps
}

func runResult(res *sandbox.Result, err error) string {
	switch {
	case err != nil:
		return "sandbox_error"
	case res.TimedOut:
		return "timeout"
	case res.OutOfMemory:
		return "oom"
	case res.ExitCode != 0:
		return "failed"
	}
	return "ok"
}
