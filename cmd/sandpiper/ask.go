package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/chat"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
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
	inputs, err := chat.ReadFiles(paths, limits)
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

	_, noColor := lookup.Lookup("NO_COLOR")
	term, _ := lookup.Lookup("TERM")
	ui := chat.New(stdout, stderr, chat.Options{NoColor: noColor, Term: term, OutDir: outDir, Limits: sc.limits()})
	defer ui.StopSpinner()
	level := slog.LevelWarn
	if debug || mc.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(ui.LogWriter(), &slog.HandlerOptions{
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
	ui.Spin("Starting the sandbox")
	sc.longLived = question == "" // a chat runs many programs: prepare caches
	sb, err := newSandbox(ctx, sc, log)
	if err != nil {
		ui.StopSpinner()
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 1
	}
	defer sb.Close()
	rt, err := agent.ProbeRuntime(ctx, sb)
	ui.StopSpinner()
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
	ui.Chat(ctx, a, ws, model.ID()+" · "+rt.String(), stdin)
	return 0
}
