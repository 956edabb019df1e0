// Command sandpiper is a Slack bot that answers math and data questions by
// running model-written Python in a fresh sandbox per run.
//
// Usage:
//
//	sandpiper [run]          connect to Slack and answer questions
//	sandpiper ask [QUESTION] ask once, or chat in the terminal
//	sandpiper exec [-c CODE] run Python once in the configured sandbox
//	sandpiper doctor         check the configuration
//	sandpiper healthcheck    exit 0 when the running bot is healthy
//
// This package reads the flags and the configuration and wires the
// packages together: bot (the Slack front end), internal/chat (the
// terminal one), agent and its model providers, and the sandbox backends.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/execcmd"
)

func main() {
	cli.Main(func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	})
}

// A command runs with the process's arguments (after its name) and
// standard streams. It returns nil for exit 0; any other error is printed
// once by [run], and ends the process with 1 or the [cli.ExitError]'s
// code.
type command func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

var commands = map[string]command{
	"run":         runBot,
	"ask":         runAsk,
	"doctor":      runDoctor,
	"exec":        execcmd.Exec{}.Run, // unless handed over to sandpiper-exec (exec_linux.c)
	"healthcheck": runHealthcheck,
}

// run is main without the process: it runs the command args name, prints
// its error, if any, on stderr, and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := "run"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	var err error
	switch cmd, ok := commands[name]; {
	case ok:
		err = cmd(ctx, args, stdin, stdout, stderr)
	case name == "help" || name == "-h" || name == "-help" || name == "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = cli.UsageError(fmt.Errorf("unknown command %q", name), usage)
	}
	return cli.Report(stderr, err)
}

// noArgs refuses arguments given to a command that takes none.
func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return cli.UsageError(fmt.Errorf("%s takes no arguments", cmd), usage)
	}
	return nil
}

const usage = `Usage:
  sandpiper [run]           connect to Slack and answer questions
  sandpiper ask [QUESTION]  ask once, or chat in the terminal without a question
  sandpiper exec [-c CODE]  run Python once in the configured sandbox (code on stdin without -c)
  sandpiper doctor          check the configuration and print what to fix
  sandpiper healthcheck     exit 0 when the running bot's /healthz is OK (for containers)

Configuration comes from the environment (and .env.local, .env); see README.md.
`
