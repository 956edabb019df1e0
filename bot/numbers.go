package bot

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent/numcheck"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// numberCheckBlockID marks the line that lists an answer's numbers found
// in none of the conversation's sources.
const numberCheckBlockID = "sandpiper_number_check"

// numberCheckFooter is the footer ([footerFunc]) of the number check: a
// context line starting with :warning: that lists the numbers of the
// answer found nowhere in what the conversation holds ("not found in any
// run's output: 43.7"), or nothing when every number is accounted for.
func (b *Bot) numberCheckFooter(_ context.Context, ans answerInfo) []slack.Block {
	nums := numcheck.Check(ans.Answer, numberSources(ans))
	if len(nums) == 0 {
		return nil
	}
	b.metrics.unverified.Add(float64(len(nums)))
	b.log.Info("numbers of the answer not found in the conversation", "channel", ans.Channel, "thread", ans.ThreadTS, "count", len(nums))
	text := ":warning: " + render.Escape(render.Truncate(safetext.Line(numcheck.Warning(nums)), numberCheckChars))
	return []slack.Block{slack.NewContextBlock(numberCheckBlockID, slack.NewTextBlockObject(slack.MarkdownType, text, false, false))}
}

// numberSources is what the conversation holds for the number check: the
// question, this turn's runs (code and what they printed, or why they did
// not run), the files as the model was shown them, and the earlier turns
// the model was shown (questions, runs and answers: a follow-up may
// repeat an earlier result).
func numberSources(ans answerInfo) numcheck.Sources {
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
			src.Earlier = append(src.Earlier, r.Code, r.Output)
		}
	}
	return src
}
