package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Terminal output limits.
const (
	cardLines    = 40 // lines of each stream shown in a tool card
	cardWidth    = 60 // width of a tool card's rules
	spinnerEvery = 100 * time.Millisecond
)

const askUsage = `usage: sandpiper ask [--debug] [--file PATH]... [--out DIR] [QUESTION]

Asks the model once and prints each Python run and the answer. Without a
question, opens a chat in the terminal that keeps the conversation: Enter
sends, Ctrl+D or Ctrl+C leaves.

  --debug       also log every run's code and raw sandbox output (SANDPIPER_DEBUG=true)
  --file PATH   put the file in the sandbox's working directory, /mnt/data (repeatable)
  --out DIR     save the files the program writes there (default ./sandpiper-output)
`

// defaultOutDir is where ask saves the files the program writes.
const defaultOutDir = "sandpiper-output"

// runAsk is `sandpiper ask`.
func runAsk(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var debug bool
	var words, paths []string
	outDir := defaultOutDir
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--debug" || a == "-debug":
			debug = true
		// --file and --out count also after the question (ask "plot it"
		// --file d.csv); "--" makes the rest question text.
		case a == "--file" || a == "-file" || a == "--out" || a == "-out":
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "sandpiper: ask: %s needs a value\n\n%s", a, askUsage)
				return 2
			}
			i++
			if strings.HasSuffix(a, "file") {
				paths = append(paths, args[i])
			} else {
				outDir = args[i]
			}
		case strings.HasPrefix(a, "--file=") || strings.HasPrefix(a, "-file="):
			paths = append(paths, a[strings.IndexByte(a, '=')+1:])
		case strings.HasPrefix(a, "--out=") || strings.HasPrefix(a, "-out="):
			outDir = a[strings.IndexByte(a, '=')+1:]
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(stdout, askUsage)
			return 0
		case a == "--":
			words = append(words, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1 && len(words) == 0:
			fmt.Fprintf(stderr, "sandpiper: ask: unknown flag %s\n\n%s", a, askUsage)
			return 2
		default:
			words = append(words, a)
		}
	}
	question := strings.TrimSpace(strings.Join(words, " "))

	lookup, _, err := envLookuper(".")
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	ac, err := loadAgentConfig(ctx, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	mc, sc, limits := ac.model, ac.sandbox, ac.files
	inputs, err := readInputFiles(paths, limits)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: ask: %v\n", err)
		return 2
	}
	var files []sandbox.File
	for _, f := range inputs {
		files = append(files, f.File)
	}
	// The runs share a workspace: the --file files, and what each run
	// writes, for the runs after it (in a chat, also the next questions').
	ws := agent.NewMemWorkspace(files, limits.RunSize+sc.limits().WithDefaults().DiskSize)

	ui := newTermUI(stdout, stderr, lookup)
	ui.outDir = outDir
	ui.limits = sc.limits()
	defer ui.stopSpinner()
	level := slog.LevelWarn
	if debug || mc.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(ui.logWriter(), &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // a terminal session needs no timestamps
			}
			return a
		},
	}))

	model, err := mc.newModel(log)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	ui.spin("Starting the sandbox")
	sc.longLived = question == "" // a chat runs many programs: prepare caches
	sb, err := newSandbox(ctx, sc, log)
	if err != nil {
		ui.stopSpinner()
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 1
	}
	defer sb.Close()
	rt, err := agent.ProbeRuntime(ctx, sb)
	ui.stopSpinner()
	if err != nil {
		if ctx.Err() != nil {
			return 130
		}
		log.Warn("could not list the sandbox's Python modules; the model will not know them", "err", err)
	}
	tool := agent.NewExecuteCode(sb, agent.ExecuteCodeOptions{Runtime: rt, Limits: sc.limits(), Logger: log})
	a := mc.newAgent(model, []agent.Tool{tool}, log)

	if question != "" {
		desc, caps := agent.DescribeFiles(ctx, inputs, nil)
		if len(caps) > 0 {
			log.Warn("a file's preview stopped at its budget", "caps", caps)
		}
		if desc != "" {
			question += "\n\n" + desc
		}
		out, err := a.Run(ctx, []agent.Message{agent.UserMessage(question)}, agent.RunOptions{Workspace: ws, Observer: ui})
		switch {
		case ctx.Err() != nil:
			fmt.Fprintln(stderr, "sandpiper: interrupted")
			return 130
		case err != nil:
			fmt.Fprintf(stderr, "sandpiper: %s\n", safetext.Text(err.Error())) // a model API's error quotes its server
			return 1
		case out.Stop == agent.StopStepLimit:
			return 1
		}
		return 0
	}
	return chat(ctx, a, rt, ws, stdin, ui)
}

