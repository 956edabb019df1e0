package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	xansi "github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// ErrStopped is the error of a one-shot question the user stopped.
var ErrStopped = errors.New("tui: the answer was stopped")

// Question is what the user asks.
type Question struct {
	Text string
	// Files are the paths attached with /file since the last question (or
	// given in Options.Files, for the first).
	Files []string
}

// Options configure the UI.
type Options struct {
	// Ask answers q. The UI calls it on a goroutine of its own, for one
	// question at a time. ctx ends when the user stops the answer or
	// leaves; obs is told what the run does, as [agent.Agent.Run] tells
	// an observer, and Ask returns when the run is over. Its error is
	// shown to the user; the context's error after a stop is not an
	// error.
	Ask func(ctx context.Context, q Question, obs agent.Observer) error
	// Reset starts a new conversation (/new). Nil: /new is refused.
	Reset func()
	// SetDebug turns the logging of each run's code and output on or off
	// (/debug); Debug is whether it is on at the start. Nil: /debug is
	// refused.
	SetDebug func(on bool)
	Debug    bool
	// SaveFile saves a file a run wrote and returns where it went, to be
	// shown (it is neutralised), or "" for a file not to list. Nil: the
	// files are listed, not saved.
	SaveFile func(sandbox.File) (string, error)
	// Banner is shown at the start of a chat after "Sandpiper": the
	// model and the sandbox's Python, say.
	Banner string
	// History is the history the editor walks with Up and Down, and that
	// each question is added to. Nil: the session's questions only.
	History *History
	// Question, when not empty, is asked at once, without an editor, and
	// the program ends when it is answered: a one-shot question.
	Question string
	// Files are attached to the first question.
	Files []string
	// Profile is the terminal's colour profile (termenv.Ascii for no
	// colour: NO_COLOR), and Dark whether its background is dark.
	Profile termenv.Profile
	Dark    bool
}

// Messages the model receives besides the agent's events
// (agent.StepEvent, agent.DeltaEvent, agent.ToolCallEvent,
// agent.ToolResultEvent, agent.FinishEvent), which come as they are.
type (
	// doneMsg is the end of Ask.
	doneMsg struct{ err error }
	// logMsg is a line of the front end's log.
	logMsg string
	// statusMsg is a passing state of the run (a retry), shown in the
	// status line until the run's next event.
	statusMsg string
	// printedMsg says that what was printed last has reached the
	// renderer, in order.
	printedMsg struct{}
)

// Model is the Bubble Tea model of the chat. Make one with [New] and show
// it with [Model.Run]; Init, Update and View are Bubble Tea's.
// [Model.LogWriter] and [Model.Observer] are safe for concurrent use.
type Model struct {
	opts    Options
	base    context.Context
	t       theme
	now     func() time.Time
	oneShot bool

	width, height int
	answerMD      *markdown // for the current width
	codeMD        *markdown

	ed      *editor
	spin    spinner.Model
	animate bool // the spinner turns (not in golden tests)

	bannerDue bool
	debug     bool
	attached  []string
	flash     string // a notice under the editor, until the next key

	// The run.
	running    bool
	stopping   bool
	leaving    bool // quit when the run is over
	cancel     context.CancelFunc
	runStart   time.Time
	phase      string
	phaseStart time.Time
	status     string // beside the phase: a retry ([Model.Status])
	answer     string // streamed text not printed yet
	tool       *agent.ToolCallEvent
	toolStart  time.Time
	err        error // a one-shot question's error

	live struct {
		text, out string
		width     int
	} // the live answer, rendered

	// Printing, in order: one print is in flight at a time.
	outbox   []string
	printing bool
	quitting bool

	// The agent's events and the log come through events, in order, to a
	// command that waits for the next; closed ends the waiting.
	events    chan tea.Msg
	closed    chan struct{}
	closeOnce *sync.Once
	runDone   chan struct{} // closed when the last Ask returned
}

// New returns the model of a chat (or of a one-shot question, with
// Options.Question). Ask's contexts derive from ctx.
func New(ctx context.Context, opts Options) *Model {
	var hist []string
	if opts.History != nil {
		hist = opts.History.Entries()
	}
	t := newTheme(opts.Profile, opts.Dark)
	m := &Model{
		opts:      opts,
		base:      ctx,
		t:         t,
		now:       time.Now,
		oneShot:   opts.Question != "",
		width:     80,
		ed:        newEditor(t, hist),
		spin:      spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(t.accent)),
		animate:   true,
		bannerDue: opts.Question == "",
		debug:     opts.Debug,
		attached:  opts.Files,
		events:    make(chan tea.Msg, 256),
		closed:    make(chan struct{}),
		closeOnce: new(sync.Once),
	}
	return m
}

