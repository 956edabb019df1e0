package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// runExec is `sandpiper exec`: run Python once in the configured sandbox,
// print its stdout and stderr, and exit with its exit code (124 on timeout,
// 137 when killed for memory).
func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sandpiper exec [-v] [-c CODE]   (code on standard input without -c)")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "Exits with the program's exit code: 124 on timeout, 137 when killed for memory, 152 at the CPU-time limit.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sandpiper: exec: unexpected argument %q (the code goes after -c, in quotes)\n", fs.Arg(0))
		fs.SetOutput(stderr)
		fs.Usage()
		return 2
	}
	if *code == "" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "sandpiper: read code: %v\n", err)
			return 1
		}
		*code = string(b)
	}
	lookup, _, err := envLookuper(".")
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	cfg, err := loadSandboxConfig(ctx, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 2
	}
	cfg.Preload = "" // one run: nothing to warm
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	sb, err := newSandbox(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %v\n", err)
		return 1
	}
	defer sb.Close()
	if *verbose {
		l := cfg.limits().WithDefaults()
		fmt.Fprintf(stderr, "sandpiper: limits: %s wall time, %s CPU time, %g CPUs, %s memory, %d processes, %d open files, %s of files, %s of output per stream\n",
			l.Timeout, l.CPUTime, l.CPUs, formatSize(l.Memory), l.Processes, l.OpenFiles, formatSize(l.DiskSize), formatSize(l.Output))
	}
	res, err := sb.Run(ctx, sandbox.Request{Code: *code})
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: %s\n", safetext.Text(err.Error()))
		return 1
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
	switch res.Limit {
	case sandbox.LimitTimeout:
		fmt.Fprintf(stderr, "sandpiper: timed out after %s\n", cfg.Timeout)
	case sandbox.LimitMemory:
		fmt.Fprintf(stderr, "sandpiper: killed: memory limit of %d MiB reached\n", int64(cfg.Memory)>>20)
	case sandbox.LimitNone:
	case sandbox.LimitCPU:
		fmt.Fprintf(stderr, "sandpiper: killed: CPU-time limit of %s reached\n", cfg.CPUTime)
	case sandbox.LimitProcesses:
		fmt.Fprintf(stderr, "sandpiper: the limit of %d processes was reached\n", cfg.Processes)
	case sandbox.LimitDisk:
		fmt.Fprintf(stderr, "sandpiper: a write reached the %s limit on files\n", formatSize(int64(cfg.Disk)))
	default:
		fmt.Fprintf(stderr, "sandpiper: %s limit reached\n", safetext.Line(string(res.Limit)))
	}
	if *verbose {
		fmt.Fprintf(stderr, "sandpiper: exit %d in %s\n", res.ExitCode, res.Duration.Round(time.Millisecond))
	}
	switch {
	case res.TimedOut:
		return 124
	case res.OutOfMemory:
		return 137
	}
	return res.ExitCode
}
