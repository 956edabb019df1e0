// Package execcmd is `sandpiper exec`: run Python once in the configured
// sandbox. sandpiper-exec, a binary of it alone, runs it without the
// packages of the bot, the agent and the terminal UI, whose
// initialisation would cost a one-shot run more than the sandbox does;
// sandpiper hands `sandpiper exec` over to it before the Go runtime
// starts, or runs it itself (see cmd/sandpiper/exec_linux.c).
//
// # Measured
//
// `go test ./cmd/sandpiper -run '^$' -bench Exec -benchtime 40x` times
// `sandpiper exec -c pass` as a user's shell runs it — a new process and a
// new sandbox each time, cold, with the interpreter's probe kept from the
// first run — beside bare `/usr/bin/python3 -c pass` and bubblewrap
// (`--unshare-all`, read-only binds), taking them in turn in each
// iteration; also `sandpiper` with no `sandpiper-exec` beside it (exec in
// process, as under `go run`) and `exec -h` (the two binaries' start, no
// sandbox). Same machine (2 cores, shared with other builds and tests
// while measured; the load average is given):
//
//	| (p50) | load | bare `python3 -c` | bubblewrap | `sandpiper exec` | in process | `exec -h` |
//	|---|---|---|---|---|---|---|
//	| run 1 | 1.3 | 11.2 ms | 14.4 ms | 27.9 ms (+13.4) | 44.5 ms | 3.7 ms |
//	| run 2 | 0.9 | 11.8 ms | 15.2 ms | 29.7 ms (+14.5) | 45.2 ms | 3.9 ms |
//	| run 3 | 1.0 | 12.2 ms | 15.7 ms | 32.7 ms (+17.0) | 49.9 ms | 4.3 ms |
//	| run 4 | 2.4 | 13.5 ms | 17.3 ms | 34.0 ms (+16.7) | 52.3 ms | 4.3 ms |
//
// Where an exec's time goes, measured apart on the quiet machine:
// `sandpiper` executes `sandpiper-exec` from a C constructor (0.7 ms),
// whose Go runtime and packages start in 2–3 ms (a Go hello-world: 0.6 ms;
// the whole `sandpiper` binary: 20–50 ms, most of it chroma, through
// glamour, parsing ~250 lexer definitions — what the in-process column
// pays); the configuration, `.env` files and the interpreter's probe cache
// take 0.7 ms, the sandbox 3–4 ms (cgroups, mount trees, namespaces, root;
// a zygote forked from a constructor instead of executed would save 0.5 ms
// of it, which already overlaps the configuration), then Python: 21–22 ms
// of CPU in all, against bubblewrap's 17 and bare Python's 11.4 (`perf
// stat`). In a loop of its own at a quiet moment, `sandpiper exec -c pass`
// took 22 ms (bare Python 12.6 ms, bubblewrap about 15.5). The target,
// `exec` ≤ bubblewrap + 15 ms, is met in some runs above and missed by up
// to 2 ms in others: the other builds and tests on the two cores stretch
// exec's processes (a Go one, the zygote, init) more than bubblewrap's.
// The kept plan of the previous release started the sandbox before any Go
// runtime, and was about as fast as bubblewrap (16.9 ms against 16.6 in
// one interleaved run), but it ran an earlier configuration's policy
// whenever something it did not hash changed (`OPENBLAS_CORETYPE`, the CPU
// set); every exec now makes its policy from the configuration it has.
package execcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Exit codes of exec when a limit ended the program, as timeout(1) and a
// shell report them.
const (
	exitTimedOut = 124
	exitKilled   = 137 // SIGKILL: the memory limit
)

// Exec is `sandpiper exec` as a binary links it.
type Exec struct {
	// HandBack is the sandpiper that handed the run over ([TakeHandover]),
	// or "": it runs the program when this binary does not link the
	// configured backend.
	HandBack string
}