// Run shows the chat, or the one-shot answer, on the terminal in and out
// until the user leaves or the context given to [New] ends. It returns
// [ErrStopped] for a one-shot question the user stopped, the error of a
// one-shot question that failed, the context's error when it ended, and
// nil when the user left. A Model runs once.
func (m *Model) Run(in io.Reader, out io.Writer) error {
	p := tea.NewProgram(m,
		tea.WithContext(m.base),
		tea.WithInput(in),
		tea.WithOutput(out),
		// Ctrl+C is a key in raw mode; signals end the context, in main.
		tea.WithoutSignalHandler(),
	)
	_, err := p.Run()
	m.Close()
	switch {
	case m.base.Err() != nil:
		return m.base.Err()
	case err != nil:
		return fmt.Errorf("tui: %w", err)
	}
	return m.Err()
}

// Err returns the error of a one-shot question: [ErrStopped] when the
// user stopped it. A chat's errors are shown, not returned: it is nil.
func (m *Model) Err() error { return m.err }

// Close stops the running answer, if any, and waits a moment for Ask to
// return, so that its sandbox is cleaned up before the process ends.
func (m *Model) Close() {
	m.closeOnce.Do(func() { close(m.closed) })
	if m.cancel != nil {
		m.cancel()
	}
	if m.runDone != nil {
		select {
		case <-m.runDone:
		case <-time.After(3 * time.Second):
		}
	}
}

// Observer returns an observer that brings a run's events to the model.
// Ask is given one; a front end that runs the agent itself can use it.
func (m *Model) Observer() agent.Observer { return Observer(m.send) }

// Observer returns an observer that sends each event, as a message, to
// send: a tea.Program's Send, say.
func Observer(send func(tea.Msg)) agent.Observer {
	return agent.ObserverFuncs{
		OnStepStarted:      func(e agent.StepEvent) { send(e) },
		OnAnswerDelta:      func(e agent.DeltaEvent) { send(e) },
		OnToolCallStarted:  func(e agent.ToolCallEvent) { send(e) },
		OnToolCallFinished: func(e agent.ToolResultEvent) { send(e) },
		OnFinished:         func(e agent.FinishEvent) { send(e) },
	}
}

// LogWriter returns a writer whose lines are printed above the live
// area, dim and neutralised: for the front end's log while the UI shows.
// A line written when the UI is behind is dropped rather than waited for.
func (m *Model) LogWriter() io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
			select {
			case m.events <- logMsg(l):
			case <-m.closed:
			default:
			}
		}
		return len(p), nil
	})
}

// Status shows text in the status line, beside what the run is doing,
// until the run's next event: a retry of the model's API, say, which
// the log would otherwise print into the conversation. Dropped when the
// UI is behind.
func (m *Model) Status(text string) {
	select {
	case m.events <- statusMsg(text):
	case <-m.closed:
	default:
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// send brings a message to the model, in order, waiting for room; it
// drops the message once the program has ended.
func (m *Model) send(msg tea.Msg) {
	select {
	case m.events <- msg:
	case <-m.closed:
	}
}

// next waits for the next event.
func (m *Model) next() tea.Msg {
	select {
	case msg := <-m.events:
		return msg
	case <-m.closed:
		return nil
	}
}

// Init starts waiting for events, and the one-shot question.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.next}
	if m.oneShot {
		cmds = append(cmds, m.start(Question{Text: m.opts.Question, Files: m.attached}))
		m.attached = nil
	}
	return tea.Batch(cmds...)
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
	case tea.KeyMsg:
		cmds = append(cmds, m.key(msg))
	case spinner.TickMsg:
		if m.running && m.animate {
			var cmd tea.Cmd
			m.spin, cmd = m.spin.Update(msg)
			cmds = append(cmds, cmd)
		}
	case printedMsg:
		m.printing = false
	case logMsg:
		m.print(m.t.dim.Render(m.wrap(safetext.Line(string(msg)), m.width)))
		cmds = append(cmds, m.next)
	case statusMsg:
		if m.running {
			m.status = safetext.Line(string(msg))
		}
		cmds = append(cmds, m.next)
	case doneMsg:
		m.done(msg.err)
		cmds = append(cmds, m.next)
	case agent.StepEvent, agent.DeltaEvent, agent.ToolCallEvent, agent.ToolResultEvent, agent.FinishEvent:
		m.observe(msg)
		cmds = append(cmds, m.next) // the run's next event
	}
	if m.bannerDue && (m.height > 0 || m.running) {
		m.banner()
	}
	cmds = append(cmds, m.flush())
	return m, tea.Batch(cmds...)
}

