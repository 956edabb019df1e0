package main

import (
	"github.com/sethvargo/go-envconfig"

	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/chat"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

const askUsage = `usage: sandpiper ask [--debug] [--plain] [--file PATH]... [--out DIR] [QUESTION]

Asks the model once and shows each Python run and the answer. Without a
question, opens a chat that keeps the conversation. On a terminal, answers
are rendered Markdown and runs are framed cards, and the chat has an editor:
Enter sends, Alt+Enter adds a line, Up and Down walk the history, Ctrl+C or
Esc stops an answer, Ctrl+D leaves; /help lists the rest. Through a pipe,
with TERM=dumb or with --plain, the output is plain text.

  --debug       also log every run's code and raw sandbox output (SANDPIPER_DEBUG=true)
  --plain       plain text, even on a terminal
  --file PATH   put the file in the sandbox's working directory, /mnt/data (repeatable)
  --out DIR     save the files the program writes there (default ./sandpiper-output)
`

// defaultOutDir is where ask saves the files the program writes.
const defaultOutDir = "sandpiper-output"

// askFlags are ask's arguments.
type askFlags struct {
	debug    bool
	plain    bool
	paths    []string // --file
	outDir   string
	question string
}

// parseAskFlags reads ask's arguments. --file and --out count also after
// the question (ask "plot it" --file d.csv); "--" makes the rest question
// text. help is set for -h.
func parseAskFlags(args []string) (f askFlags, help bool, err error) {
	f.outDir = defaultOutDir
	var words []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--debug" || a == "-debug":
			f.debug = true
		case a == "--plain" || a == "-plain":
			f.plain = true
		case a == "--file" || a == "-file" || a == "--out" || a == "-out":
			if i+1 >= len(args) {
				return f, false, cli.UsageError(fmt.Errorf("ask: %s needs a value", a), askUsage)
			}
			i++
			if strings.HasSuffix(a, "file") {
				f.paths = append(f.paths, args[i])
			} else {
				f.outDir = args[i]
			}
		case strings.HasPrefix(a, "--file=") || strings.HasPrefix(a, "-file="):
			f.paths = append(f.paths, a[strings.IndexByte(a, '=')+1:])
		case strings.HasPrefix(a, "--out=") || strings.HasPrefix(a, "-out="):
			f.outDir = a[strings.IndexByte(a, '=')+1:]
		case a == "-h" || a == "-help" || a == "--help":
			return f, true, nil
		case a == "--":
			words = append(words, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1 && len(words) == 0:
			return f, false, cli.UsageError(fmt.Errorf("ask: unknown flag %s", a), askUsage)
		default:
			words = append(words, a)
		}
	}
	f.question = strings.TrimSpace(strings.Join(words, " "))
	return f, false, nil
}

// runAsk is `sandpiper ask`: one question, or a chat without one, in the
// terminal front end (package chat).
func runAsk(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags, help, err := parseAskFlags(args)
	if help || err != nil {
		if help {
			fmt.Fprint(stdout, askUsage)
		}
		return err
	}
	lookup, c, err := cli.Load(ctx, loadAsk)
	if err != nil {
		return err
	}
	inputs, err := chat.ReadFiles(flags.paths, c.Files)
	if err != nil {
		return cli.ConfigError(fmt.Errorf("ask: %w", err))
	}
	if useTUI(flags.plain, lookup, stdin, stdout) {
		return askTUI(ctx, flags, lookup, c, inputs, stdin, stdout, stderr)
	}
	var files []sandbox.File
	for _, f := range inputs {
		files = append(files, f.File)
	}

	// NO_COLOR counts when it is not empty, as no-color.org (and the
	// terminal UI's termenv) has it.
	noColor, _ := lookup.Lookup("NO_COLOR")
	term, _ := lookup.Lookup("TERM")
	ui := chat.New(stdout, stderr, chat.Options{NoColor: noColor != "", Term: term, OutDir: flags.outDir})
	defer ui.StopSpinner()
	log := terminalLog(ui.LogWriter(), askLevel(flags, c, lookup))
	a, rt, sb, sources, err := startShown(ctx, ui, c, flags.question == "", log)
	if err != nil {
		return err
	}
	defer sb.Close()
	defer sources.Close()
	warnStart(stderr, c, rt, sb)
	ui.SetSources(sources.Names(), terminalUser(lookup)) // the terminal may query every source
	// The runs share a workspace: the --file files, and what each run
	// writes, for the runs after it (in a chat, also the next questions').
	ws := agent.NewMemWorkspace(files, c.Files.RunSize+sb.Info().Limits.DiskSize)

	if flags.question == "" {
		ui.Chat(ctx, a, ws, a.Model.ID()+" · "+rt.String(), stdin)
		return nil
	}
	question := flags.question
	desc, caps := agent.DescribeFiles(ctx, inputs, nil)
	if len(caps) > 0 {
		log.Warn("a file's preview stopped at its budget", "caps", caps)
	}
	if desc != "" {
		question += "\n\n" + desc
	}
	out, err := a.Run(ctx, []agent.Message{agent.UserMessage(question)}, agent.RunOptions{Workspace: ws, Observer: ui, Sources: sources.Names(), User: terminalUser(lookup), Channel: "terminal"})
	switch {
	case ctx.Err() != nil:
		return &cli.ExitError{Code: cli.ExitInterrupted, Err: errors.New("interrupted")}
	case err != nil:
		return err
	case out.Stop == agent.StopStepLimit:
		return cli.Exit(1) // the UI said so
	}
	return nil
}

