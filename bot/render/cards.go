package render

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Card is one executeCode run as shown in a thread.
type Card struct {
	N          int    // run number within the answer, from 1
	QuestionTS string // the ts of the question the run answers
	Code       string // the Python the model wrote
	Running    bool
	Result     *sandbox.Result // nil while running or when the sandbox failed
	Err        error           // the sandbox machinery failed
	Duration   time.Duration
	Debug      bool // the channel has debug on
	Limits     sandbox.Limits
	Files      []ProducedFile // what the run wrote, and what became of it
	// Stop is the value of the Stop button a running card shows
	// (the answer's key and asker); "" shows none.
	Stop string
	// StoppedBy is the user who stopped the answer during this run.
	StoppedBy string
	// ChartNotes say why a chart the run drew was posted as its image,
	// not as Slack's own chart; a card in debug shows them.
	ChartNotes []string
}

// Attachment is a file posted in the thread after a card or an answer.
type Attachment struct {
	Name    string
	Title   string
	Content string
}

// runVerdict is how the run ended, as the sandbox says it; a run the
// asker stopped is stopped, whatever the sandbox returned.
func (c *Card) runVerdict() sandbox.Verdict {
	if c.StoppedBy != "" {
		return sandbox.Stopped()
	}
	return sandbox.VerdictOf(c.Result, c.Err)
}

// failed reports whether the run did not end normally.
func (c *Card) failed() bool { return c.runVerdict().Failed() }

func (c *Card) codeFile() string   { return fmt.Sprintf("code-%d.py", c.N) }
func (c *Card) outputFile() string { return fmt.Sprintf("output-%d.txt", c.N) }
func (c *Card) stderrFile() string { return fmt.Sprintf("stderr-%d.txt", c.N) }

// heading is the card's first words, in bold, and their emoji, by the
// kind of the run's verdict; the verdict's phrase follows them.
func (c *Card) heading() (emoji, words string) {
	if c.Running {
		return ":hourglass_flowing_sand:", "Running Python"
	}
	if errors.Is(c.Err, ErrInterrupted) {
		return ":leftwards_arrow_with_hook:", "Interrupted"
	}
	switch v := c.runVerdict(); v.Kind {
	case sandbox.VerdictOK:
		return ":white_check_mark:", "Ran Python"
	case sandbox.VerdictExit:
		return ":x:", "Python failed"
	case sandbox.VerdictTimeout, sandbox.VerdictCPU:
		return ":stopwatch:", "Python stopped"
	case sandbox.VerdictMemory:
		return ":boom:", "Python stopped"
	case sandbox.VerdictGone:
		return ":warning:", "Sandbox gone"
	case sandbox.VerdictStopped:
		return ":octagonal_sign:", capital(v.Phrase)
	}
	return ":warning:", capital(c.runVerdict().Phrase)
}

