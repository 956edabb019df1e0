package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/muesli/termenv"
	"github.com/sethvargo/go-envconfig"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/chat"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/tui"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// useTUI reports whether ask shows the terminal UI (package tui) rather
// than plain text: stdin and stdout are both terminals, TERM is not dumb,
// and --plain was not given.
func useTUI(plain bool, lookup envconfig.Lookuper, stdin io.Reader, stdout io.Writer) bool {
	if plain {
		return false
	}
	if t, _ := lookup.Lookup("TERM"); t == "dumb" {
		return false
	}
	return isTerminal(stdin) && isTerminal(stdout)
}

// isTerminal reports whether v is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// askTUI is ask on a terminal: the chat, or one question shown the same
// way, in the terminal UI.
func askTUI(ctx context.Context, flags askFlags, lookup envconfig.Lookuper, c agentconfig.Agent, inputs []agent.InputFile, stdin io.Reader, stdout, stderr io.Writer) error {
	// The first Enter sends, even typed while the sandbox starts: see
	// keepCR.
	defer keepCR(stdin)()
	getenv := func(k string) string { v, _ := lookup.Lookup(k); return v }
	// Before the UI reads the terminal: Detect may ask it for its
	// background colour.
	profile, dark := tui.Detect(stdout, getenv)

	// The log goes to stderr until the UI shows, and above its live area
	// while it does.
	var level slog.LevelVar
	level.Set(askLevel(flags, c, lookup))
	quiet := level.Level() // after /debug off
	if quiet <= slog.LevelDebug {
		quiet = slog.LevelWarn
	}
	logw := &switchWriter{}
	logw.set(stderr)
	status := statusHandler{terminalLog(logw, &level).Handler(), new(atomic.Pointer[func(string)])}
	log := slog.New(status)
	spin := chat.New(stdout, stderr, chat.Options{NoColor: profile == termenv.Ascii, Term: getenv("TERM")})
	a, rt, sb, sources, err := startShown(ctx, spin, c, flags.question == "", log)
	if err != nil {
		return err
	}
	defer sb.Close()
	defer sources.Close()
	warnStart(stderr, c, rt, sb) // above the UI, in the scrollback

	// The runs share a workspace: the --file files, and what each run
	// writes, for the runs after it; /new starts again from the files.
	wsSize := c.Files.RunSize + sb.Info().Limits.DiskSize
	conv := &conversation{agent: a, limits: c.Files, log: log, sources: sources.Names(), user: terminalUser(lookup)}
	conv.reset(inputs, wsSize)
	opts := tui.Options{
		Ask:   conv.ask,
		Reset: func() { conv.reset(inputs, wsSize) },
		SetDebug: func(on bool) {
			if on {
				level.Set(slog.LevelDebug)
			} else {
				level.Set(quiet)
			}
		},
		Debug: level.Level() == slog.LevelDebug,
		SaveFile: func(f sandbox.File) (string, error) {
			if sandbox.HiddenPath(f.Name) {
				return "", nil
			}
			return cli.SaveOutput(flags.outDir, f)
		},
		Banner:  a.Model.ID() + " · " + rt.String(),
		Profile: profile,
		Dark:    dark,
	}
	if flags.question != "" {
		opts.Question = flags.question
		conv.first = inputs // described with the question, as plain ask does
	} else if path, err := tui.DefaultHistoryPath(getenv); err == nil {
		h, err := tui.OpenHistory(path, 0)
		if err != nil {
			log.Warn("could not read the chat's history; it starts empty", "err", err)
		}
		opts.History = h
	}
	m := tui.New(ctx, opts)
	logw.set(m.LogWriter())
	show := m.Status
	status.show.Store(&show)
	err = m.Run(stdin, stdout)
	status.show.Store(nil)
	logw.set(stderr)
	switch {
	case ctx.Err() != nil:
		return cli.Exit(cli.ExitInterrupted)
	case errors.Is(err, tui.ErrStopped):
		return cli.Exit(cli.ExitInterrupted)
	case err != nil && flags.question != "":
		return cli.Exit(1) // the UI showed it
	case err != nil:
		return err
	case flags.question != "" && conv.stop == agent.StopStepLimit:
		return cli.Exit(1) // the UI said so
	}
	return nil
}

// conversation is the chat's side of the agent: the history, and the
// workspace its runs share. Ask is called for one question at a time, on
// a goroutine of the UI's; reset, between questions.
type conversation struct {
	agent  *agent.Agent
	limits sandbox.FileLimits
	log    *slog.Logger
	// sources are the data sources the runs may query (all configured),
	// user who asks, for their audit log.
	sources []string
	user    string

	history   []agent.Message
	ws        *agent.MemWorkspace
	described string            // the workspace as last described to the model
	first     []agent.InputFile // a one-shot question's --file files, described with it
	stop      agent.StopReason  // how the last run ended
}