// readInputFiles reads the --file files, within the limits, under names
// safe for /mnt/data (unique: a second data.csv becomes data-2.csv).
func readInputFiles(paths []string, lim sandbox.FileLimits) ([]agent.InputFile, error) {
	lim = lim.WithDefaults()
	if len(paths) > lim.RunFiles {
		return nil, fmt.Errorf("%d files given; a run takes at most %d (SANDPIPER_FILES_MAX_COUNT)", len(paths), lim.RunFiles)
	}
	var out []agent.InputFile
	var total int64
	taken := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--file %s: not a regular file", p)
		}
		if fi.Size() > lim.FileSize {
			return nil, fmt.Errorf("--file %s: %s is more than the %s allowed per file (SANDPIPER_FILE_MAX_SIZE)", p, sandbox.FormatSize(fi.Size()), sandbox.FormatSize(lim.FileSize))
		}
		if total += fi.Size(); total > lim.RunSize {
			return nil, fmt.Errorf("--file %s: the files hold more than the %s allowed per run (SANDPIPER_FILES_MAX_TOTAL)", p, sandbox.FormatSize(lim.RunSize))
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		name := sandbox.UniqueName(sandbox.SafeName(filepath.Base(p), ""), func(n string) bool { return taken[n] })
		taken[name] = true
		out = append(out, agent.InputFile{File: sandbox.File{Name: name, Data: data}, Source: "given with --file " + p})
	}
	return out, nil
}