// capital is s with its first letter upper case.
func capital(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// phrase is the verdict's phrase and note, made safe to show.
func (c *Card) phrase() string { return Escape(safetext.Line(c.runVerdict().String())) }

// status is the card's first line.
func (c *Card) status() string {
	emoji, words := c.heading()
	s := fmt.Sprintf("%s *%s* (run %d)", emoji, words, c.N)
	switch {
	case c.Running:
		return s + "…"
	case errors.Is(c.Err, ErrInterrupted):
		return s + ": the bot running it stopped, and the question was picked up again."
	case c.StoppedBy != "":
		return fmt.Sprintf("%s by %s after %s. Nothing more was run or asked of the model.", s, UserMention(c.StoppedBy), Duration(c.duration()))
	case c.Result == nil:
		return s + ". The model was told why."
	}
	return fmt.Sprintf("%s · %s · %s", s, c.phrase(), Duration(c.duration()))
}

// Fallback is the card's notification text.
func (c *Card) Fallback() string {
	_, words := c.heading()
	s := fmt.Sprintf("%s (run %d)", words, c.N)
	switch {
	case c.Running:
		return s + "…"
	case c.Result == nil, c.StoppedBy != "":
		return s
	}
	return s + ", " + c.phrase()
}

func (c *Card) duration() time.Duration {
	if c.Result != nil && c.Result.Duration > 0 {
		return c.Result.Duration
	}
	return c.Duration
}

// Blocks returns the card's blocks and the files to attach for what did
// not fit. Everything the model or the program wrote (the code, its
// output, file names, the sandbox's notes) is neutralised with
// [safetext] before it is cut, so the cuts count what Slack receives.
func (c *Card) Blocks() ([]slack.Block, []Attachment) {
	var blocks []slack.Block
	var files []Attachment
	var notes []string
	mrkdwn := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	section := func(s string) { blocks = append(blocks, slack.NewSectionBlock(mrkdwn(s), nil, nil)) }

	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(c.status())))

	// Limits count the text Slack gets, after escaping: "<td>" is 10.
	blocks = append(blocks, sourceSection(safetext.Text(c.Code), "code", "the full code", Attachment{Name: c.codeFile(), Title: fmt.Sprintf("Code of run %d", c.N)}, c.Running, &notes, &files))

	if c.Err != nil && c.StoppedBy == "" {
		section("*Why*\n" + codeBlock(Truncate(safetext.Text(c.Err.Error()), 500)))
	}
	if r := c.Result; r != nil {
		stdout, stderr := safetext.Text(string(r.Stdout)), safetext.Text(string(r.Stderr))
		failed := c.failed()
		if stdout != "" || !failed {
			shown, note, file := c.clip("Output", stdout, cardOutputChars, false, r.StdoutTruncated, r.StdoutSize, len(r.Stdout), c.outputFile())
			if strings.TrimSpace(shown) == "" {
				section("*Output*\n_No output. The program printed nothing._")
			} else {
				section("*Output*\n" + codeBlock(shown))
			}
			notes = append(notes, note...)
			if file != nil {
				files = append(files, *file)
			}
		}
		if failed || c.Debug {
			if stderr != "" {
				limit, label := cardOutputChars, "*Error*"
				if !failed {
					limit, label = cardStderrChars, "*stderr*"
				}
				shown, note, file := c.clip("error output", stderr, limit, true, r.StderrTruncated, r.StderrSize, len(r.Stderr), c.stderrFile())
				section(label + "\n" + codeBlock(shown))
				notes = append(notes, note...)
				if file != nil {
					files = append(files, *file)
				}
			} else if failed && stdout == "" {
				section("*Error*\n_The program printed no error message._")
			}
		}
		if line := c.filesLine(); line != "" {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(line)))
		}
		notes = append(notes, c.stateLines()...)
		if c.Debug {
			for _, n := range c.ChartNotes {
				notes = append(notes, ":bar_chart: "+Escape(Truncate(safetext.Line(n), 300)))
			}
			notes = append(notes, c.debugLine())
		}
	}
	if len(notes) > 0 {
		var els []slack.MixedElement
		for _, n := range notes[:min(len(notes), 10)] {
			els = append(els, mrkdwn(n))
		}
		blocks = append(blocks, slack.NewContextBlock("", els...))
	}
	if b := c.stopButton(); b != nil {
		blocks = append(blocks, b)
	}
	return blocks, files
}

// sourceSection is the section showing full (the code or SQL of a card,
// neutralised) in a code block, within cardCodeChars: when it is cut, a
// note saying so goes to notes and the file holding it all (f with full
// in it; not while the card's call runs) to files. what names it in the
// note ("code"), whole the file's content ("the full code").
func sourceSection(full, what, whole string, f Attachment, running bool, notes *[]string, files *[]Attachment) slack.Block {
	shown, cut := headShown(full, cardCodeChars)
	if cut {
		*notes = append(*notes, fmt.Sprintf(":scissors: Showing the first %s of %s characters of %s; %s is attached as `%s`.",
			Thousands(int64(utf8.RuneCountInString(shown))), Thousands(int64(utf8.RuneCountInString(full))), what, whole, f.Name))
		if !running {
			f.Content = full
			*files = append(*files, f)
		}
	}
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, codeBlock(shown), false, false), nil, nil)
}

