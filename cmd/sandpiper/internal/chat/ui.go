package chat

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/tui"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Terminal output limits.
const (
	cardLines    = 40 // lines of each stream shown in a tool card
	spinnerEvery = 100 * time.Millisecond
)

// UI shows a run in the terminal: streamed text, a card per Python
// run, and a spinner on stderr while the model or the sandbox works. It is
// an [agent.Observer]. Colour and the spinner appear only on a terminal.
//
// Nothing the model or the program wrote reaches the terminal as it is:
// the answer, the code, the output, file names and error texts pass
// through [safetext], so no escape sequence, BEL, C1 control or bidi
// override in them is obeyed; the only escape sequences written are the
// UI's own colours and spinner.
type UI struct {
	mu       sync.Mutex
	out, err io.Writer
	color    bool // on stdout
	errColor bool // on stderr
	spinner  bool
	midLine  bool // the last text written to out did not end a line
	answer   streamText
	start    time.Time

	spinStop chan struct{}
	spinDone chan struct{}

	opts Options

	sources []string // the data sources a chat's runs may query
	user    string
}

// SetSources sets the data sources the runs of [UI.Chat] may query, and
// who asks (for their audit log).
func (u *UI) SetSources(sources []string, user string) {
	u.sources, u.user = sources, user
}

// Options configure a [UI].
type Options struct {
	// NoColor and Term are the NO_COLOR and TERM variables: colour shows
	// on a terminal without NO_COLOR, and neither colour nor the spinner
	// on a "dumb" one.
	NoColor bool
	Term    string
	// OutDir is where the files the program writes are saved ("": not
	// saved).
	OutDir string
}

var _ agent.Observer = (*UI)(nil)

// New returns a UI writing to stdout and stderr.
func New(stdout, stderr io.Writer, opts Options) *UI {
	dumb := opts.Term == "dumb"
	return &UI{
		out:      stdout,
		err:      stderr,
		color:    isTerminal(stdout) && !opts.NoColor && !dumb,
		errColor: isTerminal(stderr) && !opts.NoColor && !dumb,
		spinner:  isTerminal(stderr) && !dumb,
		start:    time.Now(),
		opts:     opts,
	}
}

func (u *UI) StepStarted(_ context.Context, e agent.StepEvent) {
	if e.Step == 1 && e.Retry == 0 {
		u.start = time.Now()
	}
	if e.Retry > 0 {
		u.StopSpinner()
		u.mu.Lock()
		u.answer.reset() // the text held back is discarded with the rest
		u.endLine()
		fmt.Fprintln(u.out, u.yellow("[the connection broke off; asking again — the text above is discarded]"))
		u.mu.Unlock()
	}
	u.Spin("Thinking")
}

func (u *UI) AnswerDelta(_ context.Context, e agent.DeltaEvent) {
	u.StopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.writeAnswer(u.answer.next(e.Text))
}

// writeAnswer writes neutralised answer text.
func (u *UI) writeAnswer(s string) {
	if s == "" {
		return
	}
	io.WriteString(u.out, s)
	u.midLine = !strings.HasSuffix(s, "\n")
}

// streamText neutralises streamed text a delta at a time
// ([safetext.Stream]): a tail whose fate depends on the next delta (a cut
// UTF-8 sequence, a CR before its LF, an emoji's joiner) is held back, so
// that it becomes neither replacement characters, two line feeds nor two
// emoji.
type streamText struct{ s safetext.Stream }

// next returns what of the text so far can be shown, neutralised.
func (st *streamText) next(s string) string { return st.s.Write(s) }

// flush returns the text held back, neutralised, and forgets it.
func (st *streamText) flush() string { return st.s.Flush() }

// reset forgets the text held back.
func (st *streamText) reset() { st.s = safetext.Stream{} }

func (u *UI) ToolCallStarted(_ context.Context, e agent.ToolCallEvent) {
	u.StopSpinner()
	u.mu.Lock()
	u.endLine()
	title := safetext.Line(e.Call.Name)
	body := e.Code
	switch e.Call.Name {
	case agent.ExecuteCodeName:
		title = "Python"
	case datasource.QueryToolName:
		if in, err := datasource.DecodeQuery(e.Call.Input); err == nil {
			title, body = "SQL · "+safetext.Line(in.Source), in.SQL
		}
	}
	if body == "" {
		body = string(e.Call.Input)
	}
	fmt.Fprintf(u.out, "%s\n", u.title(title))
	u.block(body, "", cardLines*4)
	u.mu.Unlock()
	if e.Call.Name == agent.ExecuteCodeName {
		u.Spin("Running Python")
	} else if e.Call.Name == datasource.QueryToolName {
		u.Spin("Querying")
	} else {
		u.Spin("Running " + safetext.Line(e.Call.Name))
	}
}

