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
	case len(args) == 1 && isHelp(args[0]) && helps[name] != "":
		fmt.Fprint(stdout, helps[name]) // asked for: not an error
	case ok:
		err = cmd(ctx, args, stdin, stdout, stderr)
	case name == "help" || isHelp(name):
		fmt.Fprint(stdout, usage)
	default:
		err = cli.UsageError(fmt.Errorf("unknown command %q", name), usage)
	}
	return cli.Report(stderr, err)
}

// helps are the help of the commands that take no flags, for -h; ask and
// exec print their own.
var helps = map[string]string{
	"run":         runUsage,
	"doctor":      doctorUsage,
	"healthcheck": healthcheckUsage,
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// noArgs refuses arguments given to a command that takes none.
func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return cli.UsageError(fmt.Errorf("%s takes no arguments", cmd), helps[cmd])
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

const runUsage = `usage: sandpiper [run]

Connects to Slack over Socket Mode and answers questions until SIGINT or
SIGTERM, then finishes the answers in flight and exits 0. Needs
SLACK_BOT_TOKEN, SLACK_APP_TOKEN and a model key; every setting that is
missing or wrong is named at once. sandpiper doctor checks them all.
`

const doctorUsage = `usage: sandpiper doctor

Checks the Slack tokens and scopes, the model endpoint and key, the
sandbox (its interpreter, data modules, warm runs, how memory and CPU are
bounded), the data directory, Redis and the data sources when configured,
and says what to fix. Exits 1 when a check failed.
`