// reset starts a new conversation, with the --file files only.
func (cv *conversation) reset(inputs []agent.InputFile, maxSize int64) {
	var files []sandbox.File
	for _, f := range inputs {
		files = append(files, f.File)
	}
	cv.history, cv.described = nil, ""
	cv.ws = agent.NewMemWorkspace(files, maxSize)
}

// ask answers q, keeping the turn in the history when it completes: a
// failed or stopped turn is forgotten, so the conversation goes on from
// the last answer.
func (cv *conversation) ask(ctx context.Context, q tui.Question, obs agent.Observer) error {
	if len(q.Files) > 0 {
		inputs, err := chat.ReadFiles(q.Files, cv.limits)
		if err != nil {
			return err
		}
		var files []sandbox.File
		for _, f := range inputs {
			files = append(files, f.File)
		}
		dropped, err := cv.ws.Put(ctx, files)
		if err != nil {
			return err
		}
		if len(dropped) > 0 {
			return fmt.Errorf("/file: no room in the workspace for %v (SANDPIPER_FILES_MAX_TOTAL)", dropped)
		}
	}
	text := q.Text
	var files []agent.InputFile
	if cv.first != nil {
		files, cv.first = cv.first, nil
	} else {
		ls, err := cv.ws.Files(ctx)
		if err != nil {
			return err
		}
		for _, f := range ls {
			files = append(files, agent.InputFile{File: f})
		}
	}
	desc, caps := agent.DescribeFiles(ctx, files, nil)
	if len(caps) > 0 {
		cv.log.Warn("a file's preview stopped at its budget", "caps", caps)
	}
	described := cv.described
	if desc != described {
		text += "\n\n" + desc
		cv.described = desc
	}
	cv.history = append(cv.history, agent.UserMessage(text))
	out, err := cv.agent.Run(ctx, cv.history, agent.RunOptions{Workspace: cv.ws, Observer: obs, Sources: cv.sources, User: cv.user, Channel: "terminal"})
	if err != nil {
		// The model never saw the turn, nor the files as it described
		// them.
		cv.history = cv.history[:len(cv.history)-1]
		cv.described = described
		return err
	}
	cv.stop = out.Stop
	cv.history = append(cv.history, out.Messages...)
	return nil
}

// switchWriter writes to the writer last set.
type switchWriter struct{ w atomic.Pointer[io.Writer] }

func (s *switchWriter) set(w io.Writer) { s.w.Store(&w) }

func (s *switchWriter) Write(p []byte) (int, error) { return (*s.w.Load()).Write(p) }

// keepCR has the terminal in keep carriage returns as typed, from now
// until the returned function restores it. Typed before the UI takes the
// terminal (while the sandbox starts), Enter would otherwise reach the UI
// as a line feed (the terminal's ICRNL), which the editor reads as
// Ctrl+J, a new line, and the question would not be sent.
func keepCR(stdin io.Reader) (restore func()) {
	f, ok := stdin.(*os.File)
	if !ok {
		return func() {}
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil || old.Iflag&unix.ICRNL == 0 {
		return func() {}
	}
	t := *old
	t.Iflag &^= unix.ICRNL
	if unix.IoctlSetTermios(fd, unix.TCSETS, &t) != nil { // TCSETS: what was typed stays
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}

// retryMsg is the message the model's providers log before a retry.
const retryMsg = "model: retrying"

// statusHandler is the chat's log: while the UI shows (show is set), a
// retry of the model's API goes to its status line ([tui.Model.Status]),
// in words, rather than into the conversation as a log line; everything
// else, and everything before the UI shows, goes to Handler.
type statusHandler struct {
	slog.Handler
	show *atomic.Pointer[func(string)]
}

func (h statusHandler) Handle(ctx context.Context, r slog.Record) error {
	if show := h.show.Load(); show != nil && r.Message == retryMsg {
		(*show)(retryStatus(r))
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h statusHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return statusHandler{h.Handler.WithAttrs(attrs), h.show}
}

func (h statusHandler) WithGroup(name string) slog.Handler {
	return statusHandler{h.Handler.WithGroup(name), h.show}
}

// retryStatus says what a retry's record does, in words: "the model's
// API answered 429 (rate limited); retry 1 in 2s".
func retryStatus(r slog.Record) string {
	var status, try int64
	var why string
	var delay time.Duration
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "status":
			status = a.Value.Int64()
		case "retry":
			try = a.Value.Int64()
		case "err":
			why = a.Value.String()
		case "delay":
			delay = a.Value.Duration()
		}
		return true
	})
	s := "the model's API did not answer"
	if status != 0 {
		s = fmt.Sprintf("the model's API answered %d", status)
	}
	if why != "" {
		s += " (" + why + ")"
	}
	return fmt.Sprintf("%s; retry %d in %s", s, try, delay.Round(100*time.Millisecond))
}