// observe shows one of the run's events.
func (m *Model) observe(e tea.Msg) {
	m.status = "" // the run moved on
	switch e := e.(type) {
	case agent.StepEvent:
		m.stepStarted(e)
	case agent.DeltaEvent:
		m.answerDelta(e)
	case agent.ToolCallEvent:
		m.toolCallStarted(e)
	case agent.ToolResultEvent:
		m.toolCallFinished(e)
	case agent.FinishEvent:
		m.finished(e)
	}
}

// resize re-flows the live area to a new terminal size.
func (m *Model) resize(w, h int) {
	if w <= 0 {
		return
	}
	m.width, m.height = w, h
	m.ed.setWidth(w)
	if h > 0 {
		m.ed.setMaxRows(h / 2)
	}
}

// markdown returns the renderers for the current width.
func (m *Model) markdown() (answer, code *markdown) {
	if m.answerMD == nil || m.answerMD.width != m.width {
		m.answerMD = newMarkdown(m.width, m.opts.Profile, answerStyle(m.opts.Dark))
		m.codeMD = newMarkdown(codeWrap, m.opts.Profile, codeStyle(m.opts.Dark))
	}
	return m.answerMD, m.codeMD
}

// key handles a key.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	m.flash = ""
	if m.quitting {
		return nil
	}
	switch k.String() {
	case "ctrl+c":
		switch {
		case m.running && m.stopping:
			// A second Ctrl+C while the answer stops: leave now.
			if m.oneShot {
				m.err = ErrStopped
			}
			return m.quit()
		case m.running:
			m.stop()
		case !m.ed.empty():
			m.ed.reset()
		default:
			return m.quit()
		}
		return nil
	case "esc":
		if m.running {
			m.stop()
		}
		return nil
	case "ctrl+z":
		return tea.Suspend
	}
	if m.oneShot {
		return nil
	}
	switch k.String() {
	case "ctrl+d":
		if !m.ed.empty() {
			break
		}
		if m.running {
			m.leaving = true
			m.stop()
			return nil
		}
		return m.quit()
	case "enter":
		return m.submit()
	case "up", "ctrl+p":
		if m.ed.atTop() && m.ed.older() {
			return nil
		}
	case "down", "ctrl+n":
		if m.ed.atBottom() && m.ed.newer() {
			return nil
		}
	}
	if k.Paste {
		if m.ed.paste(string(k.Runes)) {
			m.flash = fmt.Sprintf("the editor holds %d lines: attach a larger text with /file PATH", maxEditorLines)
		}
		return nil
	}
	return m.ed.update(k)
}

// submit sends what the editor holds: a question or a command.
func (m *Model) submit() tea.Cmd {
	text := m.ed.value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	trimmed := strings.TrimSpace(text)
	switch trimmed {
	case "exit", "quit", "/exit", "/quit":
		m.ed.reset()
		return m.quit()
	}
	if strings.HasPrefix(trimmed, "/") && !strings.Contains(trimmed, "\n") {
		m.remember(trimmed)
		m.ed.reset()
		m.echo(trimmed) // the transcript shows what its output answers
		m.command(trimmed)
		return nil
	}
	if m.running {
		m.flash = "an answer is still coming: Esc stops it"
		return nil
	}
	m.remember(text)
	m.ed.reset()
	m.echo(text)
	q := Question{Text: text, Files: m.attached}
	m.attached = nil
	return m.start(q)
}

// remember adds an entry to the history.
func (m *Model) remember(s string) {
	m.ed.remember(s)
	if m.opts.History != nil {
		if err := m.opts.History.Add(s); err != nil {
			m.print(m.t.yellow.Render(m.wrap(safetext.Line(err.Error()), m.width)))
		}
	}
}

// echo prints the question into the transcript.
func (m *Model) echo(text string) {
	const maxLines = 12
	lines := strings.Split(strings.TrimRight(safetext.Text(text), "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == maxLines {
			fmt.Fprintf(&b, "\n  %s", m.t.dim.Render(fmt.Sprintf("… %d more lines", len(lines)-maxLines)))
			break
		}
		lead := "  "
		if i == 0 {
			lead = m.t.promptStyle.Render("❯") + " "
		} else {
			b.WriteByte('\n')
		}
		w := strings.Split(m.wrap(l, m.width-promptWidth), "\n")
		b.WriteString(lead + strings.Join(w, "\n  "))
	}
	m.section(b.String())
}