// Run is `sandpiper exec` with args (after "exec"): run Python once in the
// configured sandbox, print its stdout and stderr, and exit with its exit
// code (124 on timeout, 137 when killed for memory); the error carries the
// exit code ([cli.Report]).
func (e Exec) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	help := false
	for _, a := range args {
		help = help || a == "-h" || a == "-help" || a == "--help"
	}
	if help {
		fs.SetOutput(stdout) // asked for: not an error
	}
	code := fs.String("c", "", "Python code to run (default: read from standard input)")
	verbose := fs.Bool("v", false, "print the sandbox's limits and the run's duration to standard error")
	outDir := fs.String("out", "", "save the files the program writes in /mnt/data under `DIR`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sandpiper exec [-v] [-out DIR] [-c CODE]   (code on standard input without -c)")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "Exits with the program's exit code: 124 on timeout, 137 when killed for memory, 152 at the CPU-time limit.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return cli.Exit(cli.ExitUsage) // the flag package said what was wrong
	}
	if fs.NArg() > 0 {
		var u strings.Builder
		fs.SetOutput(&u)
		fs.Usage()
		return cli.UsageError(fmt.Errorf("exec: unexpected argument %q: give the code after -c, in quotes, or a file on standard input: sandpiper exec < %s", fs.Arg(0), scriptName(fs.Arg(0))), u.String())
	}
	if fi, err := os.Stat(*outDir); *outDir != "" && err == nil && !fi.IsDir() {
		return cli.ConfigError(fmt.Errorf("exec: -out %s is a file; give a folder (it is made if missing)", *outDir))
	}
	if *code == "" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("read code: %w", err)
		}
		*code = string(b)
	}
	_, c, err := cli.Load(ctx, load)
	if err != nil {
		return err
	}
	cfg := c.sandbox
	// One run, in a new sandbox, and the process ends: nothing built
	// ahead, nothing warmed (exec always runs cold), no self-test (a
	// sandbox that cannot be made says why when the run fails).
	cfg.OneShot = true
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.level}))
	}
	sb, err := cfg.New(ctx, log)
	if errors.Is(err, config.ErrNotLinked) && e.HandBack != "" {
		// The code was read already: it goes back with -c.
		argv := []string{"exec", "-c", *code}
		if *verbose {
			argv = append(argv, "-v")
		}
		if *outDir != "" {
			argv = append(argv, "-out", *outDir)
		}
		handBackTo(e.HandBack, argv)
	}
	if err != nil {
		return interrupted(ctx, err)
	}
	defer sb.Close()
	info := sb.Info()
	if *verbose {
		l := info.Limits
		fmt.Fprintf(stderr, "sandpiper: limits: %s wall time, %s CPU time, %s, %s memory, %d processes, %d open files, %s of files, %s of output per stream\n",
			l.Timeout, l.CPUTime, sandbox.FormatCPUs(l.CPUs), sandbox.FormatSize(l.Memory), l.Processes, l.OpenFiles, sandbox.FormatSize(l.DiskSize), sandbox.FormatSize(l.Output))
		if py, ok := sb.(interface{ Python() local.Python }); ok {
			fmt.Fprintf(stderr, "sandpiper: python: %s (Python %s)", py.Python().Executable, py.Python().Version)
			if ls, ok := cfg.Settings().(*config.Local); ok && ls.Choice != nil {
				fmt.Fprintf(stderr, "; %s", ls.Choice.Why)
			}
			fmt.Fprintln(stderr)
		}
		for _, u := range info.Unenforced {
			fmt.Fprintf(stderr, "sandpiper: %s not enforced: %s\n", u.Field, u.Why)
		}
	}
	res, err := sb.Run(ctx, sandbox.Request{Code: *code})
	if err != nil {
		return interrupted(ctx, err)
	}
	// The program's own output is passed through untouched, as python3
	// would; the lines exec adds hold no text of the program's.
	stdout.Write(res.Stdout)
	stderr.Write(res.Stderr)
	if res.StdoutTruncated {
		fmt.Fprintf(stderr, "\nsandpiper: stdout truncated: %d of %d bytes shown\n", len(res.Stdout), res.StdoutSize)
	}
	if res.StderrTruncated {
		fmt.Fprintf(stderr, "\nsandpiper: stderr truncated: %d of %d bytes shown\n", len(res.Stderr), res.StderrSize)
	}
	saved := saveFiles(stderr, *outDir, res)
	v := res.Verdict()
	if v.Limited() || v.Kind == sandbox.VerdictGone {
		fmt.Fprintf(stderr, "sandpiper: %s\n", safetext.Line(v.Phrase))
	}
	if v.Note != "" {
		fmt.Fprintf(stderr, "sandpiper: %s\n", safetext.Line(v.Note))
	}
	if *verbose {
		fmt.Fprintf(stderr, "sandpiper: exit %d in %s\n", res.ExitCode, res.Duration.Round(time.Millisecond))
	}
	switch v.Kind {
	case sandbox.VerdictOK:
		if !saved {
			return cli.Exit(1) // saveFiles said which
		}
		return nil
	case sandbox.VerdictTimeout:
		return cli.Exit(exitTimedOut)
	case sandbox.VerdictMemory:
		return cli.Exit(exitKilled)
	}
	return cli.Exit(res.ExitCode)
}