// stopButton is the Stop button of a running card, or nil.
func (c *Card) stopButton() slack.Block {
	if !c.Running {
		return nil
	}
	return stopButton(c.Stop)
}

// stopButton is the Stop button of a running card whose button carries
// value (the answer's key and asker), or nil when value is "".
func stopButton(value string) slack.Block {
	if value == "" {
		return nil
	}
	btn := slack.NewButtonBlockElement(StopActionID, value, slack.NewTextBlockObject(slack.PlainTextType, "Stop", false, false))
	btn.Style = slack.StyleDanger
	return slack.NewActionBlock("sandpiper_stop", btn)
}

// Plain is the card reduced to its status line, for when Slack refused
// the full one: it says why, and everything else goes into files.
func (c *Card) Plain(why string) ([]slack.Block, []Attachment) {
	mrkdwn := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	files := []Attachment{{Name: c.codeFile(), Title: fmt.Sprintf("Code of run %d", c.N), Content: safetext.Text(c.Code)}}
	if r := c.Result; r != nil && !c.Running {
		if len(r.Stdout) > 0 {
			files = append(files, Attachment{Name: c.outputFile(), Title: fmt.Sprintf("Output of run %d", c.N), Content: safetext.Text(string(r.Stdout))})
		}
		if len(r.Stderr) > 0 {
			files = append(files, Attachment{Name: c.stderrFile(), Title: fmt.Sprintf("Error output of run %d", c.N), Content: safetext.Text(string(r.Stderr))})
		}
	}
	note := fmt.Sprintf(":warning: Slack refused to show this card (%s); the code and what it printed are attached.", Escape(Truncate(safetext.Line(why), 200)))
	blocks := []slack.Block{
		slack.NewContextBlock("", mrkdwn(c.status())),
		slack.NewSectionBlock(mrkdwn(note), nil, nil),
	}
	if b := c.stopButton(); b != nil {
		blocks = append(blocks, b)
	}
	return blocks, files
}

// clip fits one stream, s (already neutralised), into limit characters:
// the head of output, or the tail of an error (where the traceback's last
// line is). size is how many bytes the program wrote and kept how many
// the sandbox kept. It returns the notes that say what was left out, and
// the file to attach when it cut.
func (c *Card) clip(what, s string, limit int, tail, sandboxCut bool, size int64, kept int, name string) (string, []string, *Attachment) {
	var notes []string
	var file *Attachment
	n := utf8.RuneCountInString(s)
	shown, cut := s, false
	if tail {
		shown, cut = tailShown(s, limit)
	} else {
		shown, cut = headShown(s, limit)
	}
	if cut {
		count := Thousands(int64(utf8.RuneCountInString(shown)))
		if tail {
			shown = "…\n" + shown
			notes = append(notes, fmt.Sprintf(":scissors: Showing the last %s of %s characters of %s; the full text is attached as `%s`.",
				count, Thousands(int64(n)), strings.ToLower(what), name))
		} else {
			shown += "\n…"
			notes = append(notes, fmt.Sprintf(":scissors: Showing the first %s of %s characters of %s; the full text is attached as `%s`.",
				count, Thousands(int64(n)), strings.ToLower(what), name))
		}
		file = &Attachment{Name: name, Title: fmt.Sprintf("%s of run %d", what, c.N), Content: s}
	}
	if sandboxCut && size > int64(kept) {
		notes = append(notes, fmt.Sprintf(":scissors: The program wrote %s of %s; the sandbox kept the first %s.",
			sandbox.FormatSize(size), strings.ToLower(what), sandbox.FormatSize(int64(kept))))
	}
	return shown, notes, file
}