// chat keeps a conversation going, a line at a time, until EOF (Ctrl+D),
// "exit", or ctx ends (Ctrl+C).
func chat(ctx context.Context, a *agent.Agent, rt agent.Runtime, ws agent.Workspace, stdin io.Reader, ui *termUI) int {
	interactive := isTerminal(stdin)
	if interactive {
		ui.printf("%s  %s\n", ui.bold("Sandpiper")+ui.dim(" · "+safetext.Line(a.Model.ID()+" · "+rt.String())),
			ui.dim("Enter sends · Ctrl+D or Ctrl+C leaves"))
	}
	lines := make(chan string)
	go func() { // stays blocked in Read when ctx ends first; the process is leaving then
		defer close(lines)
		r := bufio.NewReader(stdin)
		for {
			line, err := r.ReadString('\n')
			if line != "" || err == nil {
				select {
				case lines <- strings.TrimRight(line, "\r\n"):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	var history []agent.Message
	described := "" // the workspace as last described to the model
	for {
		if interactive {
			ui.printf("\n%s ", ui.cyan("›"))
		}
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
		}
		if !ok {
			if interactive {
				ui.printf("\n")
			}
			return 0
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "exit" || line == "quit" {
			return 0
		}
		if !interactive {
			ui.printf("\n%s %s\n", ui.cyan("›"), safetext.Line(line)) // a transcript reads better with the questions
		}
		text := line
		ls, err := ws.Files(ctx)
		if err != nil {
			ui.errorf("%v", err)
			continue
		}
		var files []agent.InputFile
		for _, f := range ls {
			files = append(files, agent.InputFile{File: f})
		}
		if desc, _ := agent.DescribeFiles(ctx, files, nil); desc != described {
			text += "\n\n" + desc
			described = desc
		}
		history = append(history, agent.UserMessage(text))
		out, err := a.Run(ctx, history, agent.RunOptions{Workspace: ws, Observer: ui})
		switch {
		case ctx.Err() != nil:
			ui.printf("\n")
			return 0
		case err != nil:
			// Forget the failed turn, so the question can be asked again.
			history = history[:len(history)-1]
			ui.errorf("%v", err)
			continue
		}
		history = append(history, out.Messages...)
	}
}

// termUI shows a run in the terminal: streamed text, a card per Python
// run, and a spinner on stderr while the model or the sandbox works. It is
// an agent.Observer. Colour and the spinner appear only on a terminal.
//
// Nothing the model or the program wrote reaches the terminal as it is:
// the answer, the code, the output, file names and error texts pass
// through [safetext], so no escape sequence, BEL, C1 control or bidi
// override in them is obeyed; the only escape sequences written are the
// UI's own colours and spinner.
type termUI struct {
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

	// outDir is where the files the program writes are saved ("": not
	// saved).
	outDir string
	// limits are the sandbox's, for what a card says of a limit.
	limits sandbox.Limits
}

var _ agent.Observer = (*termUI)(nil)

func newTermUI(stdout, stderr io.Writer, lookup envconfig.Lookuper) *termUI {
	_, noColor := lookup.Lookup("NO_COLOR")
	term, _ := lookup.Lookup("TERM")
	return &termUI{
		out:      stdout,
		err:      stderr,
		color:    isTerminal(stdout) && !noColor && term != "dumb",
		errColor: isTerminal(stderr) && !noColor && term != "dumb",
		spinner:  isTerminal(stderr) && term != "dumb",
		start:    time.Now(),
	}
}

func (u *termUI) StepStarted(_ context.Context, e agent.StepEvent) {
	if e.Step == 1 && e.Retry == 0 {
		u.start = time.Now()
	}
	if e.Retry > 0 {
		u.stopSpinner()
		u.mu.Lock()
		u.answer.reset() // the text held back is discarded with the rest
		u.endLine()
		fmt.Fprintln(u.out, u.yellow("[the connection broke off; asking again — the text above is discarded]"))
		u.mu.Unlock()
	}
	u.spin("Thinking")
}

func (u *termUI) AnswerDelta(_ context.Context, e agent.DeltaEvent) {
	u.stopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.writeAnswer(u.answer.next(e.Text))
}

// writeAnswer writes neutralised answer text.
func (u *termUI) writeAnswer(s string) {
	if s == "" {
		return
	}
	io.WriteString(u.out, s)
	u.midLine = !strings.HasSuffix(s, "\n")
}

// streamText neutralises streamed text ([safetext.Text]) a delta at a
// time. A delta may end inside a UTF-8 sequence, or between the CR and
// the LF of a line end: that tail is held back for the next delta, so
// that it becomes neither replacement characters nor two line feeds.
type streamText struct{ held string }

// next returns what of the text so far can be shown, neutralised.
func (st *streamText) next(s string) string {
	s = st.held + s
	cut := len(s)
	for i := len(s) - 1; i >= 0 && i > len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				cut = i
			}
			break
		}
	}
	if cut == len(s) && strings.HasSuffix(s, "\r") {
		cut--
	}
	st.held = s[cut:]
	return safetext.Text(s[:cut])
}

// flush returns the text held back, neutralised, and forgets it.
func (st *streamText) flush() string {
	s := safetext.Text(st.held)
	st.held = ""
	return s
}

// reset forgets the text held back.
func (st *streamText) reset() { st.held = "" }

func (u *termUI) ToolCallStarted(_ context.Context, e agent.ToolCallEvent) {
	u.stopSpinner()
	u.mu.Lock()
	u.endLine()
	title := safetext.Line(e.Call.Name)
	body := e.Code
	if e.Call.Name == agent.ExecuteCodeName {
		title = "Python"
	} else if body == "" {
		body = string(e.Call.Input)
	}
	fmt.Fprintf(u.out, "%s\n", u.rule("╭─ ", title))
	u.block(body, "", cardLines*4)
	u.mu.Unlock()
	if e.Call.Name == agent.ExecuteCodeName {
		u.spin("Running Python")
	} else {
		u.spin("Running " + safetext.Line(e.Call.Name))
	}
}

func (u *termUI) ToolCallFinished(_ context.Context, e agent.ToolResultEvent) {
	u.stopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	dur := e.Duration.Round(time.Millisecond).String()
	switch res := e.Sandbox; {
	case errors.Is(e.Err, context.Canceled):
		fmt.Fprintf(u.out, "%s\n", u.rule("├─ ", u.yellow("✗ cancelled")+u.dim(" · "+dur)))
	case errors.Is(e.Err, context.DeadlineExceeded):
		fmt.Fprintf(u.out, "%s\n", u.rule("├─ ", u.yellow("✗ stopped: out of time")+u.dim(" · "+dur)))
	case e.Err != nil:
		fmt.Fprintf(u.out, "%s\n", u.rule("├─ ", u.red("✗ error")+u.dim(" · "+dur)))
		u.block(e.Err.Error(), "red", cardLines)
	case res == nil:
		mark := u.green("✓ done")
		if e.Result.IsError {
			mark = u.red("✗ error")
		}
		fmt.Fprintf(u.out, "%s\n", u.rule("├─ ", mark+u.dim(" · "+dur)))
		u.block(e.Result.Content, "", cardLines)
	default:
		fmt.Fprintf(u.out, "%s\n", u.rule("├─ ", status(u, res, u.limits)+u.dim(" · "+dur)))
		if len(res.Stdout) == 0 && len(res.Stderr) == 0 {
			fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.dim("(no output)"))
		}
		u.block(string(res.Stdout), "", cardLines)
		if res.StdoutTruncated {
			fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.dim(fmt.Sprintf("… output cut at %d of %d bytes", len(res.Stdout), res.StdoutSize)))
		}
		u.block(string(res.Stderr), "red", cardLines)
		if res.StderrTruncated {
			fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.dim(fmt.Sprintf("… stderr cut at %d of %d bytes", len(res.Stderr), res.StderrSize)))
		}
		for _, f := range res.Files {
			if sandbox.HiddenPath(f.Name) {
				continue
			}
			if u.outDir == "" {
				fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.dim(fmt.Sprintf("file %s (%s)", safetext.Line(f.Name), sandbox.FormatSize(int64(len(f.Data))))))
				continue
			}
			p, err := saveOutput(u.outDir, f)
			if err != nil {
				fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.red(safetext.Line(fmt.Sprintf("could not save %s: %v", f.Name, err))))
				continue
			}
			fmt.Fprintf(u.out, "%s saved %s %s\n", u.dim("│"), safetext.Line(p), u.dim("("+sandbox.FormatSize(int64(len(f.Data)))+")"))
		}
		for _, o := range res.FilesOmitted {
			fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.yellow("not saved: "+safetext.Line(o)))
		}
	}
	fmt.Fprintf(u.out, "%s\n", u.dim("╰"+strings.Repeat("─", cardWidth-1)))
	u.midLine = false
}