// interrupted is err, or, after Ctrl+C (or SIGTERM), which ended the
// sandbox or the run, an exit as a shell reports an interrupted command.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cli.Exit(cli.ExitInterrupted)
	}
	return err
}

// saveFiles saves the files the program wrote under dir and says where
// each went; without a dir, it says how many there were and how to keep
// them. Hidden and cache files are left out, as ask leaves them out. It
// reports whether every file to save was saved.
func saveFiles(w io.Writer, dir string, res *sandbox.Result) bool {
	var files []sandbox.File
	for _, f := range res.Files {
		if !sandbox.HiddenPath(f.Name) {
			files = append(files, f)
		}
	}
	if dir == "" {
		if len(files) > 0 {
			names := make([]string, len(files))
			for i, f := range files {
				names[i] = safetext.Line(f.Name)
			}
			fmt.Fprintf(w, "sandpiper: the program wrote %s in /mnt/data (%s); -out DIR saves them\n",
				plural(len(files), "file"), strings.Join(names, ", "))
		}
		return true
	}
	ok := true
	for _, f := range files {
		p, err := cli.SaveOutput(dir, f)
		if err != nil {
			fmt.Fprintf(w, "sandpiper: could not save %s: %s\n", safetext.Line(f.Name), safetext.Line(err.Error()))
			ok = false
			continue
		}
		fmt.Fprintf(w, "sandpiper: saved %s (%s)\n", safetext.Line(p), sandbox.FormatSize(int64(len(f.Data))))
	}
	for _, o := range res.FilesOmitted {
		fmt.Fprintf(w, "sandpiper: not saved: %s\n", safetext.Line(o))
	}
	return ok
}

// settings are what exec reads: the sandbox's, and the log's level.
type settings struct {
	sandbox config.Sandbox
	level   slog.Level
}

// load reads exec's settings; errors name every setting to fix.
func load(ctx context.Context, lookup envconfig.Lookuper) (settings, error) {
	sb, err := config.LoadSandbox(ctx, lookup)
	level, lerr := config.LogLevel(lookup, slog.LevelInfo)
	return settings{sb, level}, config.Join(lerr, err)
}

// scriptName is arg when it names a Python file, else script.py: how to
// give a file on standard input.
func scriptName(arg string) string {
	if strings.HasSuffix(arg, ".py") && !strings.ContainsAny(arg, " '\"$;&|<>") {
		return arg
	}
	return "script.py"
}

// plural is "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