// cardStateNames bounds the names a card's state lines list.
const cardStateNames = 5

// stateLines say what became of the thread's variables: those the run
// started with, those it could not keep or restore, with why, a state set
// aside, and, in debug, the names kept. Names and reasons are neutralised and escaped: a
// program chose them.
func (c *Card) stateLines() []string {
	s := c.Result.State
	if s == nil {
		return nil
	}
	list := func(names []string, count int) string {
		var out []string
		for _, n := range names[:min(len(names), cardStateNames)] {
			name, why, ok := strings.Cut(n, " (")
			item := "`" + Escape(strings.ReplaceAll(Truncate(safetext.Line(name), 60), "`", "'")) + "`"
			if ok {
				item += " (" + Escape(Truncate(safetext.Line(strings.TrimSuffix(why, ")")), 100)) + ")"
			}
			out = append(out, item)
		}
		if more := max(count, len(names)) - len(out); more > 0 {
			out = append(out, fmt.Sprintf("and %s more", Thousands(int64(more))))
		}
		return strings.Join(out, ", ")
	}
	var lines []string
	if s.RestoreFailed != "" {
		lines = append(lines, ":floppy_disk: The variables earlier runs saved were set aside: "+Escape(Truncate(safetext.Line(s.RestoreFailed), 100))+"; this run ran without them.")
	}
	if len(s.Restored) > 0 {
		lines = append(lines, ":floppy_disk: Restored from earlier runs: "+list(s.Restored, s.RestoredCount)+".")
	}
	if s.Unreadable != "" {
		lines = append(lines, ":floppy_disk: The variables earlier runs saved could not be read ("+Escape(Truncate(safetext.Line(s.Unreadable), 100))+"); they were set aside, and this run started without them.")
	}
	if len(s.NotRestored) > 0 {
		lines = append(lines, ":floppy_disk: Not restored from earlier runs: "+list(s.NotRestored, s.NotRestoredCount)+".")
	}
	if len(s.Dropped) > 0 {
		lines = append(lines, ":floppy_disk: Not kept for later runs: "+list(s.Dropped, s.DroppedCount)+".")
	}
	if c.Debug && len(s.Kept) > 0 {
		lines = append(lines, ":floppy_disk: Kept for later runs: "+list(s.Kept, s.KeptCount)+".")
	}
	return lines
}

func (c *Card) debugLine() string {
	r := c.Result
	parts := []string{
		fmt.Sprintf("exit %d", r.ExitCode),
		Duration(c.duration()),
		"stdout " + sandbox.FormatSize(r.StdoutSize),
		"stderr " + sandbox.FormatSize(r.StderrSize),
	}
	if r.Truncated() {
		parts = append(parts, "output truncated by the sandbox")
	}
	if len(r.Files) > 0 || len(r.FilesOmitted) > 0 {
		parts = append(parts, fmt.Sprintf("%d files written", len(r.Files)+len(r.FilesOmitted)))
	}
	l := c.Limits.WithDefaults()
	parts = append(parts, fmt.Sprintf("limits: %s, %s, %d processes", Duration(l.Timeout), sandbox.FormatSize(l.Memory), l.Processes))
	return ":lady_beetle: " + strings.Join(parts, " · ")
}

