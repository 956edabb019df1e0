package answer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// cardPoster shows an answer's run in its thread: it is the
// [agent.Observer] of the answer's run, and posts a tool card when an
// executeCode call starts, updates it when the call ends, and posts the
// files the run wrote; a runSQL call gets a query card the same way.
type cardPoster struct {
	a      *Answerer
	m      Question
	debug  bool
	log    *slog.Logger
	status *statusKeeper
	// files is the thread's workspace, where the tool kept the files
	// the runs wrote.
	files *thread.Workspace
	// stop is the value of the Stop button on running cards.
	stop string

	uploads int              // files posted so far
	tables  int              // tables shown so far
	outputs []thread.FileRef // the files posted, for the thread's memory

	mu    sync.Mutex
	n     int
	cards map[string]*postedCard
	order []string
	runs  []thread.Run // the runs and queries, for the thread's memory
	shown []Run        // the runs for the answer's footer
	// queryCards are the cards of runSQL calls, by call; queries the
	// queries for the answer's footer.
	queryCards map[string]*postedQuery
	queryOrder []string
	queries    []Query
}

// shownCard is a card the poster posts and updates: a tool card
// ([render.Card]) or a query card ([render.QueryCard]).
type shownCard interface {
	Blocks() ([]slack.Block, []render.Attachment)
	Plain(why string) ([]slack.Block, []render.Attachment)
	Fallback() string
	Metadata() slack.SlackMetadata
}

type postedCard struct {
	render.Card
	ts string
}

var _ agent.Observer = (*cardPoster)(nil)

func (p *cardPoster) StepStarted(context.Context, agent.StepEvent)  {}
func (p *cardPoster) AnswerDelta(context.Context, agent.DeltaEvent) {}
func (p *cardPoster) Finished(context.Context, agent.FinishEvent)   {}

// ToolCallStarted posts a running card for an executeCode call, and a
// running query card for a runSQL call.
func (p *cardPoster) ToolCallStarted(ctx context.Context, e agent.ToolCallEvent) {
	if e.Call.Name == datasource.QueryToolName {
		p.queryStarted(ctx, e)
		return
	}
	if e.Call.Name != agent.ExecuteCodeName {
		return
	}
	p.mu.Lock()
	c := p.card(e.Call.ID)
	c.Code, c.Running = e.Code, true
	p.mu.Unlock()
	p.status.set("is running Python…")

	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	blocks, _ := c.Blocks()
	_, ts, err := p.a.api.PostMessageContext(ctx, p.m.Channel,
		slack.MsgOptionTS(p.m.ThreadTS),
		slack.MsgOptionText(c.Fallback(), false),
		slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionMetadata(c.Metadata()),
	)
	if err != nil {
		p.log.Error("posting tool card failed", "err", slackapi.Explain(err))
		p.a.metrics.errors.WithLabelValues("slack").Inc()
		return
	}
	p.mu.Lock()
	c.ts = ts
	p.mu.Unlock()
}

// ToolCallFinished shows how an executeCode call ended: it posts the
// files the run wrote, updates the card, and counts the run. A runSQL
// call's query card shows how the query ended.
func (p *cardPoster) ToolCallFinished(ctx context.Context, e agent.ToolResultEvent) {
	if e.Call.Name == datasource.QueryToolName {
		p.queryFinished(ctx, e)
		return
	}
	if e.Call.Name != agent.ExecuteCodeName {
		return
	}
	res, runErr, d := e.Sandbox, e.Err, e.Duration
	by := stoppedBy(ctx) // the run was killed because someone stopped the answer
	p.mu.Lock()
	c := p.card(e.Call.ID)
	output := render.RunOutput(res, runErr)
	if by != "" {
		output = "[stopped by the user before it finished]"
	}
	p.runs = append(p.runs, thread.Run{Code: c.Code, Output: render.Truncate(output, render.RunOutputChars)})
	shown := Run{Code: c.Code, Result: e.Result.Content, Err: runErr}
	if res != nil {
		shown.Stdout, shown.Stderr, shown.ExitCode = string(res.Stdout), string(res.Stderr), res.ExitCode
	}
	p.shown = append(p.shown, shown)
	p.mu.Unlock()

	var files []render.ProducedFile
	var chartNotes []string
	if res != nil && len(res.Files)+len(res.FilesOmitted)+len(e.Charts) > 0 {
		p.status.set("is posting files…")
		files, chartNotes = p.deliver(ctx, c.N, res, e.Charts) // with its own timeout for the transfers
	}
	p.status.set("is thinking…")
	p.mu.Lock()
	c.Running, c.Result, c.Err, c.Duration, c.Files, c.StoppedBy, c.ChartNotes = false, res, runErr, d, files, by, chartNotes
	p.mu.Unlock()

	m := p.a.metrics
	m.toolRuns.WithLabelValues(runResult(res, runErr)).Inc()
	m.runSeconds.Observe(d.Seconds())
	if res != nil {
		m.sandboxRuns.WithLabelValues(runStart(res)).Inc()
	}
	if caps := firedCaps(res); len(caps) > 0 {
		for _, c := range caps {
			m.caps.WithLabelValues(string(c)).Inc()
		}
		p.log.Warn("caps fired during a run", "run", c.N, "caps", caps)
	}
	if p.debug {
		p.log.Info("execution", "run", c.N, "code", c.Code, "output", render.RunOutput(res, runErr), "duration", d)
	}
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	p.post(ctx, &c.Card, &c.ts)
}

