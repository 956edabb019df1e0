// Package numcheck checks the numbers in a model's answer against what the
// conversation holds: the question, the code and output of the runs, the
// previews of the files, and earlier turns. A number found in none of them
// is returned, so that readers can be told which figures the model did not
// compute.
//
// It accepts what a person would accept: thousands separators (including
// German ones), rounding or truncation to the precision the answer states
// (0.5155466 is "0.516", "0.52", "51.55%" or "51.6%"), percentages of
// fractions and fractions of percentages, scientific notation ("1.2e-05",
// "1.2 × 10⁻⁵"), scale words ("1.23 million", "$343k"), exact fractions
// ("671/1296") and any sign.
//
// False alarms are worse than misses, so the following are never reported:
// integers from 0 to 10, years, dates, clock times, ordinals, versions, list
// and heading numbers, footnote markers, numbers in links and identifiers,
// numbers in fenced code blocks tagged with a programming language (code the
// answer suggests), conventional constants (π, e, significance and confidence
// levels, powers of ten, the 1.96 and 1.5 × IQR rules), and numbers one
// arithmetic step (+, −, ×, ÷) from two numbers the answer shows or the
// question states ("x = 42, so twice that is 84"): a reader can check those
// on the spot. Numbers the model computed in its head in more than one step,
// or took from its own knowledge, are reported.
//
// The work is bounded: a source is scanned up to [MaxSourceBytes] (its head
// and tail when longer), all sources together up to [MaxTotalSourceBytes],
// and the answer up to [MaxAnswerBytes] and [MaxAnswerNumbers]. Check keeps
// no state and is safe for concurrent use.
package numcheck

import (
	"fmt"
	"strings"
)

// Budgets bounding the work of one Check.
const (
	// MaxAnswerBytes is how much of the answer is read; numbers past it
	// are not checked.
	MaxAnswerBytes = 64 << 10
	// MaxAnswerNumbers is how many numbers of the answer are checked;
	// later ones are not.
	MaxAnswerNumbers = 256
	// MaxSourceBytes is how much of one source (a question, a run's code
	// or output, a preview, an earlier turn) is scanned: when it is
	// longer, its first three quarters of this and its last quarter,
	// where programs print their results.
	MaxSourceBytes = 256 << 10
	// MaxTotalSourceBytes is how much of all the sources together is
	// scanned; sources past it are not.
	MaxTotalSourceBytes = 4 << 20
	// MaxWarningNumbers is how many numbers Warning lists before it says
	// how many more there are.
	MaxWarningNumbers = 10
)

// Sources is what the conversation holds.
type Sources struct {
	// Question is this turn's question.
	Question string
	// Runs are this turn's runs of code.
	Runs []Run
	// Files are the previews of the files the model was shown.
	Files []string
	// Earlier are earlier turns' questions, answers and run outputs.
	Earlier []string
}

// Run is one run of code: what the model wrote and what it printed.
type Run struct {
	// Code is the program.
	Code string
	// Output is what the model was shown of its output: standard output
	// and standard error (a traceback is a source too).
	Output string
}

// Unverified is a number of the answer found in none of the sources.
type Unverified struct {
	// Text is the number as written in the answer, with an attached
	// sign, currency symbol, percent sign or scale word: "43.7",
	// "$16,288.95", "12%", "1.08 billion".
	Text string
	// Value is the number it stands for, with its sign and scale word
	// applied but a percentage left as written: "−2.5%" is -2.5, "$45k"
	// is 45000, "1.2 × 10⁻⁵" is 1.2e-05.
	Value float64
}

// Check returns the numbers in answer (Markdown) found in none of the
// sources, in the order they first appear, each once.
func Check(answer string, src Sources) []Unverified {
	var out []Unverified
	seen := make(map[string]bool)
	for _, f := range Figures(answer, src) {
		if f.Verified || seen[f.Text] {
			continue
		}
		seen[f.Text] = true
		out = append(out, Unverified{Text: f.Text, Value: f.Value})
	}
	return out
}

// A Figure is a number of an answer worth checking, with what names it
// and whether the sources hold it.
type Figure struct {
	// Text and Value are as in [Unverified].
	Text  string
	Value float64
	// Label is what names the number on its line: the table cell
	// before it, or the words before it in its list item or clause,
	// without Markdown ("North", "Revenue (EU)"); "" when nothing does.
	Label string
	// Verified: a source holds it, or it is one step from numbers that
	// do (see the package doc).
	Verified bool
}

// Figures returns the numbers in answer (Markdown) worth checking, in
// the order they appear, each with its label and whether the sources
// hold it: what [Check] reads, for those who compare one answer's
// figures with another's.
func Figures(answer string, src Sources) []Figure {
	if len(answer) > MaxAnswerBytes {
		answer = answer[:MaxAnswerBytes]
	}
	items := extract(answer)
	if len(items) == 0 {
		return nil
	}
	m := newMatcher(items)
	if m.pending > 0 {
		m.scanSources(src)
	}
	if m.unverifiedItems() > 0 {
		m.derive(questionNumbers(src.Question))
	}
	out := make([]Figure, len(items))
	for i := range items {
		it := &items[i]
		out[i] = Figure{Text: it.text, Value: it.value, Label: it.label, Verified: m.itemVerified(it)}
	}
	return out
}

// Warning formats the numbers for a line shown with the answer, without
// an emoji: "not found in any run's output: 43.7, 12%". It lists at most
// MaxWarningNumbers and says how many more there are; it returns "" when
// there are none.
func Warning(nums []Unverified) string {
	if len(nums) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("not found in any run's output: ")
	for i, n := range nums {
		if i == MaxWarningNumbers {
			fmt.Fprintf(&b, " and %d more", len(nums)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n.Text)
	}
	return b.String()
}