// filesLine lists the files the run wrote: posted below the card, or
// why not. Names and notes are shown on one line each, neutralised and
// escaped here: a name may hold anything a program chose.
func (c *Card) filesLine() string {
	if len(c.Files) == 0 {
		return ""
	}
	var lines []string
	for i, f := range c.Files {
		if i == cardFileNotes {
			lines = append(lines, moreFiles(c.Files[i:]))
			break
		}
		name := "`" + Escape(strings.ReplaceAll(Truncate(safetext.Line(f.Name), 120), "`", "'")) + "`"
		note := Escape(safetext.Line(f.Note))
		switch {
		case f.Posted && f.Image:
			lines = append(lines, fmt.Sprintf("%s (%s) · image posted below", name, sandbox.FormatSize(f.Size)))
		case f.Posted:
			lines = append(lines, fmt.Sprintf("%s (%s) · posted below", name, sandbox.FormatSize(f.Size)))
		case f.Size > 0:
			lines = append(lines, fmt.Sprintf("%s (%s) · %s", name, sandbox.FormatSize(f.Size), note))
		default:
			lines = append(lines, fmt.Sprintf("%s · %s", name, note))
		}
	}
	label := "*File written*"
	if len(c.Files) > 1 {
		label = fmt.Sprintf("*%d files written*", len(c.Files))
	}
	return ":paperclip: " + label + "\n" + strings.Join(lines, "\n")
}

// moreFiles sums up the files a card has no room to list, by what became
// of them: "… and 46 more: 2 posted below; 44 not posted: …".
func moreFiles(fs []ProducedFile) string {
	counts := map[string]int{}
	var order []string
	for _, f := range fs {
		what := Escape(safetext.Line(f.Note))
		if f.Posted {
			what = "posted below"
		}
		if counts[what] == 0 {
			order = append(order, what)
		}
		counts[what]++
	}
	parts := make([]string, len(order))
	for i, what := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[what], what)
	}
	return fmt.Sprintf("… and %d more: %s", len(fs), strings.Join(parts, "; "))
}

// metadata completes a card's metadata payload p: the question the card
// answers, and whether its call runs or is done, with what the model
// read of it (output, cut to MetadataTextChars) when it is done.
func metadata(p map[string]any, questionTS string, running bool, output func() string) map[string]any {
	if questionTS != "" {
		p["question_ts"] = questionTS
	}
	if running {
		p["state"] = "running"
		return p
	}
	p["state"] = "done"
	p["output"] = Truncate(output(), MetadataTextChars)
	return p
}

// Metadata is what a restarted bot needs to remember the run.
func (c *Card) Metadata() slack.SlackMetadata {
	p := metadata(map[string]any{"run": c.N, "code": Truncate(c.Code, MetadataTextChars)}, c.QuestionTS, c.Running, func() string { return RunOutput(c.Result, c.Err) })
	if !c.Running {
		if c.Result != nil {
			p["exit_code"] = c.Result.ExitCode
		}
		var files []map[string]string
		for _, f := range c.Files {
			if f.Posted {
				files = append(files, map[string]string{"id": f.ID, "name": f.Name})
			}
		}
		if len(files) > 0 {
			p["files"] = files
		}
	}
	return slack.SlackMetadata{EventType: MetaToolRun, EventPayload: p}
}

// RunOutput is what a run produced, as remembered for follow-ups (and
// given to the model again), neutralised as for the tool result the model
// read ([safetext.Text]).
func RunOutput(r *sandbox.Result, err error) string {
	return safetext.Text(runOutput(r, err))
}

func runOutput(r *sandbox.Result, err error) string {
	if err != nil {
		return "sandbox error: " + err.Error()
	}
	if r == nil {
		return ""
	}
	out := string(r.Stdout)
	if r.Failed() {
		out = strings.TrimRight(out, "\n")
		if len(r.Stderr) > 0 {
			out += "\n[stderr]\n" + lastRunes(string(r.Stderr), RunOutputChars/2)
		}
		if v := r.Verdict(); v.Kind != sandbox.VerdictExit {
			out += "\n[" + v.Phrase + "]"
		}
		if v := r.Verdict(); v.Note != "" {
			out += "\n[" + v.Note + "]"
		}
		out += fmt.Sprintf("\n[exit %d]", r.ExitCode)
	}
	return strings.TrimLeft(out, "\n")
}

// Duration shows a run's or an answer's duration: "850 ms", "2.5 s", "1m30s".
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}