func (u *UI) ToolCallFinished(_ context.Context, e agent.ToolResultEvent) {
	u.StopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	dur := e.Duration.Round(time.Millisecond).String()
	switch res, v := e.Sandbox, sandbox.VerdictOf(e.Sandbox, e.Err); {
	case v.Kind == sandbox.VerdictStopped:
		fmt.Fprintf(u.out, "%s\n", u.yellow("✗ "+v.Phrase)+u.dim(" · "+dur))
	case e.Err != nil:
		mark := "✗ " + v.Phrase
		if e.Call.Name != agent.ExecuteCodeName {
			mark = "✗ error" // another tool's: the verdict speaks of code
		}
		fmt.Fprintf(u.out, "%s\n", u.red(mark)+u.dim(" · "+dur))
		u.block(e.Err.Error(), "red", cardLines)
	case e.Query != nil:
		u.queryCard(e.Query, dur)
	case res == nil:
		mark := u.green("✓ done")
		if e.Result.IsError {
			mark = u.red("✗ error")
		}
		fmt.Fprintf(u.out, "%s\n", mark+u.dim(" · "+dur))
		u.block(e.Result.Content, "", cardLines)
	default:
		fmt.Fprintf(u.out, "%s\n", status(u, v)+u.dim(" · "+dur))
		if len(res.Stdout) == 0 && len(res.Stderr) == 0 {
			fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim("(no output)"))
		}
		u.block(string(res.Stdout), "", cardLines)
		if res.StdoutTruncated {
			fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim(fmt.Sprintf("… output cut at %d of %d bytes", len(res.Stdout), res.StdoutSize)))
		}
		u.block(string(res.Stderr), "red", cardLines)
		if res.StderrTruncated {
			fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim(fmt.Sprintf("… stderr cut at %d of %d bytes", len(res.Stderr), res.StderrSize)))
		}
		for _, f := range res.Files {
			if sandbox.HiddenPath(f.Name) {
				continue
			}
			if u.opts.OutDir == "" {
				fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim(fmt.Sprintf("file %s (%s)", safetext.Line(f.Name), sandbox.FormatSize(int64(len(f.Data))))))
				continue
			}
			p, err := cli.SaveOutput(u.opts.OutDir, f)
			if err != nil {
				fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.red(safetext.Line(fmt.Sprintf("could not save %s: %v", f.Name, err))))
				continue
			}
			fmt.Fprintf(u.out, "%s saved %s %s\n", u.dim(" "), safetext.Line(p), u.dim("("+sandbox.FormatSize(int64(len(f.Data)))+")"))
		}
		for _, o := range res.FilesOmitted {
			fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.yellow("not saved: "+safetext.Line(o)))
		}
	}
	fmt.Fprintln(u.out) // the card's end
	u.midLine = false
}

// queryCard ends a query's card: its verdict, a table of its first rows,
// and where the whole result is.
func (u *UI) queryCard(q *agent.Query, dur string) {
	var mark string
	switch q.Outcome {
	case datasource.OutcomeOK:
		mark = u.green(fmt.Sprintf("✓ %s rows", tui.Commas(q.Rows)))
	case datasource.OutcomeTruncated:
		mark = u.yellow(fmt.Sprintf("✓ %s rows · cut: %s", tui.Commas(q.Rows), q.Truncated))
	default:
		mark = u.red("✗ " + q.Outcome)
	}
	fmt.Fprintf(u.out, "%s\n", mark+u.dim(" · "+safetext.Line(q.Engine)+" · "+dur))
	if q.Err != "" {
		u.block(q.Err, "red", cardLines)
		return
	}
	if table, more := tui.QueryTable(q, tui.QueryRows, tui.QueryCellChars); table != "" {
		u.block(table, "", tui.QueryRows+2)
		if more > 0 {
			fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim(fmt.Sprintf("… %s more rows", tui.Commas(more))))
		}
	}
	if q.File != "" {
		fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim(fmt.Sprintf("result in %s/%s (%s)", sandbox.WorkDir, safetext.Line(q.File), sandbox.FormatSize(q.FileSize))))
	}
}

// status is a card's verdict on a sandbox run, as the sandbox says it.
func status(u *UI, v sandbox.Verdict) string {
	s := safetext.Line(v.String())
	switch {
	case v.Failed():
		return u.red("✗ " + s)
	case v.Note != "":
		return u.yellow("✓ " + s)
	}
	return u.green("✓ " + s)
}

