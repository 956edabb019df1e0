package answer

import (
	"context"
	"sync"

	"github.com/sandpiper-bot/sandpiper/agent/numcheck"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
	"github.com/slack-go/slack"
)

// Info is what the blocks ending an answer (its [Footer]s) may draw on: where the answer is, what was asked, what the model said and
// what the runs printed — everything a check of the answer's numbers
// (agent/numcheck.Sources) needs — and the thread before it.
type Info struct {
	// Channel and ThreadTS are the answer's thread; QuestionTS and Asker
	// the question's message and its author.
	Channel    string
	ThreadTS   string
	QuestionTS string
	Asker      string
	// TS is the ts of the message the footer goes in when it is known
	// before the footer is built (a streamed answer's message); "" when
	// the message is posted with the footer (a click's payload carries
	// the message's ts).
	TS string
	// Team is the workspace the answer is in.
	Team string

	Question string // the question, the bot's mention removed
	// Answer is the answer as the model wrote it (Markdown, before
	// conversion and neutralisation).
	Answer string
	Model  string
	Debug  bool // the channel has debug on

	// Runs are this turn's executeCode runs, in order; Queries its
	// runSQL calls.
	Runs    []Run
	Queries []Query
	// Files describes the files in the runs' working directory as the
	// model was shown them (kinds, sizes, previews); Notes are the files
	// left out, and why.
	Files string
	Notes []string
	// Earlier are the thread's turns before this one (questions, runs
	// and answers), oldest first.
	Earlier []thread.Turn

	extra Footer // the question's own (Question.Footer)
}

// Figures returns the numbers of the answer with their labels and
// whether the conversation holds them, as the number check reads them.
func (ans Info) Figures() []numcheck.Figure { return numcheck.Figures(ans.Answer, numberSources(ans)) }

// Run is one executeCode run of an answer.
type Run struct {
	Code string
	// Stdout and Stderr are what the sandbox kept of the program's
	// output; Result is the tool result the model read (JSON, at most
	// 32 KiB, which may cut them).
	Stdout, Stderr string
	ExitCode       int
	Result         string
	// Err is set when the code did not run (the sandbox failed, or the
	// answer was stopped during the run).
	Err error
}

// Footer returns blocks to end an answer with, or nil. Features that add
// to every answer (the bot's feedback buttons, the number check) are
// Footers, added with [Answerer.AddFooter] when the bot is built.
type Footer func(ctx context.Context, ans Info) []slack.Block

// footers are the Footers of an Answerer, in the order added.
type footers struct {
	mu sync.RWMutex
	fs []Footer
}

// AddFooter adds f to the functions whose blocks end each answer, after
// those added before it (the number check's, with [Deps].NumberCheck,
// comes first).
func (a *Answerer) AddFooter(f Footer) {
	a.footers.mu.Lock()
	defer a.footers.mu.Unlock()
	a.footers.fs = append(a.footers.fs, f)
}

// answerFooter returns the blocks that end an answer: they go at the end
// of the answer's last message (after its text, in chat.stopStream's
// blocks for a streamed answer, or in the last chat.postMessage of an
// answer posted whole). It returns nil when there is nothing to add.
// The blocks share the message with the answer's text: each Footer
// should keep within a few blocks and about 1,000 characters.
func (a *Answerer) answerFooter(ctx context.Context, ans Info) []slack.Block {
	a.footers.mu.RLock()
	fs := a.footers.fs
	a.footers.mu.RUnlock()
	var blocks []slack.Block
	if ans.extra != nil {
		blocks = append(blocks, ans.extra(ctx, ans)...)
	}
	for _, f := range fs {
		blocks = append(blocks, f(ctx, ans)...)
	}
	return blocks
}

// numberCheckBlockID marks the line that lists an answer's numbers found
// in none of the conversation's sources.
const numberCheckBlockID = "sandpiper_number_check"

// numberCheckFooter is the [Footer] of the number check: a
// context line starting with :warning: that lists the numbers of the
// answer found nowhere in what the conversation holds ("not found in any
// run's output: 43.7"), or nothing when every number is accounted for.
func (a *Answerer) numberCheckFooter(_ context.Context, ans Info) []slack.Block {
	nums := numcheck.Check(ans.Answer, numberSources(ans))
	if len(nums) == 0 {
		return nil
	}
	a.metrics.unverified.Add(float64(len(nums)))
	a.log.Info("numbers of the answer not found in the conversation", "channel", ans.Channel, "thread", ans.ThreadTS, "count", len(nums))
	text := ":warning: " + render.Escape(render.Truncate(safetext.Line(numcheck.Warning(nums)), numberCheckChars))
	return []slack.Block{slack.NewContextBlock(numberCheckBlockID, slack.NewTextBlockObject(slack.MarkdownType, text, false, false))}
}

// numberSources is what the conversation holds for the number check: the
// question, this turn's runs (code and what they printed, or why they did
// not run) and queries (the SQL, the result the model read and the rows
// the card shows), the files as the model was shown them, and the
// earlier turns the model was shown (questions, runs, queries and
// answers: a follow-up may repeat an earlier result).
func numberSources(ans Info) numcheck.Sources {
	src := numcheck.Sources{Question: ans.Question}
	for _, r := range ans.Runs {
		out := r.Stdout
		if r.Stderr != "" {
			out += "\n" + r.Stderr
		}
		if r.Err != nil {
			out += "\n" + r.Err.Error()
		}
		src.Runs = append(src.Runs, numcheck.Run{Code: r.Code, Output: out})
	}
	for _, q := range ans.Queries {
		src.Runs = append(src.Runs, numcheck.Run{Code: q.SQL, Output: queryText(q)})
	}
	if ans.Files != "" {
		src.Files = append(src.Files, ans.Files)
	}
	src.Files = append(src.Files, ans.Notes...)
	for _, t := range ans.Earlier {
		if t.Ignored {
			continue // not shown to the model
		}
		src.Earlier = append(src.Earlier, t.Question, t.Answer)
		for _, r := range t.Runs {
			src.Earlier = append(src.Earlier, r.Code+r.SQL, r.Output)
		}
	}
	return src
}