// runStart is the start label of a run in sandpiper_sandbox_runs_total.
func runStart(res *sandbox.Result) string {
	if res.Warm {
		return "warm"
	}
	return "cold"
}

// card returns the card of the call id, new if need be; p.mu is held.
func (p *cardPoster) card(id string) *postedCard {
	if c, ok := p.cards[id]; ok {
		return c
	}
	if p.cards == nil {
		p.cards = map[string]*postedCard{}
	}
	p.n++
	c := &postedCard{Card: render.Card{N: p.n, QuestionTS: p.m.TS, Debug: p.debug, Limits: p.a.lim.Sandbox, Stop: p.stop}}
	p.cards[id] = c
	p.order = append(p.order, id)
	return c
}

// post posts the card (when *ts is "") or updates it (the message at
// *ts), and attaches what did not fit.
func (p *cardPoster) post(ctx context.Context, c shownCard, ts *string) {
	a := p.a
	blocks, files := c.Blocks()
	send := func(blocks []slack.Block) error {
		opts := []slack.MsgOption{
			slack.MsgOptionText(c.Fallback(), false),
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionMetadata(c.Metadata()),
		}
		var err error
		if *ts != "" {
			_, _, _, err = a.api.UpdateMessageContext(ctx, p.m.Channel, *ts, opts...)
		} else {
			_, *ts, err = a.api.PostMessageContext(ctx, p.m.Channel, append(opts, slack.MsgOptionTS(p.m.ThreadTS))...)
		}
		return err
	}
	err := send(blocks)
	if slackapi.Refused(err) {
		// Slack refused these blocks (invalid_blocks, msg_too_long …):
		// show the run's state anyway, with its text in files.
		p.log.Warn("slack refused a tool card; posting it plain", "err", slackapi.Explain(err))
		blocks, files = c.Plain(slackapi.Explain(err).Error())
		err = send(blocks)
	}
	if err != nil {
		p.log.Error("updating tool card failed", "err", slackapi.Explain(err))
		a.metrics.errors.WithLabelValues("slack").Inc()
	}
	for _, f := range files {
		a.upload(ctx, p.m, f)
	}
}

// finishOpen marks cards still "running" (the answer was cut short) as
// stopped, by the user by when it is not "", so no card is left spinning.
func (p *cardPoster) finishOpen(ctx context.Context, by string) {
	p.mu.Lock()
	var open []func()
	for _, id := range p.order {
		if c := p.cards[id]; c.Running {
			c.Running, c.StoppedBy, c.Err = false, by, errors.New("stopped before the run finished")
			open = append(open, func() { p.post(ctx, &c.Card, &c.ts) })
		}
	}
	for _, id := range p.queryOrder {
		if c := p.queryCards[id]; c.Running {
			c.Running, c.StoppedBy, c.Err = false, by, errors.New("stopped before the query finished")
			open = append(open, func() { p.post(ctx, &c.QueryCard, &c.ts) })
		}
	}
	p.mu.Unlock()
	for _, post := range open {
		post()
	}
}

// firedCaps lists the caps and limits that fired during a run, each once:
// the sandbox's [sandbox.Result.Caps], "output" when the sandbox cut
// stdout or stderr (also from a backend that does not report it in Caps),
// and the [sandbox.Limit] that ended the run or was hit during it
// ("timeout", "memory", "cpu", "processes", "disk").
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
	if res.Limit != sandbox.LimitNone {
		add(sandbox.Cap(res.Limit)) // "memory" is both a limit and a cap
	}
	return caps
}

func runResult(res *sandbox.Result, err error) string {
	switch sandbox.VerdictOf(res, err).Kind {
	case sandbox.VerdictOK:
		return "ok"
	case sandbox.VerdictTimeout:
		return "timeout"
	case sandbox.VerdictMemory:
		return "oom"
	case sandbox.VerdictStopped, sandbox.VerdictError:
		return "sandbox_error"
	}
	return "failed"
}
