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
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	// The first signal starts a graceful stop; a second one ends the
	// process at once, as without a handler.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runBot(ctx, args, stdout, stderr)
	case "ask":
		return runAsk(ctx, args, stdin, stdout, stderr)
	case "doctor":
		return runDoctor(ctx, args, stdout, stderr)
	case "exec":
		return runExec(ctx, args, stdin, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, args, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "sandpiper: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

const usage = `Usage:
  sandpiper [run]           connect to Slack and answer questions
  sandpiper ask [QUESTION]  ask once, or chat in the terminal without a question
  sandpiper exec [-c CODE]  run Python once in the configured sandbox (code on stdin without -c)
  sandpiper doctor          check the configuration and print what to fix
  sandpiper healthcheck     exit 0 when the running bot's /healthz is OK (for containers)

Configuration comes from the environment (and .env.local, .env); see README.md.
`