// start asks q.
func (m *Model) start(q Question) tea.Cmd {
	ctx, cancel := context.WithCancel(m.base)
	now := m.now()
	m.running, m.stopping, m.err = true, false, nil
	m.cancel = cancel
	m.runStart, m.phase, m.phaseStart = now, "Thinking", now
	m.answer, m.tool = "", nil
	done := make(chan struct{})
	m.runDone = done
	ask, send, obs := m.opts.Ask, m.send, m.Observer()
	run := func() tea.Msg {
		defer close(done)
		err := ask(ctx, q, obs)
		cancel()
		send(doneMsg{err})
		return nil
	}
	if !m.animate {
		return run
	}
	return tea.Batch(run, m.spin.Tick)
}

// stop cancels the answer.
func (m *Model) stop() {
	if !m.stopping {
		m.stopping = true
		m.phase, m.phaseStart = "Stopping", m.now()
		m.cancel()
	}
}

// done ends a run.
func (m *Model) done(err error) {
	m.status = ""
	m.flushAnswer(true)
	if m.tool != nil { // its end never came
		m.print(cardBottom(m.t, m.width, agent.ToolResultEvent{ToolCallEvent: *m.tool, Err: context.Canceled, Duration: m.now().Sub(m.toolStart)}, nil))
		m.tool = nil
	}
	switch {
	case m.stopping && (err == nil || errors.Is(err, context.Canceled)):
		m.section(m.t.yellow.Render("■ stopped") + m.t.dim.Render(" · the conversation goes on from the last answer"))
		if m.oneShot {
			m.err = ErrStopped
		}
	case err != nil:
		m.section(m.t.red.Render(m.wrap("error: "+safetext.Text(err.Error()), m.width)))
		if m.oneShot {
			m.err = err // in a chat, the next question goes on
		}
	}
	m.running, m.stopping, m.cancel = false, false, nil
	if m.oneShot || m.leaving {
		m.quitting = true
	}
}

func (m *Model) stepStarted(e agent.StepEvent) {
	if e.Retry > 0 {
		m.answer = "" // the step's text so far is discarded
		m.section(m.t.yellow.Render(m.wrap("[the connection broke off; asking again — the text of this step above is discarded]", m.width)))
	}
	m.flushAnswer(true)
	if !m.stopping {
		m.phase, m.phaseStart = "Thinking", m.now()
	}
}

func (m *Model) answerDelta(e agent.DeltaEvent) {
	m.answer += e.Text
	if !m.stopping && m.phase != "Writing" {
		m.phase, m.phaseStart = "Writing", m.now()
	}
	m.flushAnswer(false)
}

// flushAnswer prints the streamed text's whole blocks, or all of it.
func (m *Model) flushAnswer(all bool) {
	n := len(m.answer)
	if !all {
		n = completeBlocks(m.answer)
	}
	if strings.TrimSpace(m.answer[:n]) != "" {
		md, _ := m.markdown()
		if out := md.render(m.answer[:n]); out != "" {
			m.section(out)
		}
	}
	m.answer = m.answer[n:]
}

func (m *Model) toolCallStarted(e agent.ToolCallEvent) {
	m.flushAnswer(true)
	_, code := m.markdown()
	m.section(cardTop(m.t, code, m.width, e))
	m.tool = &e
	if !m.stopping {
		m.phase = "Running Python"
		if e.Call.Name != agent.ExecuteCodeName {
			m.phase = "Running " + safetext.Line(e.Call.Name)
		}
	}
	m.phaseStart, m.toolStart = m.now(), m.now()
}

func (m *Model) toolCallFinished(e agent.ToolResultEvent) {
	var files []savedFile
	if res := e.Sandbox; res != nil {
		for _, f := range res.Files {
			sf := savedFile{name: safetext.Line(f.Name), size: int64(len(f.Data))}
			if m.opts.SaveFile != nil {
				p, err := m.opts.SaveFile(f)
				if p == "" && err == nil {
					continue // not to be listed
				}
				sf.path, sf.err = safetext.Line(p), err
			}
			files = append(files, sf)
		}
	}
	if m.tool == nil { // its start was not seen
		_, code := m.markdown()
		m.section(cardTop(m.t, code, m.width, e.ToolCallEvent))
	}
	m.print(cardBottom(m.t, m.width, e, files))
	m.tool = nil
	if !m.stopping {
		m.phase, m.phaseStart = "Thinking", m.now()
	}
}