func (u *UI) Finished(_ context.Context, e agent.FinishEvent) {
	u.StopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.endLine()
	switch e.Stop {
	case agent.StopStepLimit:
		fmt.Fprintln(u.out, u.yellow(fmt.Sprintf("[stopped after %d steps without a final answer; SANDPIPER_MAX_STEPS allows more]", e.Steps)))
	case agent.StopLength:
		fmt.Fprintln(u.out, u.yellow("[the answer was cut off by the model's output token limit (SANDPIPER_MODEL_MAX_TOKENS)]"))
	case agent.StopRefused:
		fmt.Fprintln(u.out, u.yellow("[the model declined to answer]"))
	case agent.StopAnswered:
		if strings.TrimSpace(e.Answer) == "" {
			fmt.Fprintln(u.out, u.yellow("[the model ended without an answer]"))
		}
	}
	if e.Stop == agent.StopError || e.Stop == agent.StopCanceled {
		return // the caller reports it
	}
	steps := "1 step"
	if e.Steps != 1 {
		steps = fmt.Sprintf("%d steps", e.Steps)
	}
	parts := []string{steps}
	if e.Usage.Total() > 0 { // some servers do not report usage
		parts = append(parts, fmt.Sprintf("%d tokens in, %d out", e.Usage.InputTokens, e.Usage.OutputTokens))
	}
	parts = append(parts, time.Since(u.start).Round(100*time.Millisecond).String(), safetext.Line(e.Model))
	fmt.Fprintln(u.err, u.errPaint("2", strings.Join(parts, " · ")))
}

// Errorf reports an error without ending the chat. The error is
// neutralised: a model API's error quotes its server.
func (u *UI) Errorf(format string, args ...any) {
	u.StopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.endLine()
	fmt.Fprintln(u.err, u.errPaint("31", "error: "+safetext.Text(fmt.Sprintf(format, args...))))
}

func (u *UI) printf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintf(u.out, format, args...)
	u.midLine = false
}

// block writes text inside a card, at most max lines of it, neutralised
// ([safetext.Text]: a carriage return ends a line too).
func (u *UI) block(text, color string, max int) {
	text = strings.TrimRight(safetext.Text(text), "\n")
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	more := 0
	if len(lines) > max {
		lines, more = lines[:max], len(lines)-max
	}
	for _, l := range lines {
		if color == "red" {
			l = u.red(l)
		}
		fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), l)
	}
	if more > 0 {
		fmt.Fprintf(u.out, "%s %s\n", u.dim(" "), u.dim(fmt.Sprintf("… %d more lines", more)))
	}
}

// title starts a card: its title alone on a line. Plain output is plain
// lines, no frames: a card's lines are indented under its title and its
// verdict, and an empty line ends it.
func (u *UI) title(title string) string { return u.bold(title) }

// endLine ends a line of streamed text before something else is shown,
// after the text held back from it.
func (u *UI) endLine() {
	u.writeAnswer(u.answer.flush())
	if u.midLine {
		io.WriteString(u.out, "\n")
		u.midLine = false
	}
}

func (u *UI) paint(code, s string) string { return ansi(u.color, code, s) }

// errPaint is paint for text written to stderr.
func (u *UI) errPaint(code, s string) string { return ansi(u.errColor, code, s) }

// ansi wraps s in an ANSI style when on is true.
func ansi(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (u *UI) bold(s string) string   { return u.paint("1", s) }
func (u *UI) dim(s string) string    { return u.paint("2", s) }
func (u *UI) red(s string) string    { return u.paint("31", s) }
func (u *UI) green(s string) string  { return u.paint("32", s) }
func (u *UI) yellow(s string) string { return u.paint("33", s) }
func (u *UI) cyan(s string) string   { return u.paint("36", s) }

// Spin shows msg with a spinner and the time elapsed until StopSpinner.
func (u *UI) Spin(msg string) {
	u.StopSpinner()
	if !u.spinner {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	u.mu.Lock()
	u.spinStop, u.spinDone = stop, done
	u.mu.Unlock()
	go func() {
		defer close(done)
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t0 := time.Now()
		tick := time.NewTicker(spinnerEvery)
		defer tick.Stop()
		for i := 0; ; i++ {
			u.mu.Lock()
			lead := ""
			if u.midLine {
				lead = "\n"
				io.WriteString(u.out, lead)
				u.midLine = false
			}
			fmt.Fprintf(u.err, "\r\x1b[K%s %s %s", u.errPaint("36", string(frames[i%len(frames)])), msg+"…", u.errPaint("2", time.Since(t0).Round(100*time.Millisecond).String()))
			u.mu.Unlock()
			select {
			case <-stop:
				u.mu.Lock()
				io.WriteString(u.err, "\r\x1b[K")
				u.mu.Unlock()
				return
			case <-tick.C:
			}
		}
	}()
}

// StopSpinner removes the spinner, if one is showing.
func (u *UI) StopSpinner() {
	u.mu.Lock()
	stop, done := u.spinStop, u.spinDone
	u.spinStop, u.spinDone = nil, nil
	u.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// LogWriter is where log records go: stderr, after clearing the spinner's
// line (the spinner redraws itself on its next tick).
func (u *UI) LogWriter() io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.spinStop != nil {
			io.WriteString(u.err, "\r\x1b[K")
		}
		return u.err.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// isTerminal reports whether v is a terminal: a character device other
// than /dev/null.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