// loadAsk reads what ask reads: the agent's settings and, for the log,
// SANDPIPER_LOG_LEVEL; errors name every setting to fix.
func loadAsk(ctx context.Context, lookup envconfig.Lookuper) (agentconfig.Agent, error) {
	c, err := agentconfig.Load(ctx, lookup)
	_, level := config.LogLevel(lookup, slog.LevelWarn)
	return c, config.Join(level, err)
}

// askLevel is the level of ask's log: debug with --debug or
// SANDPIPER_DEBUG, else SANDPIPER_LOG_LEVEL's, warn by default (the
// terminal shows warnings and errors only).
func askLevel(flags askFlags, c agentconfig.Agent, lookup envconfig.Lookuper) slog.Level {
	if flags.debug || bool(c.Model.Debug) {
		return slog.LevelDebug
	}
	level, _ := config.LogLevel(lookup, slog.LevelWarn) // checked by loadAsk
	return level
}

// terminalLog is the log of a terminal session, at level, to w: no
// timestamps.
func terminalLog(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// startShown starts the agent and its sandbox (see start) while ui shows
// a spinner; a chat runs many programs, so its sandbox prepares caches.
// Interrupted, it says so with the exit code.
func startShown(ctx context.Context, ui *chat.UI, c agentconfig.Agent, chatting bool, log *slog.Logger) (*agent.Agent, agent.Runtime, config.Runner, *datasource.Set, error) {
	ui.Spin("Starting the sandbox")
	defer ui.StopSpinner()
	c.Sandbox.LongLived = chatting
	a, rt, sb, sources, err := start(ctx, c, log)
	if err != nil && ctx.Err() != nil {
		return nil, rt, nil, nil, cli.Exit(cli.ExitInterrupted)
	}
	return a, rt, sb, sources, err
}

// warnStart says, once, in words, what may make the answers fail: a
// default model id sent to a server on this machine, which may not have
// it, and data modules the sandbox's Python lacks.
func warnStart(w io.Writer, c agentconfig.Agent, rt agent.Runtime, sb config.Runner) {
	if note := c.Model.ModelNote(); note != "" {
		fmt.Fprintf(w, "sandpiper: %s.\n", note)
	}
	warnDataStack(w, rt, sb)
}

// warnDataStack says, once, in words, when the sandbox's Python lacks
// modules that data questions need (when the modules could be listed).
func warnDataStack(w io.Writer, rt agent.Runtime, sb config.Runner) {
	missing := rt.Missing(config.DataModules...)
	if rt.Python == "" || len(missing) == 0 {
		return
	}
	python := "the sandbox's Python"
	if py, ok := sb.(interface{ Python() local.Python }); ok {
		python += " (" + py.Python().Executable + ")"
	}
	fmt.Fprintf(w, "sandpiper: %s lacks %s, so questions about data, files and charts may fail. Install them for it, or set SANDPIPER_PYTHON to a Python that has them: sandpiper doctor looks for one.\n",
		python, strings.Join(missing, ", "))
}

// terminalUser names who asks in the terminal, for the queries' audit
// log: $USER, or "terminal".
func terminalUser(lookup envconfig.Lookuper) string {
	if u, ok := lookup.Lookup("USER"); ok && u != "" {
		return u
	}
	return "terminal"
}