func (m *Model) finished(e agent.FinishEvent) {
	m.flushAnswer(true)
	note := ""
	switch e.Stop {
	case agent.StopStepLimit:
		note = fmt.Sprintf("[stopped after %d steps without a final answer; SANDPIPER_MAX_STEPS allows more]", e.Steps)
	case agent.StopLength:
		note = "[the answer was cut off by the model's output token limit (SANDPIPER_MODEL_MAX_TOKENS)]"
	case agent.StopRefused:
		note = "[the model declined to answer]"
	case agent.StopAnswered:
		if strings.TrimSpace(e.Answer) == "" {
			note = "[the model ended without an answer]"
		}
	case agent.StopError, agent.StopCanceled:
		return // done reports it
	}
	if note != "" {
		m.section(m.t.yellow.Render(m.wrap(note, m.width)))
	}
	steps := "1 step"
	if e.Steps != 1 {
		steps = fmt.Sprintf("%d steps", e.Steps)
	}
	parts := []string{steps}
	if e.Usage.Total() > 0 { // some servers do not report usage
		parts = append(parts, fmt.Sprintf("%s tokens in, %s out", count(e.Usage.InputTokens), count(e.Usage.OutputTokens)))
	}
	parts = append(parts, formatDuration(m.now().Sub(m.runStart)))
	if e.Model != "" {
		parts = append(parts, safetext.Line(e.Model))
	}
	m.section(m.t.dim.Render(m.wrap("  "+strings.Join(parts, " · "), m.width)))
}

// count formats n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// banner prints the chat's first line: one line, cut to the terminal's
// width (/help shows it whole).
func (m *Model) banner() {
	m.bannerDue = false
	line := m.t.bold.Render("Sandpiper")
	if m.opts.Banner != "" {
		line += m.t.dim.Render(" · " + safetext.Line(m.opts.Banner))
	}
	m.print(xansi.Truncate(line, max(m.width, 10), "…"))
}

// command runs a slash command.
func (m *Model) command(line string) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help", "/?":
		m.section(m.help())
	case "/new":
		switch {
		case m.opts.Reset == nil:
			m.notice("this front end cannot start a new conversation")
		case m.running:
			m.notice("an answer is still coming: Esc stops it")
		default:
			m.opts.Reset()
			m.attached = nil
			m.section(m.t.dim.Render(m.rule("new conversation")))
		}
	case "/debug":
		if m.opts.SetDebug == nil {
			m.notice("this front end has no execution log")
			return
		}
		m.debug = !m.debug
		m.opts.SetDebug(m.debug)
		if m.debug {
			m.print(m.t.dim.Render("execution logging on: each run's code and output are logged"))
		} else {
			m.print(m.t.dim.Render("execution logging off"))
		}
	case "/file":
		m.attach(arg)
	default:
		m.notice(fmt.Sprintf("%s is not a command; /help lists them", safetext.Line(name)))
	}
}

// attach attaches the file at path to the next question.
func (m *Model) attach(path string) {
	if len(path) >= 2 && (path[0] == '"' || path[0] == '\'') && path[len(path)-1] == path[0] {
		path = path[1 : len(path)-1]
	}
	if path == "" {
		m.notice("/file needs a path: /file data.csv")
		return
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, rest)
		}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		m.notice(safetext.Line(err.Error()))
		return
	case !fi.Mode().IsRegular():
		m.notice(safetext.Line(path) + " is not a regular file")
		return
	}
	m.attached = append(m.attached, path)
	m.print(m.t.dim.Render(m.wrap(fmt.Sprintf("attached %s (%s): it goes with your next question", safetext.Line(filepath.Base(path)), sandbox.FormatSize(fi.Size())), m.width)))
}

// notice prints a short warning.
func (m *Model) notice(s string) { m.print(m.t.yellow.Render(m.wrap(s, m.width))) }