// saveOutput writes a file the program wrote under dir, through an
// os.Root so that no name leaves it, and returns its path. The name is
// neutralised first ([safetext.Line]): a control character or a bidi
// override in it becomes a visible stand-in, so the file is named on
// disk as the card shows it, and no later listing of dir is disguised.
func saveOutput(dir string, f sandbox.File) (string, error) {
	name := safetext.Line(f.Name)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("bad name %q", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := root.WriteFile(name, f.Data, 0o644); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// status is a card's verdict on a sandbox run.
func status(u *termUI, r *sandbox.Result, lim sandbox.Limits) string {
	note := r.LimitNote(lim)
	switch {
	case r.ExitCode != 0 || r.TimedOut || r.OutOfMemory:
		s := fmt.Sprintf("✗ exit %d", r.ExitCode)
		if note != "" {
			s += " · " + note
		}
		return u.red(s)
	case note != "":
		return u.yellow("✓ exit 0 · " + note)
	}
	return u.green("✓ exit 0")
}

func (u *termUI) Finished(_ context.Context, e agent.FinishEvent) {
	u.stopSpinner()
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

// errorf reports an error without ending the chat. The error is
// neutralised: a model API's error quotes its server.
func (u *termUI) errorf(format string, args ...any) {
	u.stopSpinner()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.endLine()
	fmt.Fprintln(u.err, u.errPaint("31", "error: "+safetext.Text(fmt.Sprintf(format, args...))))
}

func (u *termUI) printf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintf(u.out, format, args...)
	u.midLine = false
}

// block writes text inside a card, at most max lines of it, neutralised
// ([safetext.Text]: a carriage return ends a line too).
func (u *termUI) block(text, color string, max int) {
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
		fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), l)
	}
	if more > 0 {
		fmt.Fprintf(u.out, "%s %s\n", u.dim("│"), u.dim(fmt.Sprintf("… %d more lines", more)))
	}
}

// rule is a card's horizontal rule with a title.
func (u *termUI) rule(lead, title string) string {
	n := cardWidth - utf8.RuneCountInString(lead) - visibleLen(title) - 1
	return u.dim(lead) + title + " " + u.dim(strings.Repeat("─", max(n, 3)))
}

// visibleLen counts the runes of s outside ANSI escape sequences.
func visibleLen(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			esc = r != 'm'
		case r == '\x1b':
			esc = true
		default:
			n++
		}
	}
	return n
}

// endLine ends a line of streamed text before something else is shown,
// after the text held back from it.
func (u *termUI) endLine() {
	u.writeAnswer(u.answer.flush())
	if u.midLine {
		io.WriteString(u.out, "\n")
		u.midLine = false
	}
}

func (u *termUI) paint(code, s string) string { return ansi(u.color, code, s) }

// errPaint is paint for text written to stderr.
func (u *termUI) errPaint(code, s string) string { return ansi(u.errColor, code, s) }

// ansi wraps s in an ANSI style when on is true.
func ansi(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (u *termUI) bold(s string) string   { return u.paint("1", s) }
func (u *termUI) dim(s string) string    { return u.paint("2", s) }
func (u *termUI) red(s string) string    { return u.paint("31", s) }
func (u *termUI) green(s string) string  { return u.paint("32", s) }
func (u *termUI) yellow(s string) string { return u.paint("33", s) }
func (u *termUI) cyan(s string) string   { return u.paint("36", s) }

// spin shows msg with a spinner and the time elapsed until stopSpinner.
func (u *termUI) spin(msg string) {
	u.stopSpinner()
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

// stopSpinner removes the spinner, if one is showing.
func (u *termUI) stopSpinner() {
	u.mu.Lock()
	stop, done := u.spinStop, u.spinDone
	u.spinStop, u.spinDone = nil, nil
	u.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// logWriter is where log records go: stderr, after clearing the spinner's
// line (the spinner redraws itself on its next tick).
func (u *termUI) logWriter() io.Writer {
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