// help is the text of /help.
func (m *Model) help() string {
	k := func(keys, what string) string { return "  " + m.t.bold.Render(fmt.Sprintf("%-20s", keys)) + what }
	lines := []string{
		m.t.bold.Render("Keys"),
		k("Enter", "send"),
		k("Alt+Enter, Ctrl+J", "new line (a paste stays one message)"),
		k("↑ ↓", "walk the history, from the first or last line"),
		k("Ctrl+C, Esc", "stop the answer; Ctrl+C also clears the line"),
		k("Ctrl+D, Ctrl+C", "leave, at an empty prompt"),
		k("Ctrl+W, Ctrl+U", "delete a word, the line before the cursor"),
		k("Ctrl+K", "delete the line after the cursor"),
		k("Alt+←/→, Ctrl+←/→", "jump a word; Home, End: the line's ends"),
		"",
		m.t.bold.Render("Commands"),
		k("/file PATH", "attach a file to the next question"),
		k("/new", "start a new conversation"),
		k("/debug", "log each run's code and output (on/off)"),
		k("/help", "this help"),
		k("/exit", "leave (so do exit and quit)"),
	}
	if m.opts.Banner != "" {
		lines = append(lines, "", m.t.bold.Render("Model and sandbox"), "  "+safetext.Line(m.opts.Banner))
	}
	return m.wrap(strings.Join(lines, "\n"), m.width)
}

// rule is a dim line with a label in the middle.
func (m *Model) rule(label string) string {
	w := min(m.width, maxCardWidth)
	side := max((w-lipgloss.Width(label)-2)/2, 3)
	return strings.Repeat("─", side) + " " + label + " " + strings.Repeat("─", side)
}

// wrap wraps s to width columns, at spaces where it can.
func (m *Model) wrap(s string, width int) string {
	return xansi.Wrap(s, max(width, 10), "")
}

// print queues s to be printed above the live area.
func (m *Model) print(s string) { m.outbox = append(m.outbox, s) }

// section prints s after a blank line.
func (m *Model) section(s string) { m.outbox = append(m.outbox, "", s) }

// flush sends what was queued to print, once the last print has reached
// the renderer, so prints keep their order; then it quits, if asked to.
func (m *Model) flush() tea.Cmd {
	if m.printing {
		return nil
	}
	if len(m.outbox) == 0 {
		if m.quitting {
			m.closeOnce.Do(func() { close(m.closed) })
			return tea.Quit
		}
		return nil
	}
	s := strings.Join(m.outbox, "\n")
	m.outbox = nil
	m.printing = true
	return tea.Sequence(tea.Println(s), func() tea.Msg { return printedMsg{} })
}

// quit leaves once what is queued is printed; a running answer is
// stopped.
func (m *Model) quit() tea.Cmd {
	if m.running {
		m.stop()
	}
	m.quitting = true
	return nil
}

// View is the live area: the answer being written, the running card or
// a spinner, and the editor.
func (m *Model) View() string {
	if m.quitting {
		return ""
	}
	var parts []string
	if strings.TrimSpace(m.answer) != "" {
		parts = append(parts, "", m.liveAnswer())
	}
	if m.running {
		spin := m.spin.View()
		elapsed := m.now().Sub(m.phaseStart)
		if m.tool != nil && !m.stopping {
			parts = append(parts, cardRunning(m.t, m.width, spin, elapsed))
		} else {
			line := spin + " " + m.phase + "… " + m.t.dim.Render(formatDuration(elapsed))
			if m.status != "" {
				line += m.t.dim.Render(" · " + m.status)
			}
			parts = append(parts, "", m.wrap(line, m.width))
		}
	}
	if m.oneShot {
		if m.running {
			parts = append(parts, m.t.dim.Render("esc stops"))
		}
		return strings.Join(parts, "\n")
	}
	if len(m.attached) > 0 {
		names := make([]string, len(m.attached))
		for i, p := range m.attached {
			names[i] = safetext.Line(filepath.Base(p))
		}
		parts = append(parts, "", m.t.dim.Render(xansi.Truncate("attached: "+strings.Join(names, ", "), m.width, "…")))
	}
	parts = append(parts, "", strings.TrimRight(m.ed.view(), "\n"))
	hint := "enter send · alt+enter new line · ↑ history · ctrl+d leave · /help"
	switch {
	case m.flash != "":
		hint = m.t.yellow.Render(xansi.Truncate(m.flash, m.width, "…"))
	case m.running:
		hint = m.t.dim.Render("esc or ctrl+c stops the answer")
	default:
		hint = m.t.dim.Render(xansi.Truncate(hint, m.width, "…"))
	}
	parts = append(parts, hint)
	return strings.Join(parts, "\n")
}

// liveAnswer renders the text being written, at the current width.
func (m *Model) liveAnswer() string {
	if m.live.text != m.answer || m.live.width != m.width {
		md, _ := m.markdown()
		m.live.text, m.live.width, m.live.out = m.answer, m.width, md.render(m.answer)
	}
	return m.live.out
}
